/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * Regression cases for "linux,udp: drain the error queue on EPOLLERR".
 *
 * A UDP socket bound with UV_UDP_LINUX_RECVERR asks Linux to queue ICMP
 * error reports on the socket's error queue. epoll reports EPOLLERR for as
 * long as that queue is not empty, so a loop that never reads it spins at
 * 100% CPU. The patched libuv reads the queue on EPOLLERR, at most 32
 * reports per event, and hands each report to recv_cb with nread set to
 * the error, addr set to the offender and UV_UDP_LINUX_RECVERR in flags.
 * When receiving is not started it reads and drops the reports, without
 * calling alloc_cb or recv_cb.
 *
 * Every case bounds its loop with a one second uv timer, so a spinning
 * (unpatched) loop also ends and reports what it did. Only loopback
 * addresses (127.0.0.0/8 and ::1) are sent to. Linux only: elsewhere every
 * case is skipped.
 */

#if defined(__linux__) && !defined(_GNU_SOURCE)
# define _GNU_SOURCE  /* unshare(), CLONE_NEWNET */
#endif

#include <uv.h>

#include "harness.h"
#include "netns.h"

#ifdef __linux__

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "loopback.h"

/* The drain budget of the patch: reports handed over per event. */
#define REPORT_BUDGET 32
/* The data budget of the receive path: datagrams per event. */
#define DATA_BUDGET 32
/* How long every case lets the loop run. */
#define RUN_MS 1000
/* Bound on the per-iteration records kept. */
#define MAX_ITER 64

typedef struct {
  uv_loop_t loop;
  uv_udp_t udp;
  uv_timer_t timer;
  uv_check_t check;
  int udp_closed;
  /* Loop iterations, counted by the check handle. */
  long iterations;
  /* Callbacks seen by recv_cb. */
  long recv_calls;
  long empty_reads;
  long datagrams;
  long reports;
  long plain_errors;
  long calls_after_close;
  long alloc_calls;
  /* The first report. */
  long report_err;
  unsigned report_flags;
  struct sockaddr_storage report_addr;
  int report_has_addr;
  /* The first plain (flagless) error. */
  long plain_err;
  /* Per-iteration counts, for iterations that handed anything over. */
  long data_this_iter;
  long reports_this_iter;
  int data_iters;
  long data_per_iter[MAX_ITER];
  int report_iters;
  long reports_per_iter[MAX_ITER];
  /* Identity checks: datagrams by sequence number, reports by offender. */
  unsigned char* data_seen;
  int data_expected;
  long data_dup;
  unsigned char* report_seen;
  int report_expected;
  long report_dup;
  long report_bad;
  /* Behaviour switches. */
  int close_on_first_error;
  /* Send-only cases. */
  long send_cbs;
  long send_ok;
  long send_refused;
  long send_other;
  int send_other_status;
  /* Reports still queued when the timer fired. */
  long left_queued;
} ctx_t;

static ctx_t ctx;

static void on_alloc(uv_handle_t* handle, size_t size, uv_buf_t* buf) {
  ctx.alloc_calls++;
  /* In recvmmsg mode, room for several datagrams per call. */
  if (uv_udp_using_recvmmsg((uv_udp_t*) handle))
    size *= 8;
  buf->base = malloc(size);
  buf->len = buf->base == NULL ? 0 : size;
}

static void on_udp_close(uv_handle_t* handle) {
  (void) handle;
  ctx.udp_closed = 1;
}

static void close_all(void) {
  if (!uv_is_closing((uv_handle_t*) &ctx.udp))
    uv_close((uv_handle_t*) &ctx.udp, on_udp_close);
  if (!uv_is_closing((uv_handle_t*) &ctx.timer))
    uv_close((uv_handle_t*) &ctx.timer, NULL);
  if (!uv_is_closing((uv_handle_t*) &ctx.check))
    uv_close((uv_handle_t*) &ctx.check, NULL);
}

static void format_list(char* out, size_t size, const long* v, int n);

/* Counts (and takes off) the reports still on the error queue. */
static long count_queued_reports(void) {
  struct msghdr h;
  struct iovec iov;
  char payload[64];
  char control[256];
  uv_os_fd_t fd;
  long n;

  if (uv_is_closing((uv_handle_t*) &ctx.udp) ||
      uv_fileno((uv_handle_t*) &ctx.udp, &fd) != 0)
    return -1;
  for (n = 0; n < 100000; n++) {
    memset(&h, 0, sizeof(h));
    iov.iov_base = payload;
    iov.iov_len = sizeof(payload);
    h.msg_iov = &iov;
    h.msg_iovlen = 1;
    h.msg_control = control;
    h.msg_controllen = sizeof(control);
    if (recvmsg(fd, &h, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
      break;
  }
  return n;
}

static void on_timer(uv_timer_t* timer) {
  (void) timer;
  ctx.left_queued = count_queued_reports();
  close_all();
}

/* One diagnostic line on stderr per case: what the loop did. */
static void note(const char* name) {
  char data[256];
  char reps[256];

  format_list(data, sizeof(data), ctx.data_per_iter, ctx.data_iters);
  format_list(reps, sizeof(reps), ctx.reports_per_iter, ctx.report_iters);
  fprintf(stderr,
          "# %s: iterations=%ld recv_calls=%ld empty=%ld datagrams=%ld "
          "reports=%ld plain_errors=%ld alloc=%ld sends=%ld (ok %ld, "
          "refused %ld) left_queued=%ld data/iter=[%s] reports/iter=[%s]\n",
          name, ctx.iterations, ctx.recv_calls, ctx.empty_reads,
          ctx.datagrams, ctx.reports, ctx.plain_errors, ctx.alloc_calls,
          ctx.send_cbs, ctx.send_ok, ctx.send_refused, ctx.left_queued,
          data, reps);
}

static void on_check(uv_check_t* check) {
  (void) check;
  ctx.iterations++;
  if (ctx.data_this_iter > 0 && ctx.data_iters < MAX_ITER)
    ctx.data_per_iter[ctx.data_iters++] = ctx.data_this_iter;
  if (ctx.reports_this_iter > 0 && ctx.report_iters < MAX_ITER)
    ctx.reports_per_iter[ctx.report_iters++] = ctx.reports_this_iter;
  ctx.data_this_iter = 0;
  ctx.reports_this_iter = 0;
}

/* Report offenders are 127.0.1.x: x - 1 is the report's index. */
static int offender_index(const struct sockaddr* addr) {
  const struct sockaddr_in* sin;
  unsigned long a;

  if (addr == NULL || addr->sa_family != AF_INET)
    return -1;
  sin = (const struct sockaddr_in*) addr;
  a = ntohl(sin->sin_addr.s_addr);
  if ((a & 0xffffff00UL) != 0x7f000100UL)
    return -1;
  return (int) (a & 0xff) - 1;
}

static void on_recv(uv_udp_t* handle,
                    ssize_t nread,
                    const uv_buf_t* buf,
                    const struct sockaddr* addr,
                    unsigned flags) {
  unsigned seq;
  int i;

  ctx.recv_calls++;
  if (ctx.udp_closed || uv_is_closing((uv_handle_t*) handle))
    ctx.calls_after_close++;

  if (nread > 0) {
    ctx.datagrams++;
    ctx.data_this_iter++;
    if (ctx.data_seen != NULL && nread >= 4) {
      memcpy(&seq, buf->base, sizeof(seq));
      if (seq < (unsigned) ctx.data_expected) {
        if (ctx.data_seen[seq])
          ctx.data_dup++;
        ctx.data_seen[seq] = 1;
      }
    }
  } else if (nread == 0) {
    ctx.empty_reads++;
  } else if (flags & UV_UDP_LINUX_RECVERR) {
    if (ctx.reports == 0) {
      ctx.report_err = (long) nread;
      ctx.report_flags = flags;
      ctx.report_has_addr = addr != NULL;
      if (addr != NULL)
        memcpy(&ctx.report_addr,
               addr,
               addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                           : sizeof(struct sockaddr_in));
    }
    ctx.reports++;
    ctx.reports_this_iter++;
    if (ctx.report_seen != NULL) {
      i = offender_index(addr);
      if (i < 0 || i >= ctx.report_expected || nread != UV_ECONNREFUSED)
        ctx.report_bad++;
      else if (ctx.report_seen[i])
        ctx.report_dup++;
      else
        ctx.report_seen[i] = 1;
    }
  } else {
    if (ctx.plain_errors == 0)
      ctx.plain_err = (long) nread;
    ctx.plain_errors++;
  }

  if (buf->base != NULL && !(flags & UV_UDP_MMSG_CHUNK))
    free(buf->base);

  if (nread < 0 && ctx.close_on_first_error &&
      !uv_is_closing((uv_handle_t*) handle))
    close_all();
}

static int setup_ex(int family, unsigned bind_flags, unsigned init_flags) {
  struct sockaddr_storage ss;
  int r;

  memset(&ctx, 0, sizeof(ctx));
  memset(&ss, 0, sizeof(ss));
  if (family == AF_INET6)
    r = uv_ip6_addr("::1", 0, (struct sockaddr_in6*) &ss);
  else
    r = uv_ip4_addr("127.0.0.1", 0, (struct sockaddr_in*) &ss);
  if (r != 0)
    return r;
  r = uv_loop_init(&ctx.loop);
  if (r != 0)
    return r;
  r = uv_udp_init_ex(&ctx.loop, &ctx.udp, (unsigned) family | init_flags);
  if (r == 0)
    r = uv_udp_bind(&ctx.udp, (const struct sockaddr*) &ss, bind_flags);
  if (r == 0)
    r = uv_timer_init(&ctx.loop, &ctx.timer);
  if (r == 0)
    r = uv_check_init(&ctx.loop, &ctx.check);
  if (r == 0)
    r = uv_check_start(&ctx.check, on_check);
  return r;
}

static int setup(int family, unsigned bind_flags) {
  return setup_ex(family, bind_flags, 0);
}

/* Runs the loop until the timer closes everything, then closes the loop.
 * Returns what uv_loop_close() returned.
 */
static int run_and_close(void) {
  uv_timer_start(&ctx.timer, on_timer, RUN_MS, 0);
  uv_run(&ctx.loop, UV_RUN_DEFAULT);
  return uv_loop_close(&ctx.loop);
}

/* Sends one datagram from fd to dst so that exactly one ICMP error report
 * is queued. A pending socket error (left by the previous report) fails the
 * send once without sending anything, so retry then.
 */
static int send_for_report(int fd, const struct sockaddr_storage* dst) {
  socklen_t len;
  int tries;

  len = dst->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                   : sizeof(struct sockaddr_in);
  for (tries = 0; tries < 10; tries++) {
    if (sendto(fd, "errq", 4, 0, (const struct sockaddr*) dst, len) == 4)
      return 0;
    if (errno != ECONNREFUSED && errno != EINTR)
      return -1;
  }
  return -1;
}

static int udp_fd(void) {
  uv_os_fd_t fd;

  if (uv_fileno((uv_handle_t*) &ctx.udp, &fd) != 0)
    return -1;
  return fd;
}

static void format_list(char* out, size_t size, const long* v, int n) {
  size_t used;
  int i;

  used = 0;
  out[0] = '\0';
  for (i = 0; i < n && used + 12 < size; i++)
    used += (size_t) snprintf(out + used, size - used, "%s%ld",
                              i ? " " : "", v[i]);
}

static int case_one_report(int family) {
  struct sockaddr_storage dst;
  char want[INET6_ADDRSTRLEN];
  char got[INET6_ADDRSTRLEN];
  int r;

  if (family == AF_INET6) {
    int fd = socket(AF_INET6, SOCK_DGRAM, 0);
    struct sockaddr_in6 s6;
    memset(&s6, 0, sizeof(s6));
    s6.sin6_family = AF_INET6;
    s6.sin6_addr = in6addr_loopback;
    r = fd < 0 ? -1 : bind(fd, (struct sockaddr*) &s6, sizeof(s6));
    if (fd >= 0)
      close(fd);
    if (r != 0)
      SKIP("no IPv6 loopback (::1) on this machine");
  }

  CHECK_UV(setup(family, UV_UDP_LINUX_RECVERR));
  CHECK_UV(uv_udp_recv_start(&ctx.udp, on_alloc, on_recv));
  CHECK(closed_port(family, &dst) == 0);
  CHECK(send_for_report(udp_fd(), &dst) == 0);
  r = run_and_close();
  note(family == AF_INET6 ? "one_report_ipv6" : "one_report_ipv4");

  if (ctx.iterations > 9)
    FAIL("loop spun: %ld iterations in %d ms with one queued report "
         "(recv_cb calls %ld, of which empty %ld, reports %ld, plain errors "
         "%ld)", ctx.iterations, RUN_MS, ctx.recv_calls, ctx.empty_reads,
         ctx.reports, ctx.plain_errors);
  if (ctx.reports != 1)
    FAIL("expected 1 report with UV_UDP_LINUX_RECVERR, got %ld (plain "
         "errors %ld, first %s)", ctx.reports, ctx.plain_errors,
         ctx.plain_errors ? uv_err_name((int) ctx.plain_err) : "-");
  CHECK(ctx.plain_errors == 0);
  if (ctx.report_err != UV_ECONNREFUSED)
    FAIL("report error %s, expected ECONNREFUSED",
         uv_err_name((int) ctx.report_err));
  CHECK(ctx.report_has_addr);
  CHECK(ctx.report_addr.ss_family == family);
  /* The offender of a port unreachable on loopback is the loopback address
   * that sent the ICMP message; it has no port.
   */
  if (family == AF_INET6) {
    struct sockaddr_in6* s6 = (struct sockaddr_in6*) &ctx.report_addr;
    uv_inet_ntop(AF_INET6, &s6->sin6_addr, got, sizeof(got));
    strcpy(want, "::1");
    CHECK(s6->sin6_port == 0);
  } else {
    struct sockaddr_in* s4 = (struct sockaddr_in*) &ctx.report_addr;
    uv_inet_ntop(AF_INET, &s4->sin_addr, got, sizeof(got));
    strcpy(want, "127.0.0.1");
    CHECK(s4->sin_port == 0);
  }
  if (strcmp(got, want) != 0)
    FAIL("offender %s, expected %s", got, want);
  CHECK(ctx.calls_after_close == 0);
  CHECK(r == 0);
  return CASE_OK;
}

static int case_one_report_ipv4(void) {
  return case_one_report(AF_INET);
}

static int case_one_report_ipv6(void) {
  return case_one_report(AF_INET6);
}

static int case_report_burst(void) {
  struct sockaddr_storage dst;
  struct sockaddr_in* d4;
  char seq[256];
  int rcvbuf;
  int nsres;
  int fd;
  int n;
  int i;
  int r;

  nsres = private_netns();
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
  CHECK_UV(uv_udp_recv_start(&ctx.udp, on_alloc, on_recv));
  ctx.report_expected = n;
  ctx.report_seen = calloc((size_t) n, 1);
  CHECK(ctx.report_seen != NULL);

  /* One report per offender 127.0.1.(i + 1), so each is identifiable. */
  CHECK(closed_port(AF_INET, &dst) == 0);
  d4 = (struct sockaddr_in*) &dst;
  fd = udp_fd();
  for (i = 0; i < n; i++) {
    d4->sin_addr.s_addr = htonl(0x7f000100UL + (unsigned long) i + 1);
    CHECK(send_for_report(fd, &dst) == 0);
  }
  r = run_and_close();
  note("report_burst");

  format_list(seq, sizeof(seq), ctx.reports_per_iter, ctx.report_iters);
  if (ctx.reports != n || ctx.report_dup || ctx.report_bad)
    FAIL("expected %d distinct reports, got %ld (duplicates %ld, bad %ld, "
         "plain errors %ld, %ld iterations, per iteration: %s)",
         n, ctx.reports, ctx.report_dup, ctx.report_bad, ctx.plain_errors,
         ctx.iterations, seq[0] ? seq : "none");
  for (i = 0; i < ctx.report_iters; i++)
    if (ctx.reports_per_iter[i] > REPORT_BUDGET)
      FAIL("%ld reports in one iteration, budget %d (per iteration: %s)",
           ctx.reports_per_iter[i], REPORT_BUDGET, seq);
  CHECK(ctx.report_iters == (n + REPORT_BUDGET - 1) / REPORT_BUDGET);
  CHECK(ctx.plain_errors == 0);
  if (ctx.iterations > 9 + ctx.report_iters)
    FAIL("loop spun: %ld iterations in %d ms", ctx.iterations, RUN_MS);
  CHECK(r == 0);
  free(ctx.report_seen);
  return CASE_OK;
}

static void on_send(uv_udp_send_t* req, int status) {
  ctx.send_cbs++;
  if (status == 0)
    ctx.send_ok++;
  else if (status == UV_ECONNREFUSED)
    ctx.send_refused++;
  else {
    ctx.send_other++;
    ctx.send_other_status = status;
  }
  free(req);
}

static int case_send_only(int connected) {
  struct sockaddr_storage dst;
  uv_udp_send_t* req;
  uv_buf_t buf;
  int sndbuf;
  int n;
  int i;
  int r;

  n = 2000;
  CHECK_UV(setup(AF_INET, UV_UDP_LINUX_RECVERR));
  sndbuf = 4096;
  CHECK_UV(uv_send_buffer_size((uv_handle_t*) &ctx.udp, &sndbuf));
  CHECK(closed_port(AF_INET, &dst) == 0);
  if (connected)
    CHECK_UV(uv_udp_connect(&ctx.udp, (const struct sockaddr*) &dst));

  buf = uv_buf_init("send-only", 9);
  for (i = 0; i < n; i++) {
    req = malloc(sizeof(*req));
    CHECK(req != NULL);
    r = uv_udp_send(req,
                    &ctx.udp,
                    &buf,
                    1,
                    connected ? NULL : (const struct sockaddr*) &dst,
                    on_send);
    if (r != 0) {
      free(req);
      FAIL("uv_udp_send #%d: %s", i, uv_strerror(r));
    }
  }
  r = run_and_close();
  note(connected ? "send_only_connected" : "send_only_unconnected");

  if (ctx.send_cbs != n)
    FAIL("%ld of %d send callbacks ran", ctx.send_cbs, n);
  if (ctx.send_other != 0)
    FAIL("%ld sends failed with %s", ctx.send_other,
         uv_err_name(ctx.send_other_status));
  CHECK(ctx.alloc_calls == 0);
  CHECK(ctx.recv_calls == 0);
  if (ctx.iterations > 50)
    FAIL("loop spun: %ld iterations in %d ms", ctx.iterations, RUN_MS);
  CHECK(r == 0);
  return CASE_OK;
}

static int case_send_only_unconnected(void) {
  return case_send_only(0);
}

static int case_send_only_connected(void) {
  return case_send_only(1);
}

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
  static const long want[] = { 32, 32, 32, 4 };
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
    SKIP("recvmmsg not available");
  CHECK_UV(uv_udp_recv_start(&ctx.udp, on_alloc, on_recv));
  ctx.data_expected = ndata;
  ctx.data_seen = calloc((size_t) ndata, 1);
  CHECK(ctx.data_seen != NULL);

  CHECK(closed_port(AF_INET, &dst) == 0);
  fd = udp_fd();
  for (i = 0; i < nrep; i++)
    CHECK(send_for_report(fd, &dst) == 0);
  CHECK(send_datagrams(ndata) == 0);
  r = run_and_close();
  note(mmsg ? "data_and_reports_mmsg" : "data_and_reports");

  format_list(seq, sizeof(seq), ctx.data_per_iter, ctx.data_iters);
  if (ctx.datagrams != ndata || ctx.data_dup != 0)
    FAIL("%ld of %d datagrams delivered, %ld twice", ctx.datagrams, ndata,
         ctx.data_dup);
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
    FAIL("datagrams per iteration: %s, expected 32 32 32 4 (reports %ld, "
         "plain errors %ld, %ld iterations)", seq, ctx.reports,
         ctx.plain_errors, ctx.iterations);
  if (ctx.reports != nrep || ctx.plain_errors != 0)
    FAIL("expected %d reports and no plain error, got %ld and %ld (first "
         "plain error %s)", nrep, ctx.reports, ctx.plain_errors,
         ctx.plain_errors ? uv_err_name((int) ctx.plain_err) : "-");
  if (ctx.iterations > 9 + ctx.data_iters)
    FAIL("loop spun: %ld iterations in %d ms", ctx.iterations, RUN_MS);
  CHECK(r == 0);
  free(ctx.data_seen);
  return CASE_OK;
}

static int case_data_and_reports(void) {
  return data_and_reports(0);
}

static int case_data_and_reports_mmsg(void) {
  return data_and_reports(1);
}

static int case_close_on_first_report(void) {
  struct sockaddr_storage dst;
  int fd;
  int i;
  int r;

  CHECK_UV(setup(AF_INET, UV_UDP_LINUX_RECVERR));
  CHECK_UV(uv_udp_recv_start(&ctx.udp, on_alloc, on_recv));
  ctx.close_on_first_error = 1;
  CHECK(closed_port(AF_INET, &dst) == 0);
  fd = udp_fd();
  for (i = 0; i < 5; i++)
    CHECK(send_for_report(fd, &dst) == 0);
  CHECK(send_datagrams(10) == 0);
  r = run_and_close();
  note("close_on_first_report");

  CHECK(ctx.udp_closed);
  if (ctx.calls_after_close != 0)
    FAIL("%ld recv_cb calls after uv_close()", ctx.calls_after_close);
  if (ctx.reports + ctx.plain_errors != 1)
    FAIL("expected one error callback, got %ld reports and %ld plain "
         "errors", ctx.reports, ctx.plain_errors);
  if (ctx.reports != 1)
    FAIL("the first error was %s without UV_UDP_LINUX_RECVERR, not a report",
         uv_err_name((int) ctx.plain_err));
  CHECK(ctx.report_err == UV_ECONNREFUSED);
  if (r != 0)
    FAIL("uv_loop_close: %s", uv_strerror(r));
  return CASE_OK;
}

#else  /* !__linux__ */

#define LINUX_ONLY                                                            \
  SKIP("Linux only: IP_RECVERR and the socket error queue")

static int case_one_report_ipv4(void) { LINUX_ONLY; }
static int case_one_report_ipv6(void) { LINUX_ONLY; }
static int case_report_burst(void) { LINUX_ONLY; }
static int case_send_only_unconnected(void) { LINUX_ONLY; }
static int case_send_only_connected(void) { LINUX_ONLY; }
static int case_data_and_reports(void) { LINUX_ONLY; }
static int case_data_and_reports_mmsg(void) { LINUX_ONLY; }
static int case_close_on_first_report(void) { LINUX_ONLY; }

#endif  /* __linux__ */

static const test_case cases[] = {
  { "one_report_ipv4", case_one_report_ipv4 },
  { "one_report_ipv6", case_one_report_ipv6 },
  { "report_burst", case_report_burst },
  { "send_only_unconnected", case_send_only_unconnected },
  { "send_only_connected", case_send_only_connected },
  { "data_and_reports", case_data_and_reports },
  { "data_and_reports_mmsg", case_data_and_reports_mmsg },
  { "close_on_first_report", case_close_on_first_report },
  { NULL, NULL }
};

int main(int argc, char** argv) {
  return harness_main(cases, argc, argv);
}
