/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * A handler that sends to its own socket: the budget holds.
 */

#include "udp_budget.h"

#ifndef _WIN32
/* The handler sends one more datagram to its own socket for each of the
 * first 100 it reads: 200 arrive, never more than 32 per iteration, in
 * order.
 */
static int self_feed_case(int chunks) {
  static const int want[] = { 32, 32, 32, 32, 32, 32, 8 };
  test_ctx c;
  receiver r;
  uv_udp_t sender;
  char reason[400];
  int res;

  res = start_backlog(&c, &r, &sender, AF_INET, chunks, 200, 100);
  if (res != CASE_OK)
    return res;
  r.feed_below = 100;

  if (run_and_close(&c, &sender) != CASE_OK)
    return CASE_FAIL;
  CHECK_EQ(r.received, 200);
  if (compare_log(r.log, r.nlog, want, 7, reason, sizeof(reason)))
    FAIL("%s", reason);
  return CASE_OK;
}
#endif  /* !_WIN32 */


int self_feed_recvmsg(void) {
#ifdef _WIN32
  SKIP(UNIX_ONLY_REASON);
#else
  return self_feed_case(0);
#endif
}


int self_feed_recvmmsg_20_chunks(void) {
#ifdef _WIN32
  SKIP(UNIX_ONLY_REASON);
#else
  return self_feed_case(20);
#endif
}
