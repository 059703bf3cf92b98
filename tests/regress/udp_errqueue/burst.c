/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * Several reports: each reaches recv_cb once, at most REPORT_BUDGET per
 * loop iteration, and no more plain errors than ICMP errors.
 */

#include "udp_errqueue.h"

int case_three_reports_once(void) {
#ifndef __linux__
  SKIP(LINUX_ONLY);
#else
  int r;

  CHECK_UV(setup(AF_INET, UV_UDP_LINUX_RECVERR));
  CHECK_UV(recv_start());
  CHECK_UV(start_paced_sends(0));
  r = run_and_close();
  note("three_reports_once");

  if (ctx.pace_failed != 0)
    FAIL("uv_udp_try_send: %s", uv_strerror(ctx.pace_failed));
  CHECK_EQ(ctx.paced, PACED_SENDS);
  if (ctx.reports != PACED_SENDS || ctx.plain_errors > PACED_SENDS ||
      ctx.plain_other != 0)
    FAIL("%d ICMP errors gave %ld reports and %ld plain errors (first %s), "
         "expected %d reports and at most as many ECONNREFUSED",
         PACED_SENDS, ctx.reports, ctx.plain_errors,
         ctx.plain_errors ? uv_err_name((int) ctx.plain_err) : "-",
         PACED_SENDS);
  if (r != 0)
    FAIL("uv_loop_close: %s", uv_strerror(r));
  return CASE_OK;
#endif
}

int case_report_burst(void) {
#ifndef __linux__
  SKIP(LINUX_ONLY);
#else
  struct sockaddr_storage dst;
  struct sockaddr_in* d4;
  char seq[256];
  int rcvbuf;
  int nsres;
  int fd;
  int n;
  int i;
  int r;

  nsres = private_netns_once();
  if (nsres == 0) {
    n = 200;
  } else {
    /* Without a namespace of our own, stay within the kernel's global
     * ICMP burst (net.ipv4.icmp_msgs_burst, 50 by default).
     */
    n = 40;
    fprintf(stderr, "# report_burst: no private network namespace (%s); "
            "sending %d, within the ICMP burst of 50\n", strerror(nsres), n);
  }

  CHECK_UV(setup(AF_INET, UV_UDP_LINUX_RECVERR));
  /* Room for all reports: each is charged to the receive buffer. */
  rcvbuf = 1 << 20;
  CHECK_UV(uv_recv_buffer_size((uv_handle_t*) &ctx.udp, &rcvbuf));
  CHECK_UV(recv_start());
  ctx.report_expected = n;
  ctx.report_seen = calloc((size_t) n, 1);
  CHECK(ctx.report_seen != NULL);

  /* One report per offender 127.0.1.(i + 1), so each is identifiable. */
  CHECK_EQ(closed_port(AF_INET, &dst), 0);
  d4 = (struct sockaddr_in*) &dst;
  fd = udp_fd(&ctx.udp);
  for (i = 0; i < n; i++) {
    d4->sin_addr.s_addr = htonl(0x7f000100UL + (unsigned long) i + 1);
    CHECK_EQ(send_for_report(fd, &dst), 0);
  }
  r = run_and_close();
  note("report_burst");

  format_list(seq, sizeof(seq), ctx.reports_per_iter, ctx.report_iters);
  if (ctx.reports != n || ctx.report_dup || ctx.report_bad)
    FAIL("expected %d distinct reports with nread ECONNREFUSED, got %ld "
         "(duplicates %ld, bad %ld, first nread %ld, plain errors %ld, %ld "
         "iterations, per iteration: %s)",
         n, ctx.reports, ctx.report_dup, ctx.report_bad,
         (long) ctx.report_nread, ctx.plain_errors, ctx.iterations,
         seq[0] ? seq : "none");
  for (i = 0; i < ctx.report_iters; i++)
    if (ctx.reports_per_iter[i] > REPORT_BUDGET)
      FAIL("%ld reports in one iteration, budget %d (per iteration: %s)",
           ctx.reports_per_iter[i], REPORT_BUDGET, seq);
  if (ctx.report_iters != (n + REPORT_BUDGET - 1) / REPORT_BUDGET)
    FAIL("reports per iteration: %s, expected %d iterations of at most %d",
         seq, (n + REPORT_BUDGET - 1) / REPORT_BUDGET, REPORT_BUDGET);
  if (ctx.plain_errors > n || ctx.plain_other != 0)
    FAIL("%ld plain errors beside the reports of %d ICMP errors (first %s)",
         ctx.plain_errors, n, uv_err_name((int) ctx.plain_err));
  if (ctx.iterations > SPIN_BOUND + ctx.report_iters)
    FAIL("loop spun: %ld iterations in %d ms", ctx.iterations, RUN_MS);
  CHECK_EQ(r, 0);
  free(ctx.report_seen);
  return CASE_OK;
#endif
}
