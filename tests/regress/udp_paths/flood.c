/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * 1,000 reports drained by a recvmmsg handle.
 */

#include "udp_paths.h"

/* 1,000 reports queued on a recvmmsg handle, then drained. */
int flood_case(void) {
#ifndef __linux__
  SKIP(LINUX_ONLY);
#else
  int r;

  r = setup("127.0.0.1", UV_UDP_RECVMMSG, UV_UDP_LINUX_RECVERR, 8 << 20);
  if (r != CASE_OK)
    return r;
  CHECK_EQ(queue(0, FLOOD), 0);
  CHECK_UV(recv_start());
  r = run();
  FIGURE(", \"duplicates\": %ld, \"errqueue_recvmmsg\": %ld, "
         "\"socket_calls\": %ld}\n", P.dups, errq_mmsg_calls, socket_calls);
  CHECK(r == 0 && P.faults == 0);
  if (P.icmp != FLOOD)
    SKIP("%ld ICMP errors for %d sends: the rate limit held", P.icmp,
         FLOOD);
  CHECK(P.reports == FLOOD && P.dups == 0);
  CHECK_LE(errq_mmsg_calls, FLOOD_ERRQ_CALLS);
  CHECK_LE(socket_calls, FLOOD_SOCKET_CALLS);
  CHECK_LE(P.allocs, FLOOD_ALLOCS);
  CHECK_EQ(P.lent, 0);
  return CASE_OK;
#endif
}
