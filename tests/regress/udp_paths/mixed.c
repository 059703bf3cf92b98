/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * Reports and datagrams queued, then a stop, restart or close.
 */

#include "udp_paths.h"

/* 20 reports and 50 datagrams queued, then stop, restart or close. */
int mixed_case(int how, int mmsg) {
#ifndef __linux__
  (void) how;
  (void) mmsg;
  SKIP(LINUX_ONLY);
#else
  long lost;
  long left;
  int r;

  r = setup("127.0.0.1", mmsg ? UV_UDP_RECVMMSG : 0, UV_UDP_LINUX_RECVERR,
            4 << 20);
  if (r != CASE_OK)
    return r;
  P.act = how;
  CHECK_EQ(queue(MIXED_DATAGRAMS, MIXED_REPORTS), 0);
  CHECK_UV(recv_start());
  r = run();
  lost = msgs_read - P.reports - P.datagrams;
  left = MIXED_DATAGRAMS + P.icmp - msgs_read;
  FIGURE(", \"read\": %ld, \"lost\": %ld, \"left\": %ld, "
         "\"calls_while_stopped\": %ld, \"frees_while_stopped\": %ld, "
         "\"calls_after_close\": %ld, \"chunks_after_close\": %ld}\n",
         msgs_read, lost, left, P.calls_stopped, P.frees_stopped,
         P.calls_closed, P.chunks_closed);
  CHECK(r == 0 && P.faults == 0);
  CHECK(P.acted);
  /* Lost: at most the rest of the recvmmsg batch that the act cut. */
  CHECK_LE(lost, (mmsg ? MMSG_CHUNKS : 0));
  CHECK(how == ACT_CLOSE || left == 0);
  /* Stopped: no call but the cut batch's UV_UDP_MMSG_FREE. Closed: no
   * call but the rest of the batch and its UV_UDP_MMSG_FREE.
   */
  CHECK(how != ACT_STOP || P.calls_stopped == 0);
  CHECK(how != ACT_STOP || P.frees_stopped == mmsg);
  CHECK_EQ(P.calls_closed, 0);
  CHECK_EQ(P.lent, 0);
  return CASE_OK;
#endif
}
