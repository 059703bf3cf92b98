/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * A child provokes a flood of ICMP error reports on the handle's socket
 * while another sends datagrams to it.
 */

#include "udp_hostile.h"

#ifdef __linux__


/* A child sends to a closed port from the loop's own socket (the fd is
 * shared through fork(), and reports go to the socket that sent), so that
 * the socket's error queue gets as many ICMP reports as the kernel makes,
 * while a second child sends numbered datagrams to it in bursts. Reports
 * come in upstream's form (UV_UDP_LINUX_RECVERR in flags, nread
 * UV_ECONNREFUSED), at most BUDGET per iteration, and the datagrams keep
 * flowing, at most BUDGET per iteration on a budget of their own. As on
 * upstream an ICMP error may also come as a plain ECONNREFUSED: never
 * more of them than the ICMP errors the namespace received.
 */
static int icmp_flood_case(int chunks) {
  flood_arg* rep;
  flood_arg* dat;
  uv_os_fd_t fd;
  long icmp0;
  long icmp;
  pid_t rpid;
  pid_t dpid;
  long empty;
  long unjudged;
  int rep_ok;
  int dat_ok;
  int nsres;
  int i;

  nsres = private_netns();
  if (nsres != 0)
    SKIP("cannot make a private network namespace: %s", strerror(nsres));
  if (hc_setup(chunks, UV_UDP_LINUX_RECVERR, 1UL << 20) != CASE_OK)
    return CASE_FAIL;
  if (chunks != 0 && !uv_udp_using_recvmmsg(&hc.udp))
    SKIP("recvmmsg is not supported here (uv_udp_using_recvmmsg)");
  CHECK_UV(uv_fileno((uv_handle_t*) &hc.udp, &fd));

  rep = shared_arg();
  dat = shared_arg();
  CHECK(rep != NULL && dat != NULL);
  CHECK_EQ(closed_port(AF_INET, &rep->to), 0);
  rep->fd = fd;
  rep->max = 1UL << 24;
  rep->ms = REPORT_MS;
  CHECK_EQ(hc_addr(&dat->to), 0);
  dat->fd = -1;
  dat->max = 1UL << 20;
  dat->ms = REPORT_MS;
  dat->burst = 16;
  dat->pause_us = 1000;
  hc.peer_sent = &dat->sent;

  icmp0 = snmp_counter("Icmp:", "InDestUnreachs");
  rpid = spawn(flood_child, rep, REPORT_MS / 1000 + 3);
  CHECK_GT(rpid, 0);
  dpid = spawn(flood_child, dat, REPORT_MS / 1000 + 3);
  if (dpid <= 0) {
    reap(rpid, 0);
    FAIL("fork: %s", strerror(errno));
  }

  if (hc_run(REPORT_MS + 300) != CASE_OK) {
    reap(rpid, 0);
    reap(dpid, 0);
    return CASE_FAIL;
  }
  rep_ok = reap(rpid, 2000);
  dat_ok = reap(dpid, 2000);
  icmp = snmp_counter("Icmp:", "InDestUnreachs") - icmp0;

  /* The windows of the flood after the first, but for the last one. One
   * that delivered nothing is a stall if the loop ran through it (most of
   * its ticks fired) while the sender sent a burst or more: a window that
   * the host took from either process says nothing of libuv.
   */
  empty = 0;
  unjudged = 0;
  for (i = 1; i < (int) (REPORT_MS / WINDOW_MS) - 1; i++) {
    if (hc.windows[i] != 0)
      continue;
    if (hc.window_ticks[i] >= WINDOW_MS / TICK_MS - 2 &&
        hc.window_sent_hi[i] - hc.window_sent_lo[i] >= dat->burst)
      empty++;
    else
      unjudged++;
  }

  fprintf(stderr,
          "# icmp_report_flood%s: ticks=%ld (expected %ld) iterations=%ld "
          "reports=%ld (not ECONNREFUSED %ld) max_reports/iter=%ld "
          "plain_errors=%ld (first %s) icmp_errors=%ld "
          "report_sends=%lu (refused %lu) datagrams=%lu of %lu sent "
          "dups=%lu max/iter=%ld empty_%dms_windows=%ld (unjudged %ld) "
          "rss_1s=%ldKiB rss_end=%ldKiB run=%lums\n",
          chunks ? "_mmsg" : "", hc.ticks, (long) (hc.run_ms / TICK_MS),
          hc.iterations, hc.reports, hc.bad_reports, hc.max_reports_iter,
          hc.plain_errors,
          hc.plain_errors ? uv_err_name((int) hc.first_plain_error) : "-",
          icmp, rep->sent, rep->refused, hc.datagrams, dat->sent, hc.dups,
          hc.max_iter, WINDOW_MS, empty, unjudged, hc.rss_1s / 1024,
          hc.rss_end / 1024, (unsigned long) hc.run_ms);

  if (!rep_ok || !dat_ok || rep->failed || dat->failed)
    FAIL("a child did not end cleanly by itself (errno %d, %d)",
         rep->failed, dat->failed);
  CHECK_TIMING(ticks_ok(),
               "the 20 ms timer fired %ld times in %lu ms, want >= 80%% of "
               "%ld", hc.ticks, (unsigned long) hc.run_ms,
               (long) (hc.run_ms / TICK_MS));
  if (hc.reports == 0)
    FAIL("no ICMP report delivered (%lu sends to a closed port, %ld "
         "plain errors, %ld loop iterations)", rep->sent, hc.plain_errors,
         hc.iterations);
  if (hc.bad_reports != 0)
    FAIL("%ld of %ld reports with nread other than UV_ECONNREFUSED, the "
         "first %ld", hc.bad_reports, hc.reports, hc.first_bad_report);
  /* Each ICMP error comes as its report and, as on upstream, at most once
   * more as the plain socket error it set; a send of the child that took
   * the socket error first leaves none. Reports the kernel had no room
   * for come as the plain error alone.
   */
  if (hc.plain_errors > icmp ||
      (hc.plain_errors > 0 && hc.first_plain_error != UV_ECONNREFUSED))
    FAIL("%ld plain errors (first %s) for %ld ICMP errors", hc.plain_errors,
         hc.plain_errors ? uv_err_name((int) hc.first_plain_error) : "-",
         icmp);
  if (hc.reports > icmp)
    FAIL("%ld reports for %ld ICMP errors", hc.reports, icmp);
  CHECK_LE(hc.max_reports_iter, BUDGET);
  CHECK_LE(hc.max_iter, BUDGET);
  if (hc.dups != 0 || hc.bad != 0)
    FAIL("%lu datagrams delivered twice, %lu malformed", hc.dups, hc.bad);
  CHECK_TIMING(empty == 0,
               "the receive path stalled: %ld of the %d ms windows of the "
               "flood delivered no datagram (%lu of %lu delivered)", empty,
               WINDOW_MS, hc.datagrams, dat->sent);
  CHECK_EQ(hc.cbs_after_close, 0);
  munmap(rep, sizeof(*rep));
  munmap(dat, sizeof(*dat));
  return CASE_OK;
}

#endif  /* __linux__ */

int case_icmp_flood(void) {
#ifndef __linux__
  SKIP(LINUX_ONLY);
#else
  return icmp_flood_case(0);
#endif
}

int case_icmp_flood_mmsg(void) {
#ifndef __linux__
  SKIP(LINUX_ONLY);
#else
  return icmp_flood_case(FLOOD_CHUNKS);
#endif
}
