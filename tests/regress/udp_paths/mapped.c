/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * A dual-stack handle connected to a v4-mapped peer.
 */

#include "udp_paths.h"

#ifdef __linux__
/* Ends the run once the prober sent everything and each ICMP error came
 * back as its plain error, however late the load makes them.
 */
static void on_mapped_end(uv_timer_t* timer) {
  int busy;

  busy = P.probe->sent < MAPPED_SENDS || P.plain < MAPPED_SENDS;
  if (!settle_more(timer, on_mapped_end, &P.waits, busy))
    on_end(timer);
}
#endif

/* A dual-stack handle with IPV6_RECVERR only, connected to a v4 peer. */
int mapped_case(void) {
#ifndef __linux__
  SKIP(LINUX_ONLY);
#else
  struct sockaddr_in6 mapped;
  struct sockaddr_in closed;
  socklen_t len;
  pid_t pid;
  int v6only;
  int r;

  if ((r = setup("::", 0, UV_UDP_LINUX_RECVERR, 1 << 20)) != CASE_OK)
    return r;
  len = sizeof(v6only);
  CHECK_EQ(getsockopt(P.fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &len), 0);
  CHECK_EQ(v6only, 0);
  CHECK_EQ(closed_port(AF_INET, &closed), 0);
  CHECK_UV(uv_ip6_addr("::ffff:127.0.0.1", ntohs(closed.sin_port),
                       &mapped));
  CHECK_UV(uv_udp_connect(&P.udp, (const struct sockaddr*) &mapped));
  CHECK_UV(recv_start());
  CHECK_GT((pid = start_prober(PACE_MS, MAPPED_SENDS, 1)), 0);
  CHECK_UV(uv_timer_start(&P.timer, on_mapped_end, PACE_MS * MAPPED_SENDS,
                          0));
  r = run();
  FIGURE(", \"sends\": %ld}\n", P.probe->sent);
  CHECK(reap(pid, 1000) && r == 0 && P.faults == 0);
  CHECK_EQ(P.icmp, MAPPED_SENDS);
  /* At most one error-queue read and one plain error per ICMP error. */
  CHECK_LE(errq_calls, P.icmp);
  CHECK(P.plain == P.icmp && P.first_plain == UV_ECONNREFUSED);
  CHECK_EQ(P.lent, 0);
  return CASE_OK;
#endif
}
