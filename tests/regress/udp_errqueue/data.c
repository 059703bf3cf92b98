/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * Reports and datagrams together: each on its own budget of 32 per
 * event, the datagrams first, as upstream reads them; and a close in the
 * first error callback ends them.
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
  struct sockaddr_storage dst;
  char seq[256];
  char reps[256];
  int ndata;
  int nrep;
  int fd;
  int i;
  int r;

  ndata = 100;
  /* More than one report budget, within the kernel's ICMP burst of 50. */
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
  format_list(reps, sizeof(reps), ctx.reports_per_iter, ctx.report_iters);
  if (ctx.datagrams != ndata || ctx.data_dup != 0)
    FAIL("%ld of %d datagrams delivered, %ld twice (reports %ld, first "
         "nread %ld)", ctx.datagrams, ndata, ctx.data_dup, ctx.reports,
         (long) ctx.report_nread);
  for (i = 0; i < ndata; i++)
    CHECK(ctx.data_seen[i]);
  /* Each on its own budget: a plain read error counts as one of the 32
   * reads of the datagrams' budget.
   */
  for (i = 0; i < ctx.data_iters; i++)
    if (ctx.data_per_iter[i] > DATA_BUDGET)
      FAIL("datagrams per iteration: %s, budget %d", seq, DATA_BUDGET);
  for (i = 0; i < ctx.report_iters; i++)
    if (ctx.reports_per_iter[i] > REPORT_BUDGET)
      FAIL("reports per iteration: %s, budget %d", reps, REPORT_BUDGET);
  if (ctx.reports != nrep || ctx.plain_errors > nrep ||
      ctx.plain_other != 0)
    FAIL("expected %d reports and at most as many plain ECONNREFUSED, got "
         "%ld and %ld (first plain error %s)", nrep, ctx.reports,
         ctx.plain_errors,
         ctx.plain_errors ? uv_err_name((int) ctx.plain_err) : "-");
  CHECK(is_refused(ctx.report_nread));
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

/* uv_close() in the first error callback, a plain ECONNREFUSED or a
 * report, whichever libuv hands over first: nothing comes after it.
 */
int case_close_on_first_error(void) {
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
  note("close_on_first_error");

  CHECK(ctx.udp_closed);
  CHECK_EQ(ctx.calls_after_close, 0);
  if (ctx.reports + ctx.plain_errors != 1)
    FAIL("expected one error callback, got %ld reports and %ld plain "
         "errors", ctx.reports, ctx.plain_errors);
  if (ctx.plain_other != 0)
    FAIL("the first error was %s, not ECONNREFUSED",
         uv_err_name((int) ctx.plain_err));
  if (ctx.reports == 1 && !is_refused(ctx.report_nread))
    FAIL("the report's nread %ld, not ECONNREFUSED",
         (long) ctx.report_nread);
  if (r != 0)
    FAIL("uv_loop_close: %s", uv_strerror(r));
  return CASE_OK;
#endif
}
