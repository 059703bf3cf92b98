/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * One report: how it reaches recv_cb, and that it does not make the loop
 * spin.
 */

#include "udp_errqueue.h"

#ifdef __linux__

/* Fails unless the one report reached recv_cb with the flag. */
#define CHECK_GOT_REPORT()                                                    \
  do {                                                                        \
    if (ctx.reports == 0)                                                     \
      FAIL("no report with UV_UDP_LINUX_RECVERR reached recv_cb (plain "     \
           "errors %ld, first %s; %ld loop iterations in %d ms)",            \
           ctx.plain_errors,                                                  \
           ctx.plain_errors ? uv_err_name((int) ctx.plain_err) : "-",         \
           ctx.iterations, RUN_MS);                                           \
  } while (0)


static int case_one_report(int family, const char* name) {
  char want[INET6_ADDRSTRLEN];
  char got[INET6_ADDRSTRLEN];

  private_netns_once();
  if (family == AF_INET6 && no_ipv6())
    SKIP("no IPv6 loopback (::1) on this machine");
  if (run_one_report(family, name) != CASE_OK)
    return CASE_FAIL;

  CHECK_GOT_REPORT();
  /* As on upstream, the socket error of the ICMP error may come too, once,
   * as a plain read error.
   */
  if (ctx.reports != 1 || ctx.plain_errors > 1 || ctx.plain_other != 0)
    FAIL("one ICMP error gave %ld reports and %ld plain errors (first %s)",
         ctx.reports, ctx.plain_errors,
         ctx.plain_errors ? uv_err_name((int) ctx.plain_err) : "-");
  if (!is_refused(ctx.report_nread))
    FAIL("report nread %ld, not ECONNREFUSED", (long) ctx.report_nread);
  CHECK(ctx.report_has_addr);
  CHECK_EQ(ctx.report_addr.ss_family, family);
  /* The offender of a port unreachable on loopback is the loopback address
   * that sent the ICMP message; it has no port.
   */
  if (family == AF_INET6) {
    struct sockaddr_in6* s6 = (struct sockaddr_in6*) &ctx.report_addr;
    uv_inet_ntop(AF_INET6, &s6->sin6_addr, got, sizeof(got));
    strcpy(want, "::1");
    CHECK_EQ(s6->sin6_port, 0);
  } else {
    struct sockaddr_in* s4 = (struct sockaddr_in*) &ctx.report_addr;
    uv_inet_ntop(AF_INET, &s4->sin_addr, got, sizeof(got));
    strcpy(want, "127.0.0.1");
    CHECK_EQ(s4->sin_port, 0);
  }
  if (strcmp(got, want) != 0)
    FAIL("offender %s, expected %s", got, want);
  CHECK_EQ(ctx.calls_after_close, 0);
  return CASE_OK;
}

#endif  /* __linux__ */

int case_one_report_ipv4(void) {
#ifndef __linux__
  SKIP(LINUX_ONLY);
#else
  return case_one_report(AF_INET, "one_report_ipv4");
#endif
}

int case_one_report_ipv6(void) {
#ifndef __linux__
  SKIP(LINUX_ONLY);
#else
  return case_one_report(AF_INET6, "one_report_ipv6");
#endif
}

int case_negative_nread(void) {
#ifndef __linux__
  SKIP(LINUX_ONLY);
#else
  if (run_one_report(AF_INET, "negative_nread") != CASE_OK)
    return CASE_FAIL;
  CHECK_GOT_REPORT();
  if (ctx.report_nread >= 0)
    FAIL("report nread %ld with UV_UDP_LINUX_RECVERR: not negative, so a "
         "caller that tests nread < 0 takes it for a datagram",
         (long) ctx.report_nread);
  if (ctx.report_nread != UV_ECONNREFUSED)
    FAIL("report nread %ld (%s), expected UV_ECONNREFUSED",
         (long) ctx.report_nread, uv_err_name((int) ctx.report_nread));
  return CASE_OK;
#endif
}

int case_alloc_cb_buffer(void) {
#ifndef __linux__
  SKIP(LINUX_ONLY);
#else
  if (run_one_report(AF_INET, "alloc_cb_buffer") != CASE_OK)
    return CASE_FAIL;
  CHECK_GOT_REPORT();
  if (ctx.report_allocs == 0)
    FAIL("the report reached recv_cb without an alloc_cb call before it");
  if (ctx.report_buf_null)
    FAIL("the report reached recv_cb with no buffer, not the alloc_cb one");
  if (!ctx.report_buf_in_alloc)
    FAIL("the report's buffer is not the one alloc_cb gave");
  return CASE_OK;
#endif
}

int case_one_report_no_spin(void) {
#ifndef __linux__
  SKIP(LINUX_ONLY);
#else
  if (run_one_report(AF_INET, "one_report_no_spin") != CASE_OK)
    return CASE_FAIL;
  if (ctx.iterations > SPIN_BOUND)
    FAIL("loop spun: %ld iterations in %d ms with one queued report, bound "
         "%d (recv_cb calls %ld, of which empty %ld, reports %ld, plain "
         "errors %ld)", ctx.iterations, RUN_MS, SPIN_BOUND, ctx.recv_calls,
         ctx.empty_reads, ctx.reports, ctx.plain_errors);
  return CASE_OK;
#endif
}
