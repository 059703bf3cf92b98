/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * Regression cases for the socket error queue of a UDP handle bound with
 * UV_UDP_LINUX_RECVERR, in upstream's form (libuv v1.52.0, 80a5e3ba0):
 * Linux queues an ICMP error report on the socket's error queue, libuv
 * reads it on EPOLLERR and hands it to recv_cb after an alloc_cb call,
 * with the buffer alloc_cb gave, UV_UDP_LINUX_RECVERR in flags, nread the
 * negative UV_E* code (UV_ECONNREFUSED for a closed port) and addr the
 * offender. The patched libuv makes that form correct:
 *
 *   - nread is negative (upstream negates an unsigned ee_errno: nread
 *     4294967185 on a 64-bit machine);
 *   - each report reaches recv_cb once, with no duplicate plain
 *     ECONNREFUSED for the same ICMP message, reports and datagrams
 *     together at most 32 per readable event, and one pending report does
 *     not make the loop spin (v1.50.0, which never reads the queue, spins);
 *   - a handle that is not receiving (send only, or stopped) calls no
 *     callback and its sends complete (upstream calls a NULL alloc_cb);
 *     its reports stay queued on the socket;
 *   - a handle without UV_UDP_LINUX_RECVERR never reads the error queue.
 *
 * Every case bounds its loop with a one second uv timer, so a spinning
 * (unpatched) loop also ends and reports what it did. Each case runs in a
 * private network namespace when it can (root, or unprivileged user
 * namespaces), so that other traffic does not eat into the ICMP rate
 * limit. Only loopback addresses (127.0.0.0/8 and ::1) are sent to. Linux
 * only: elsewhere every case is skipped.
 */

#if defined(__linux__) && !defined(_GNU_SOURCE)
# define _GNU_SOURCE  /* unshare(), CLONE_NEWNET, RTLD_NEXT */
#endif

#include <uv.h>

#include "harness.h"
#include "netns.h"

#ifdef __linux__

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "handles.h"
#include "libc_recv.h"
#include "loopback.h"
#include "sends.h"

/* The drain budget of the patch: reports handed over per event. */
#define REPORT_BUDGET 32
/* The data budget of the receive path: datagrams per event. */
#define DATA_BUDGET 32
/* How long every case lets the loop run. */
#define RUN_MS 1000
/* Loop iterations one pending report may cost in RUN_MS. */
#define SPIN_BOUND 20
/* Bound on the per-iteration records kept. */
#define MAX_ITER 64
/* Sends of the paced cases, and the time between two of them. */
#define PACED_SENDS 3
#define PACE_MS 100

/* Reads of the error queue made in this process, libuv's included: the
 * program defines recvmsg() and recvmmsg(), which the static libuv it is
 * linked with calls, counts the calls with MSG_ERRQUEUE and passes every
 * call on to the C library.
 */
static long errqueue_reads;

ssize_t recvmsg(int fd, struct msghdr* msg, int flags) {
  if (flags & MSG_ERRQUEUE)
    errqueue_reads++;
  return libc_recvmsg(fd, msg, flags);
}

int recvmmsg(int fd,
             struct mmsghdr* msgs,
             unsigned int n,
             int flags,
             struct timespec* timeout) {
  if (flags & MSG_ERRQUEUE)
    errqueue_reads++;
  return libc_recvmmsg(fd, msgs, n, flags, timeout);
}

typedef struct {
  uv_loop_t loop;
  uv_udp_t udp;
  uv_timer_t timer;
  uv_timer_t pace;
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
  /* The buffer alloc_cb gave last. */
  char* alloc_base;
  size_t alloc_len;
  /* The first report. */
  ssize_t report_nread;
  unsigned report_flags;
  struct sockaddr_storage report_addr;
  int report_has_addr;
  long report_allocs;  /* alloc_cb calls before it. */
  int report_buf_null;
  int report_buf_in_alloc;  /* In the buffer alloc_cb gave last. */
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
  /* Set once uv_udp_recv_stop() ran: no alloc_cb or recv_cb after it. */
  int stopped;
  long calls_after_stop;
  /* Send cases. */
  send_tally sends;
  /* Paced sends. */
  struct sockaddr_storage pace_dst;
  int pace_connected;
  int paced;
  int pace_failed;
  /* Reads of the error queue while the loop ran. */
  long errqueue_reads;
  /* Reports still queued when the timer fired. */
  long left_queued;
} ctx_t;

static ctx_t ctx;

static void on_alloc(uv_handle_t* handle, size_t size, uv_buf_t* buf) {
  ctx.alloc_calls++;
  if (ctx.stopped)
    ctx.calls_after_stop++;
  /* In recvmmsg mode, room for several datagrams per call. */
  if (uv_udp_using_recvmmsg((uv_udp_t*) handle))
    size *= 8;
  buf->base = malloc(size);
  buf->len = buf->base == NULL ? 0 : size;
  ctx.alloc_base = buf->base;
  ctx.alloc_len = buf->len;
}

static void on_udp_close(uv_handle_t* handle) {
  (void) handle;
  ctx.udp_closed = 1;
}

static void close_all(void) {
  close_once(&ctx.udp, on_udp_close);
  close_once(&ctx.timer, NULL);
  close_once(&ctx.pace, NULL);
  close_once(&ctx.check, NULL);
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

/* Counts (and takes off) the reports still on the error queue. */
static long count_queued_reports(void) {
  uv_os_fd_t fd;

  if (uv_is_closing((uv_handle_t*) &ctx.udp) ||
      uv_fileno((uv_handle_t*) &ctx.udp, &fd) != 0)
    return -1;
  return take_errqueue(fd, 100000);
}

static void on_timer(uv_timer_t* timer) {
  (void) timer;
  ctx.errqueue_reads = errqueue_reads;
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
          "reports=%ld (first nread %ld) plain_errors=%ld alloc=%ld "
          "sends=%ld (ok %ld, refused %ld) errqueue_reads=%ld "
          "left_queued=%ld data/iter=[%s] reports/iter=[%s]\n",
          name, ctx.iterations, ctx.recv_calls, ctx.empty_reads,
          ctx.datagrams, ctx.reports, (long) ctx.report_nread,
          ctx.plain_errors, ctx.alloc_calls, ctx.sends.cbs, ctx.sends.ok,
          ctx.sends.refused, ctx.errqueue_reads, ctx.left_queued, data, reps);
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

static void on_report(ssize_t nread,
                      const uv_buf_t* buf,
                      const struct sockaddr* addr,
                      unsigned flags) {
  int i;

  if (ctx.reports == 0) {
    ctx.report_nread = nread;
    ctx.report_flags = flags;
    ctx.report_allocs = ctx.alloc_calls;
    ctx.report_buf_null = buf == NULL || buf->base == NULL;
    ctx.report_buf_in_alloc =
        !ctx.report_buf_null && ctx.alloc_base != NULL &&
        buf->base >= ctx.alloc_base &&
        buf->base + buf->len <= ctx.alloc_base + ctx.alloc_len &&
        buf->len > 0;
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
}

static void on_recv(uv_udp_t* handle,
                    ssize_t nread,
                    const uv_buf_t* buf,
                    const struct sockaddr* addr,
                    unsigned flags) {
  unsigned seq;

  ctx.recv_calls++;
  if (ctx.stopped)
    ctx.calls_after_stop++;
  if (ctx.udp_closed || uv_is_closing((uv_handle_t*) handle))
    ctx.calls_after_close++;

  if (flags & UV_UDP_MMSG_FREE) {
    free(buf->base);
    return;
  }

  /* A report is told by its flag, whatever nread says: upstream hands
   * reports over with a positive nread.
   */
  if (flags & UV_UDP_LINUX_RECVERR) {
    on_report(nread, buf, addr, flags);
  } else if (nread > 0) {
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
  } else {
    if (ctx.plain_errors == 0)
      ctx.plain_err = (long) nread;
    ctx.plain_errors++;
  }

  if (buf != NULL && buf->base != NULL && !(flags & UV_UDP_MMSG_CHUNK))
    free(buf->base);

  if ((nread < 0 || (flags & UV_UDP_LINUX_RECVERR)) &&
      ctx.close_on_first_error && !uv_is_closing((uv_handle_t*) handle))
    close_all();
}

/* Moves into a private network namespace once (netns.h), so that the ICMP
 * rate limit is this case's alone. Returns 0 or the errno value that kept
 * it in the machine's namespace, where it goes on (stay within the ICMP
 * burst of 50 there).
 */
static int enter_netns(void) {
  static int entered;
  static int err;

  if (!entered) {
    err = private_netns();
    entered = 1;
  }
  return err;
}

/* The run's timers and the check handle that counts iterations. */
static int setup_timers(void) {
  int r;

  r = uv_timer_init(&ctx.loop, &ctx.timer);
  if (r == 0)
    r = uv_timer_init(&ctx.loop, &ctx.pace);
  if (r == 0)
    r = uv_check_init(&ctx.loop, &ctx.check);
  if (r == 0)
    r = uv_check_start(&ctx.check, on_check);
  return r;
}

static int setup_ex(int family, unsigned bind_flags, unsigned init_flags) {
  struct sockaddr_storage ss;
  int r;

  enter_netns();
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
    r = setup_timers();
  return r;
}

static int setup(int family, unsigned bind_flags) {
  return setup_ex(family, bind_flags, 0);
}

/* Runs the loop until the timer closes everything, then closes the loop.
 * Returns what uv_loop_close() returned.
 */
static int run_and_close(void) {
  errqueue_reads = 0;
  uv_timer_start(&ctx.timer, on_timer, RUN_MS, 0);
  uv_run(&ctx.loop, UV_RUN_DEFAULT);
  return uv_loop_close(&ctx.loop);
}

static int udp_fd(void) {
  uv_os_fd_t fd;

  if (uv_fileno((uv_handle_t*) &ctx.udp, &fd) != 0)
    return -1;
  return fd;
}

/* Sends PACED_SENDS datagrams through libuv, PACE_MS apart, so that each
 * ICMP error arrives in a loop iteration of its own.
 */
static void on_pace(uv_timer_t* timer) {
  uv_buf_t buf;
  int r;

  buf = uv_buf_init("paced", 5);
  r = uv_udp_try_send(&ctx.udp,
                      &buf,
                      1,
                      ctx.pace_connected
                          ? NULL
                          : (const struct sockaddr*) &ctx.pace_dst);
  if (r == UV_ECONNREFUSED) {
    /* A socket error still pending: the send consumed it. */
    ctx.sends.refused++;
    r = uv_udp_try_send(&ctx.udp,
                        &buf,
                        1,
                        ctx.pace_connected
                            ? NULL
                            : (const struct sockaddr*) &ctx.pace_dst);
  }
  if (r != 5)
    ctx.pace_failed = r;
  if (++ctx.paced == PACED_SENDS)
    uv_timer_stop(timer);
}

static int start_paced_sends(int connected) {
  int r;

  r = closed_port(AF_INET, &ctx.pace_dst);
  if (r != 0)
    return UV_EADDRNOTAVAIL;
  ctx.pace_connected = connected;
  if (connected) {
    r = uv_udp_connect(&ctx.udp, (const struct sockaddr*) &ctx.pace_dst);
    if (r != 0)
      return r;
  }
  return uv_timer_start(&ctx.pace, on_pace, PACE_MS / 2, PACE_MS);
}

/* One report queued on a receiving RECVERR handle of the family, then the
 * loop runs for RUN_MS.
 */
static int run_one_report(int family, const char* name) {
  struct sockaddr_storage dst;
  int r;

  CHECK_UV(setup(family, UV_UDP_LINUX_RECVERR));
  CHECK_UV(uv_udp_recv_start(&ctx.udp, on_alloc, on_recv));
  CHECK_EQ(closed_port(family, &dst), 0);
  CHECK_EQ(send_for_report(udp_fd(), &dst), 0);
  r = run_and_close();
  note(name);
  if (r != 0)
    FAIL("uv_loop_close: %s", uv_strerror(r));
  return CASE_OK;
}

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

  enter_netns();
  if (family == AF_INET6 && no_ipv6())
    SKIP("no IPv6 loopback (::1) on this machine");
  if (run_one_report(family, name) != CASE_OK)
    return CASE_FAIL;

  CHECK_GOT_REPORT();
  if (ctx.reports != 1 || ctx.plain_errors != 0)
    FAIL("one ICMP error gave %ld reports and %ld plain errors (first %s)",
         ctx.reports, ctx.plain_errors,
         ctx.plain_errors ? uv_err_name((int) ctx.plain_err) : "-");
  if (ctx.report_nread != UV_ECONNREFUSED)
    FAIL("report nread %ld, expected UV_ECONNREFUSED (%d)",
         (long) ctx.report_nread, UV_ECONNREFUSED);
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

static int case_one_report_ipv4(void) {
  return case_one_report(AF_INET, "one_report_ipv4");
}

/* uv_udp_open_ex() with UV_UDP_LINUX_RECVERR, of a socket that its owner
 * bound: IP_RECVERR is set, and one ICMP error is one report.
 */
static int case_open_ex_recverr(void) {
#if UV_VERSION_HEX < 0x013400
  SKIP("uv_udp_open_ex() came in libuv 1.52.0");
#else
  struct sockaddr_storage dst;
  struct sockaddr_in sin;
  socklen_t len;
  int value;
  int fd;
  int r;

  enter_netns();
  memset(&ctx, 0, sizeof(ctx));
  CHECK_UV(uv_loop_init(&ctx.loop));
  fd = socket(AF_INET, SOCK_DGRAM, 0);
  CHECK_GE(fd, 0);
  memset(&sin, 0, sizeof(sin));
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  CHECK_EQ(bind(fd, (struct sockaddr*) &sin, sizeof(sin)), 0);
  CHECK_UV(uv_udp_init(&ctx.loop, &ctx.udp));
  r = uv_udp_open_ex(&ctx.udp, fd, UV_UDP_LINUX_RECVERR);
  if (r != 0)
    FAIL("uv_udp_open_ex(UV_UDP_LINUX_RECVERR): %s", uv_strerror(r));
  value = 0;
  len = sizeof(value);
  CHECK_EQ(getsockopt(fd, IPPROTO_IP, IP_RECVERR, &value, &len), 0);
  CHECK_EQ(value, 1);
  CHECK_UV(setup_timers());
  CHECK_UV(uv_udp_recv_start(&ctx.udp, on_alloc, on_recv));
  CHECK_EQ(closed_port(AF_INET, &dst), 0);
  CHECK_EQ(send_for_report(fd, &dst), 0);
  r = run_and_close();
  note("open_ex_recverr");
  if (r != 0)
    FAIL("uv_loop_close: %s", uv_strerror(r));
  CHECK_GOT_REPORT();
  if (ctx.reports != 1 || ctx.plain_errors != 0)
    FAIL("one ICMP error gave %ld reports and %ld plain errors (first %s)",
         ctx.reports, ctx.plain_errors,
         ctx.plain_errors ? uv_err_name((int) ctx.plain_err) : "-");
  return CASE_OK;
#endif
}

static int case_one_report_ipv6(void) {
  return case_one_report(AF_INET6, "one_report_ipv6");
}

static int case_negative_nread(void) {
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
}

static int case_alloc_cb_buffer(void) {
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
}

static int case_one_report_no_spin(void) {
  if (run_one_report(AF_INET, "one_report_no_spin") != CASE_OK)
    return CASE_FAIL;
  if (ctx.iterations > SPIN_BOUND)
    FAIL("loop spun: %ld iterations in %d ms with one queued report, bound "
         "%d (recv_cb calls %ld, of which empty %ld, reports %ld, plain "
         "errors %ld)", ctx.iterations, RUN_MS, SPIN_BOUND, ctx.recv_calls,
         ctx.empty_reads, ctx.reports, ctx.plain_errors);
  return CASE_OK;
}

static int case_three_reports_once(void) {
  int r;

  CHECK_UV(setup(AF_INET, UV_UDP_LINUX_RECVERR));
  CHECK_UV(uv_udp_recv_start(&ctx.udp, on_alloc, on_recv));
  CHECK_UV(start_paced_sends(0));
  r = run_and_close();
  note("three_reports_once");

  if (ctx.pace_failed != 0)
    FAIL("uv_udp_try_send: %s", uv_strerror(ctx.pace_failed));
  CHECK_EQ(ctx.paced, PACED_SENDS);
  if (ctx.reports != PACED_SENDS || ctx.plain_errors != 0)
    FAIL("%d ICMP errors gave %ld reports and %ld plain errors (first %s), "
         "expected %d reports and no plain error",
         PACED_SENDS, ctx.reports, ctx.plain_errors,
         ctx.plain_errors ? uv_err_name((int) ctx.plain_err) : "-",
         PACED_SENDS);
  if (r != 0)
    FAIL("uv_loop_close: %s", uv_strerror(r));
  return CASE_OK;
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

  nsres = enter_netns();
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
  CHECK_EQ(closed_port(AF_INET, &dst), 0);
  d4 = (struct sockaddr_in*) &dst;
  fd = udp_fd();
  for (i = 0; i < n; i++) {
    d4->sin_addr.s_addr = htonl(0x7f000100UL + (unsigned long) i + 1);
    CHECK_EQ(send_for_report(fd, &dst), 0);
  }
  r = run_and_close();
  note("report_burst");

  format_list(seq, sizeof(seq), ctx.reports_per_iter, ctx.report_iters);
  if (ctx.reports != n || ctx.report_dup || ctx.report_bad)
    FAIL("expected %d distinct reports with nread UV_ECONNREFUSED, got %ld "
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
  if (ctx.plain_errors != 0)
    FAIL("%ld plain errors beside the reports (first %s)", ctx.plain_errors,
         uv_err_name((int) ctx.plain_err));
  if (ctx.iterations > SPIN_BOUND + ctx.report_iters)
    FAIL("loop spun: %ld iterations in %d ms", ctx.iterations, RUN_MS);
  CHECK_EQ(r, 0);
  free(ctx.report_seen);
  return CASE_OK;
}

/* A RECVERR handle that does not receive queues n sends to a closed port:
 * ICMP errors come back while sends are still queued, so the loop polls
 * the socket for POLLOUT and gets EPOLLERR. With stop_first, the handle
 * received first and stopped.
 */
static int send_only(int connected, int stop_first, const char* name) {
  struct sockaddr_storage dst;
  const char* why;
  uv_buf_t buf;
  int sndbuf;
  int n;
  int i;
  int r;

  n = 2000;
  CHECK_UV(setup(AF_INET, UV_UDP_LINUX_RECVERR));
  if (stop_first) {
    CHECK_UV(uv_udp_recv_start(&ctx.udp, on_alloc, on_recv));
    uv_run(&ctx.loop, UV_RUN_NOWAIT);
    CHECK_UV(uv_udp_recv_stop(&ctx.udp));
    ctx.stopped = 1;
  }
  sndbuf = 4096;
  CHECK_UV(uv_send_buffer_size((uv_handle_t*) &ctx.udp, &sndbuf));
  CHECK_EQ(closed_port(AF_INET, &dst), 0);
  if (connected)
    CHECK_UV(uv_udp_connect(&ctx.udp, (const struct sockaddr*) &dst));

  buf = uv_buf_init("send-only", 9);
  r = send_n(&ctx.udp,
             &ctx.sends,
             &buf,
             n,
             connected ? NULL : (const struct sockaddr*) &dst,
             &i);
  if (r != 0)
    FAIL("uv_udp_send #%d: %s", i, uv_strerror(r));
  r = run_and_close();
  note(name);

  if ((why = sends_missing(&ctx.sends, n)) != NULL ||
      (why = sends_failed(&ctx.sends)) != NULL)
    FAIL("%s", why);
  if (stop_first && ctx.calls_after_stop != 0)
    FAIL("%ld alloc_cb/recv_cb calls after uv_udp_recv_stop()",
         ctx.calls_after_stop);
  if (!stop_first && ctx.alloc_calls + ctx.recv_calls != 0)
    FAIL("%ld alloc_cb and %ld recv_cb calls on a handle that never "
         "received", ctx.alloc_calls, ctx.recv_calls);
  if (ctx.iterations > 50)
    FAIL("loop spun: %ld iterations in %d ms", ctx.iterations, RUN_MS);
  CHECK_EQ(r, 0);
  return CASE_OK;
}

static int case_send_only_unconnected(void) {
  return send_only(0, 0, "send_only_unconnected");
}

static int case_send_only_connected(void) {
  return send_only(1, 0, "send_only_connected");
}

static int case_stopped_handle_sends(void) {
  return send_only(0, 1, "stopped_handle_sends");
}

/* A receiving connected handle without UV_UDP_LINUX_RECVERR: the kernel
 * sets the socket error for each ICMP error (EPOLLERR) and queues nothing
 * on the error queue. libuv reads the queue once per EPOLLERR, as upstream
 * does, and finds nothing there.
 */
static int errqueue_reads_case(int mmsg, const char* name) {
  int r;

  CHECK_UV(setup_ex(AF_INET, 0, mmsg ? UV_UDP_RECVMMSG : 0));
  if (mmsg && !uv_udp_using_recvmmsg(&ctx.udp))
    SKIP("recvmmsg is not supported here (uv_udp_using_recvmmsg)");
  CHECK_UV(uv_udp_recv_start(&ctx.udp, on_alloc, on_recv));
  CHECK_UV(start_paced_sends(1));
  r = run_and_close();
  note(name);

  if (ctx.pace_failed != 0)
    FAIL("uv_udp_try_send: %s", uv_strerror(ctx.pace_failed));
  if (ctx.plain_errors == 0 && ctx.sends.refused == 0)
    FAIL("no ECONNREFUSED came back: no EPOLLERR to judge by");
  if (ctx.errqueue_reads > PACED_SENDS)
    FAIL("%ld reads of the error queue (MSG_ERRQUEUE) on a socket without "
         "UV_UDP_LINUX_RECVERR, for %d ICMP errors: more than one each",
         ctx.errqueue_reads, PACED_SENDS);
  if (ctx.reports != 0)
    FAIL("%ld reports on a socket without UV_UDP_LINUX_RECVERR",
         ctx.reports);
  if (r != 0)
    FAIL("uv_loop_close: %s", uv_strerror(r));
  return CASE_OK;
}

static int case_errqueue_reads_without_flag(void) {
  return errqueue_reads_case(0, "errqueue_reads_without_flag");
}

static int case_errqueue_reads_without_flag_mmsg(void) {
  return errqueue_reads_case(1, "errqueue_reads_without_flag_mmsg");
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
  CHECK_UV(uv_udp_recv_start(&ctx.udp, on_alloc, on_recv));
  ctx.data_expected = ndata;
  ctx.data_seen = calloc((size_t) ndata, 1);
  CHECK(ctx.data_seen != NULL);

  CHECK_EQ(closed_port(AF_INET, &dst), 0);
  fd = udp_fd();
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
  if (ctx.report_nread != UV_ECONNREFUSED)
    FAIL("report nread %ld, expected UV_ECONNREFUSED",
         (long) ctx.report_nread);
  if (ctx.iterations > SPIN_BOUND + ctx.data_iters)
    FAIL("loop spun: %ld iterations in %d ms", ctx.iterations, RUN_MS);
  CHECK_EQ(r, 0);
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
  CHECK_EQ(closed_port(AF_INET, &dst), 0);
  fd = udp_fd();
  for (i = 0; i < 5; i++)
    CHECK_EQ(send_for_report(fd, &dst), 0);
  CHECK_EQ(send_datagrams(10), 0);
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
  if (ctx.report_nread != UV_ECONNREFUSED)
    FAIL("report nread %ld, expected UV_ECONNREFUSED",
         (long) ctx.report_nread);
  if (r != 0)
    FAIL("uv_loop_close: %s", uv_strerror(r));
  return CASE_OK;
}

#else  /* !__linux__ */

#define LINUX_ONLY                                                            \
  SKIP("Linux only: IP_RECVERR and the socket error queue")

static int case_one_report_ipv4(void) { LINUX_ONLY; }
static int case_one_report_ipv6(void) { LINUX_ONLY; }
static int case_open_ex_recverr(void) { LINUX_ONLY; }
static int case_negative_nread(void) { LINUX_ONLY; }
static int case_alloc_cb_buffer(void) { LINUX_ONLY; }
static int case_one_report_no_spin(void) { LINUX_ONLY; }
static int case_three_reports_once(void) { LINUX_ONLY; }
static int case_report_burst(void) { LINUX_ONLY; }
static int case_send_only_unconnected(void) { LINUX_ONLY; }
static int case_send_only_connected(void) { LINUX_ONLY; }
static int case_stopped_handle_sends(void) { LINUX_ONLY; }
static int case_errqueue_reads_without_flag(void) { LINUX_ONLY; }
static int case_errqueue_reads_without_flag_mmsg(void) { LINUX_ONLY; }
static int case_data_and_reports(void) { LINUX_ONLY; }
static int case_data_and_reports_mmsg(void) { LINUX_ONLY; }
static int case_close_on_first_report(void) { LINUX_ONLY; }

#endif  /* __linux__ */

static const test_case cases[] = {
  { "one_report_ipv4", case_one_report_ipv4 },
  { "one_report_ipv6", case_one_report_ipv6 },
  { "open_ex_recverr", case_open_ex_recverr },
  { "negative_nread", case_negative_nread },
  { "alloc_cb_buffer", case_alloc_cb_buffer },
  { "one_report_no_spin", case_one_report_no_spin },
  { "three_reports_once", case_three_reports_once },
  { "report_burst", case_report_burst },
  { "send_only_unconnected", case_send_only_unconnected },
  { "send_only_connected", case_send_only_connected },
  { "stopped_handle_sends", case_stopped_handle_sends },
  { "errqueue_reads_without_flag", case_errqueue_reads_without_flag },
  { "errqueue_reads_without_flag_mmsg",
    case_errqueue_reads_without_flag_mmsg },
  { "data_and_reports", case_data_and_reports },
  { "data_and_reports_mmsg", case_data_and_reports_mmsg },
  { "close_on_first_report", case_close_on_first_report },
  { NULL, NULL }
};

int main(int argc, char** argv) {
  return harness_main(cases, argc, argv);
}
