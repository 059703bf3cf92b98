/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * A backlog and a report every 10 ms: how soon each report comes.
 */

#include "udp_paths.h"

/* The backlog, a probe every 10 ms; the report by IP_RECVERR set after
 * bind (kind 0), a TX timestamp (1), or the flag (2).
 */
int backlog_case(int kind) {
#ifndef __linux__
  (void) kind;
  SKIP(LINUX_ONLY);
#else
  static const int opts[] = { 1, SOF_TIMESTAMPING_TX_SOFTWARE |
                                     SOF_TIMESTAMPING_SOFTWARE |
                                     SOF_TIMESTAMPING_OPT_ID };
  uint64_t median;
  uint64_t lag;
  pid_t pid;
  int r;

  r = setup("127.0.0.1", 0, kind == 2 ? UV_UDP_LINUX_RECVERR : 0, 64 << 20);
  if (r != CASE_OK)
    return r;
  P.backlog = 1;
  if (kind < 2)
    CHECK(setsockopt(P.fd, kind ? SOL_SOCKET : IPPROTO_IP,
                     kind ? SO_TIMESTAMPING : IP_RECVERR, &opts[kind],
                     sizeof(opts[kind])) == 0);
  CHECK_EQ(queue(BACKLOG, 0), 0);
  CHECK_UV(recv_start());
  CHECK_GT((pid = start_prober(PROBE_MS, MAX_PROBES, 0)), 0);
  r = run();
  P.probe->stop = 1;
  sort_u64(P.lat, (size_t) P.nlat);
  median = quantile_u64(P.lat, (size_t) P.nlat, 0.5);
  sort_u64(P.lag, (size_t) P.nlat);
  lag = quantile_u64(P.lag, (size_t) P.nlat, 0.5);
  FIGURE(", \"probes\": %ld, \"reports_while_draining\": %ld, "
         "\"latency_median_us\": %.1f, \"latency_max_us\": %.1f, "
         "\"lag_median\": %lu, \"lag_max\": %lu}\n",
         P.probe->sent, P.in_drain, median / 1e3,
         quantile_u64(P.lat, (size_t) P.nlat, 1.0) / 1e3,
         (unsigned long) lag,
         (unsigned long) quantile_u64(P.lag, (size_t) P.nlat, 1.0));
  CHECK(reap(pid, 1000) && r == 0 && P.faults == 0);
  CHECK_TIMING(P.datagrams == BACKLOG, "%ld of %d datagrams in %d ms",
               P.datagrams, BACKLOG, SAFETY_MS);
  CHECK_GT(P.in_drain, 0);
  /* With IP_RECVERR, an ICMP error may also come once as a plain
   * ECONNREFUSED, as on upstream: never more of them than ICMP errors. A
   * timestamp sets no socket error.
   */
  if (P.plain > (kind == 1 ? 0 : P.icmp) ||
      (P.plain > 0 && P.first_plain != UV_ECONNREFUSED))
    FAIL("%ld plain errors (first %s) beside %ld reports, for %ld ICMP "
         "errors", P.plain, P.plain ? uv_err_name((int) P.first_plain) : "-",
         P.reports, kind == 1 ? 0 : P.icmp);
  if (lag > MEDIAN_LAG)
    FAIL("median lag of a report %lu datagrams, bound %d (latency %.2f ms)",
         (unsigned long) lag, MEDIAN_LAG, median / 1e6);
  return CASE_OK;
#endif
}
