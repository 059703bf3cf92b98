/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * A stop, a close or UV_ENOBUFS in the middle of a batch.
 */

#include "udp_budget.h"

#ifndef _WIN32
/* uv_udp_recv_stop() from the callback of datagram 9: in recvmmsg mode
 * one UV_UDP_MMSG_FREE for the batch it cut (upstream gives none, and the
 * buffer is lost), no other callback after it, the event delivered
 * exactly 10. Receiving again resumes after what was read: datagram 10 in
 * recvmsg mode, the first one after the interrupted batch in recvmmsg
 * mode (7-chunk batches: 0-6, 7-13, so 14), then in order to 99.
 */
static int recv_stop_case(int chunks, unsigned resume) {
  test_ctx c;
  receiver r;
  uv_udp_t sender;
  int res;

  res = start_backlog(&c, &r, &sender, AF_INET, chunks, 10 + (100 - resume),
                      100);
  if (res != CASE_OK)
    return res;
  r.stop_at = 9;
  r.resume_seq = resume;
  c.restart_after_stop = 1;

  if (run_and_close(&c, &sender) != CASE_OK)
    return CASE_FAIL;
  CHECK_EQ(r.frees_after_stop, chunks != 0);
  if (r.stop_iter >= r.nlog || r.log[r.stop_iter] != 10)
    FAIL("the iteration that stopped delivered %d datagrams, want 10",
         r.stop_iter < r.nlog ? r.log[r.stop_iter] : 0);
  CHECK_EQ(r.received, 10 + (100 - resume));
  CHECK_EQ(r.next_seq, 100);
  return CASE_OK;
}
#endif  /* !_WIN32 */


int recv_stop_mid_batch_recvmsg(void) {
#ifdef _WIN32
  SKIP(UNIX_LOOP_REASON);
#else
  return recv_stop_case(0, 10);
#endif
}


int recv_stop_mid_batch_recvmmsg_7_chunks(void) {
#ifdef _WIN32
  SKIP(UNIX_LOOP_REASON);
#else
  return recv_stop_case(7, 14);
#endif
}


#ifndef _WIN32
/* uv_close() from the callback of datagram 9: nothing is read after it
 * (no alloc_cb). In recvmmsg mode the rest of the batch that was already
 * read (7-13) is still handed over, then UV_UDP_MMSG_FREE once, as in
 * v1.50.0; nothing beyond the batch.
 */
static int close_case(int chunks) {
  test_ctx c;
  receiver r;
  uv_udp_t sender;
  int res;

  res = start_backlog(&c, &r, &sender, AF_INET, chunks, 100, 100);
  if (res != CASE_OK)
    return res;
  r.close_at = 9;

  if (run_and_close(&c, &sender) != CASE_OK)
    return CASE_FAIL;
  if (!r.closed || r.close_cb_called != 1)
    FAIL("closed %d, close_cb called %d times", r.closed, r.close_cb_called);
  CHECK_EQ(r.allocs_after_close, 0);
  if (chunks == 0 && r.dgrams_after_close != 0)
    FAIL("%d datagrams after uv_close", r.dgrams_after_close);
  if (r.dgrams_after_close != 0 && r.max_seq_after_close > 13)
    FAIL("datagram %u after uv_close, beyond the batch already read",
         r.max_seq_after_close);
  if (chunks != 0 && r.mmsg_frees != 2)
    FAIL("UV_UDP_MMSG_FREE %d times for 2 batches", r.mmsg_frees);
  CHECK_EQ(r.nlog, 1);
  return CASE_OK;
}
#endif  /* !_WIN32 */


int close_mid_batch_recvmsg(void) {
#ifdef _WIN32
  SKIP(UNIX_LOOP_REASON);
#else
  return close_case(0);
#endif
}


int close_mid_batch_recvmmsg_7_chunks(void) {
#ifdef _WIN32
  SKIP(UNIX_LOOP_REASON);
#else
  return close_case(7);
#endif
}


#ifndef _WIN32
/* alloc_cb returns an empty buffer on its nth call: UV_ENOBUFS ends the
 * event at once (10 datagrams in recvmsg mode, two 7-chunk batches in
 * recvmmsg mode) and the next iterations deliver the rest, none lost.
 */
static int enobufs_case(int chunks, int nth, int first) {
  test_ctx c;
  receiver r;
  uv_udp_t sender;
  int res;

  res = start_backlog(&c, &r, &sender, AF_INET, chunks, 100, 100);
  if (res != CASE_OK)
    return res;
  r.nobufs_alloc = nth;

  if (run_and_close(&c, &sender) != CASE_OK)
    return CASE_FAIL;
  CHECK_EQ(r.enobufs, 1);
  CHECK_EQ(r.cbs_after_enobufs, 0);
  if (r.nlog < 1 || r.log[0] != first)
    FAIL("first iteration delivered %d datagrams, want %d",
         r.nlog < 1 ? 0 : r.log[0], first);
  CHECK_EQ(r.received, 100);
  return CASE_OK;
}
#endif  /* !_WIN32 */


int enobufs_mid_batch_recvmsg(void) {
#ifdef _WIN32
  SKIP(UNIX_LOOP_REASON);
#else
  return enobufs_case(0, 11, 10);
#endif
}


int enobufs_mid_batch_recvmmsg_7_chunks(void) {
#ifdef _WIN32
  SKIP(UNIX_LOOP_REASON);
#else
  return enobufs_case(7, 3, 14);
#endif
}
