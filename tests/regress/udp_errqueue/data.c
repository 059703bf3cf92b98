/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * Reports and datagrams together: they share the budget, and a close in
 * the first error callback ends them.
 */

#include "udp_errqueue.h"

#ifdef __linux__

/* Queues n datagrams, each carrying its sequence number, to the handle. */
static int send_datagrams(int n) {
  struct sockaddr_storage me;
  unsigned seq;
  int namelen;
  int fd;
  int i;

  namelen = sizeof(me);
  if (uv_udp_getsockname(&ctx.udp, (struct sockaddr*) &me, &namelen) != 0)
    return -1;
  fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0)
    return -1;
  for (i = 0; i < n; i++) {
    seq = (unsigned) i;
    if (sendto(fd, &seq, sizeof(seq), 0, (struct sockaddr*) &me,
               (socklen_t) namelen) != (ssize_t) sizeof(seq)) {
      close(fd);
      return -1;
    }
  }
  close(fd);
  return 0;
}

static int data_and_reports(int mmsg) {
  /* Reports and datagrams share the budget, reports first but at most
   * half of it while datagrams wait: 16 + 16, 16 + 16, 8 + 24,
   * then the datagrams alone, 32 12. The socket error that the 17th
   * report set is read once after the 16th, and dropped.
   */
  static const long want[] = { 16, 16, 24, 32, 12 };
  struct sockaddr_storage dst;
  char seq[256];
  int ndata;
  int nrep;
  int fd;
  int i;
  int r;

  ndata = 100;
  /* More than one drain budget, within the kernel's ICMP burst of 50. */
  nrep = 40;
  CHECK_UV(setup_ex(AF_INET, UV_UDP_LINUX_RECVERR,
                    mmsg ? UV_UDP_RECVMMSG : 0));
  if (mmsg && !uv_udp_using_recvmmsg(&ctx.udp))
    SKIP("recvmmsg is not supported here (uv_udp_using_recvmmsg)");
  CHECK_UV(recv_start());
  ctx.data_expected = ndata;
  ctx.data_seen = calloc((size_t) ndata, 1);
  CHECK(ctx.data_seen != NULL);

  CHECK_EQ(closed_port(AF_INET, &dst), 0);
  fd = udp_fd(&ctx.udp);
  for (i = 0; i < nrep; i++)
    CHECK_EQ(send_for_report(fd, &dst), 0);
  CHECK_EQ(send_datagrams(ndata), 0);
  r = run_and_close();
  note(mmsg ? "data_and_reports_mmsg" : "data_and_reports");

  format_list(seq, sizeof(seq), ctx.data_per_iter, ctx.data_iters);
  if (ctx.datagrams != ndata || ctx.data_dup != 0)
    FAIL("%ld of %d datagrams delivered, %ld twice (reports %ld, first "
         "nread %ld)", ctx.datagrams, ndata, ctx.data_dup, ctx.reports,
         (long) ctx.report_nread);
  for (i = 0; i < ndata; i++)
    CHECK(ctx.data_seen[i]);
  for (i = 0; i < ctx.data_iters; i++)
    if (ctx.data_per_iter[i] > DATA_BUDGET)
      FAIL("datagrams per iteration: %s, budget %d", seq, DATA_BUDGET);
  /* In recvmmsg mode the split depends on the batch size; the budget and
   * the totals are what matter there.
   */
  if (!mmsg &&
      (ctx.data_iters != (int) (sizeof(want) / sizeof(want[0])) ||
       memcmp(ctx.data_per_iter, want, sizeof(want)) != 0))
    FAIL("datagrams per iteration: %s, expected 16 16 24 32 12 (reports %ld, "
         "plain errors %ld, %ld iterations)", seq, ctx.reports,
         ctx.plain_errors, ctx.iterations);
  if (ctx.reports != nrep || ctx.plain_errors != 0)
    FAIL("expected %d reports and no plain error, got %ld and %ld (first "
         "plain error %s)", nrep, ctx.reports, ctx.plain_errors,
         ctx.plain_errors ? uv_err_name((int) ctx.plain_err) : "-");
  CHECK_EQ(ctx.report_nread, UV_ECONNREFUSED);
  if (ctx.iterations > SPIN_BOUND + ctx.data_iters)
    FAIL("loop spun: %ld iterations in %d ms", ctx.iterations, RUN_MS);
  CHECK_EQ(r, 0);
  free(ctx.data_seen);
  return CASE_OK;
}

#endif  /* __linux__ */

int case_data_and_reports(void) {
#ifndef __linux__
  SKIP(LINUX_ONLY);
#else
  return data_and_reports(0);
#endif
}

int case_data_and_reports_mmsg(void) {
#ifndef __linux__
  SKIP(LINUX_ONLY);
#else
  return data_and_reports(1);
#endif
}

int case_close_on_first_report(void) {
#ifndef __linux__
  SKIP(LINUX_ONLY);
#else
  struct sockaddr_storage dst;
  int fd;
  int i;
  int r;

  CHECK_UV(setup(AF_INET, UV_UDP_LINUX_RECVERR));
  CHECK_UV(recv_start());
  ctx.close_on_first_error = 1;
  CHECK_EQ(closed_port(AF_INET, &dst), 0);
  fd = udp_fd(&ctx.udp);
  for (i = 0; i < 5; i++)
    CHECK_EQ(send_for_report(fd, &dst), 0);
  CHECK_EQ(send_datagrams(10), 0);
  r = run_and_close();
  note("close_on_first_report");

  CHECK(ctx.udp_closed);
  CHECK_EQ(ctx.calls_after_close, 0);
  if (ctx.reports + ctx.plain_errors != 1)
    FAIL("expected one error callback, got %ld reports and %ld plain "
         "errors", ctx.reports, ctx.plain_errors);
  if (ctx.reports != 1)
    FAIL("the first error was %s without UV_UDP_LINUX_RECVERR, not a report",
         uv_err_name((int) ctx.plain_err));
  CHECK_EQ(ctx.report_nread, UV_ECONNREFUSED);
  if (r != 0)
    FAIL("uv_loop_close: %s", uv_strerror(r));
  return CASE_OK;
#endif
}
