/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The paths to the socket error queue that udp_matrix does not take
 * (issue 28). On POLLERR the patched libuv reads the error queue of every
 * receiving UDP handle first, in one budget of 32 per event shared with
 * the datagrams (reports at most 16 of it while datagrams wait); upstream
 * reads the datagrams first, then the error queue with a budget of its
 * own. The cases:
 *
 *   - backlog_recverr_setsockopt: a handle bound without the flag, whose
 *     socket gets IP_RECVERR by setsockopt() after uv_udp_bind(); 20,000
 *     datagrams queued, recv_cb spends 20 us on each; a second process
 *     sends from the handle's socket to a closed port every 10 ms. The
 *     latency of a report (send to recv_cb), median and max.
 *   - backlog_timestamping: the same without IP_RECVERR, with
 *     SO_TIMESTAMPING: each send queues a TX timestamp on the error queue
 *     (ee_errno ENOMSG, an IP_RECVERR cmsg), a report for libuv.
 *   - report_flood_mmsg: 1,000 reports queued on a UV_UDP_RECVMMSG handle
 *     bound with UV_UDP_LINUX_RECVERR (20 chunks of 64 KiB), drained:
 *     recvmmsg() calls with MSG_ERRQUEUE, alloc_cb calls, CPU time.
 *   - {stop,restart,close}_with_backlog_{msg,mmsg}: 20 reports and 50
 *     datagrams queued, then uv_udp_recv_stop() (and recv_start 100 ms
 *     later), stop and start again, or uv_close(), in the first recv_cb
 *     that hands something over. lost is what libuv read off the socket
 *     (counted in recvmsg()/recvmmsg(), which the program defines) and
 *     never handed over.
 *   - dual_stack_mapped: a [::] handle (not V6ONLY) bound with the flag,
 *     so only IPV6_RECVERR is set, connected to ::ffff:127.0.0.1 on a
 *     closed port; 3 datagrams 100 ms apart. Reads of the error queue per
 *     ICMP error, and the plain errors.
 *
 * Each case prints {"paths": NAME, ...} on stdout, then its result line,
 * and judges itself by bounds that upstream v1.x (6179e7af) meets, so
 * that the patched tree is no worse: a report's median latency <= 5 ms and
 * some reports while the backlog drains; the flood in <= 65 error-queue
 * recvmmsg() calls and <= 98 alloc_cb calls (1.3 times upstream's 50 and
 * 75), every report once; lost <= one recvmmsg batch (20), none with
 * recvmsg, nothing but one UV_UDP_MMSG_FREE while stopped, every buffer
 * of alloc_cb given back; at most one error-queue read per ICMP error and
 * one plain error for each. Every case runs in a private network
 * namespace (netns.h, ICMP rate limits raised) and sends to loopback
 * only. Linux only: elsewhere every case is skipped.
 */

#if defined(__linux__) && !defined(_GNU_SOURCE)
# define _GNU_SOURCE  /* unshare(), CLONE_NEWNET, RTLD_NEXT */
#endif

#include <stdint.h>
#include <uv.h>

#include "harness.h"
#include "netns.h"

#ifdef __linux__

#include <arpa/inet.h>
#include <errno.h>
#include <linux/net_tstamp.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "dgram.h"
#include "libc_recv.h"
#include "loopback.h"
#include "stats.h"

#define DGRAM_MAX (64 * 1024)
#define MMSG_CHUNKS 20
/* The backlog cases. */
#define BACKLOG 20000
#define BIG_RCVBUF (64 * 1024 * 1024)
#define SPEND_NS 20000
#define PROBE_MS 10
#define MAX_PROBES 150
#define MEDIAN_MS 5
/* The flood, and upstream's figures times 1.3. */
#define FLOOD 1000
#define FLOOD_ERRQ_CALLS 65
#define FLOOD_ALLOCS 98
/* The stop, restart and close cases. */
#define MIXED_REPORTS 20
#define MIXED_DATAGRAMS 50
#define RESUME_MS 100
/* The dual-stack case. */
#define MAPPED_SENDS 3
#define PACE_MS 100
/* The longest a case runs its loop. */
#define SAFETY_MS 1400
#define LENT_MAX 8
/* A probe's payload: MAGIC, then its number; a TX timestamp returns the
 * whole frame, so it is looked for in the first SCAN bytes.
 */
#define MAGIC "uvP!"
#define SCAN 64

enum { K_BACKLOG, K_FLOOD, K_MIXED, K_MAPPED };
enum { ACT_NONE, ACT_STOP, ACT_RESTART, ACT_CLOSE };

/* The program's recvmsg() and recvmmsg(), which the static libuv calls:
 * on watch_fd they count the error-queue reads and the messages read.
 */
static int watch_fd = -1;
static long errq_calls;
static long errq_mmsg_calls;
static long msgs_read;

ssize_t recvmsg(int fd, struct msghdr* msg, int flags) {
  ssize_t r;

  r = libc_recvmsg(fd, msg, flags);
  if (fd == watch_fd) {
    errq_calls += (flags & MSG_ERRQUEUE) != 0;
    msgs_read += r >= 0;
  }
  return r;
}

int recvmmsg(int fd,
             struct mmsghdr* msgs,
             unsigned int n,
             int flags,
             struct timespec* timeout) {
  int r;

  r = libc_recvmmsg(fd, msgs, n, flags, timeout);
  if (fd == watch_fd) {
    errq_calls += (flags & MSG_ERRQUEUE) != 0;
    errq_mmsg_calls += (flags & MSG_ERRQUEUE) != 0;
    msgs_read += r > 0 ? r : 0;
  }
  return r;
}

/* The prober, a child process: sends from the handle's socket. */
typedef struct {
  int fd;
  struct sockaddr_in dst;
  volatile int stop;
  volatile long sent;
  volatile int failed;
  volatile uint64_t sent_ns[MAX_PROBES];
} probe_t;

typedef struct {
  uv_loop_t loop;
  uv_udp_t udp;
  uv_timer_t end;
  uv_timer_t timer;
  uv_check_t check;
  int kind;
  int act;
  int mmsg;
  int fd;
  long allocs;
  long lent;
  char* lentp[LENT_MAX];
  long reports;
  long report_nread;
  long datagrams;
  long plain;
  long first_plain;
  long empty;
  long frees;
  long dups;
  unsigned char seen[FLOOD];
  int ending;
  /* Backlog. */
  probe_t* probe;
  int drained;
  long in_drain;
  long nlat;
  uint64_t lat[MAX_PROBES];
  /* Stop, restart, close. */
  int acted;
  int stopped;
  int closed;
  long expected;
  long calls_stopped;
  long frees_stopped;
  long calls_closed;
  long chunks_closed;
  /* Dual stack. */
  struct sockaddr_in6 mapped;
  long sent;
  long send_refused;
  char err[160];
} pctx;

static pctx P;

static void loop_error(const char* fmt, ...) {
  va_list ap;

  va_start(ap, fmt);
  harness_note_first(P.err, sizeof(P.err), fmt, ap);
  va_end(ap);
}

static void on_alloc(uv_handle_t* handle, size_t suggested, uv_buf_t* buf) {
  size_t len;
  size_t k;
  int i;

  (void) handle;
  (void) suggested;
  P.allocs++;
  P.calls_stopped += P.stopped;
  P.calls_closed += P.closed;
  *buf = uv_buf_init(NULL, 0);
  for (i = 0; i < LENT_MAX && P.lentp[i] != NULL; i++)
    ;
  if (i == LENT_MAX) {
    loop_error("more than %d buffers lent at once", LENT_MAX);
    return;
  }
  len = P.mmsg ? (size_t) MMSG_CHUNKS * DGRAM_MAX : DGRAM_MAX;
  buf->base = malloc(len);
  if (buf->base == NULL)
    return;
  for (k = 0; k < len; k += DGRAM_MAX)
    memset(buf->base + k, 0, SCAN);
  buf->len = len;
  P.lentp[i] = buf->base;
  P.lent++;
}

static void give_back(char* p) {
  int i;

  for (i = 0; i < LENT_MAX; i++)
    if (P.lentp[i] == p && p != NULL) {
      P.lentp[i] = NULL;
      P.lent--;
      free(p);
      return;
    }
}

/* The number after MAGIC in a report's payload, or -1. */
static long find_seq(const char* p) {
  int i;

  for (i = 0; p != NULL && i + 8 <= SCAN; i++)
    if (memcmp(p + i, MAGIC, 4) == 0)
      return (long) get_seq(p + i + 4);
  return -1;
}

static void close_all(void) {
  if (!uv_is_closing((uv_handle_t*) &P.udp))
    uv_close((uv_handle_t*) &P.udp, NULL);
  if (!uv_is_closing((uv_handle_t*) &P.end))
    uv_close((uv_handle_t*) &P.end, NULL);
  if (!uv_is_closing((uv_handle_t*) &P.timer))
    uv_close((uv_handle_t*) &P.timer, NULL);
  if (!uv_is_closing((uv_handle_t*) &P.check))
    uv_close((uv_handle_t*) &P.check, NULL);
}

static void on_end(uv_timer_t* timer) {
  (void) timer;
  watch_fd = -1;
  close_all();
}

/* Ends the run ms from now (once). */
static void end_in(uint64_t ms) {
  if (!P.ending)
    uv_timer_start(&P.end, on_end, ms, 0);
  P.ending = 1;
}

static void on_recv(uv_udp_t* handle,
                    ssize_t nread,
                    const uv_buf_t* buf,
                    const struct sockaddr* addr,
                    unsigned flags);

static void on_resume(uv_timer_t* timer) {
  int r;

  (void) timer;
  P.stopped = 0;
  r = uv_udp_recv_start(&P.udp, on_alloc, on_recv);
  if (r != 0)
    loop_error("uv_udp_recv_start: %s", uv_strerror(r));
}

/* Stop, restart or close, at the first report or datagram. */
static void act(uv_udp_t* handle) {
  P.acted = 1;
  if (P.act == ACT_CLOSE) {
    P.closed = 1;
    uv_close((uv_handle_t*) handle, NULL);
    return;
  }
  if (uv_udp_recv_stop(handle) != 0)
    loop_error("uv_udp_recv_stop failed");
  if (P.act == ACT_RESTART) {
    if (uv_udp_recv_start(handle, on_alloc, on_recv) != 0)
      loop_error("uv_udp_recv_start failed");
    return;
  }
  P.stopped = 1;
  uv_timer_start(&P.timer, on_resume, RESUME_MS, 0);
}

static void on_report(const char* payload) {
  long seq;

  seq = find_seq(payload);
  if (P.kind == K_BACKLOG && P.probe != NULL) {
    if (!P.drained)
      P.in_drain++;
    if (seq >= 0 && seq < P.probe->sent && P.nlat < MAX_PROBES)
      P.lat[P.nlat++] = uv_hrtime() - P.probe->sent_ns[seq];
  }
  if (seq >= 0 && seq < FLOOD) {
    P.dups += P.seen[seq];
    P.seen[seq] = 1;
  }
  if (P.kind == K_FLOOD && P.reports == FLOOD)
    end_in(20);
}

static void on_datagram(void) {
  uint64_t until;

  if (P.kind != K_BACKLOG)
    return;
  until = uv_hrtime() + SPEND_NS;
  while (uv_hrtime() < until)
    ;
  if (P.datagrams == BACKLOG) {
    P.drained = 1;
    P.probe->stop = 1;
    end_in(30);
  }
}

static void on_recv(uv_udp_t* handle,
                    ssize_t nread,
                    const uv_buf_t* buf,
                    const struct sockaddr* addr,
                    unsigned flags) {
  (void) addr;
  if (flags & UV_UDP_MMSG_FREE) {
    P.frees++;
    P.frees_stopped += P.stopped;
    give_back(buf->base);
    return;
  }
  P.calls_stopped += P.stopped;
  if (P.closed && (flags & UV_UDP_MMSG_CHUNK))
    P.chunks_closed++;
  else
    P.calls_closed += P.closed;
  if (flags & UV_UDP_LINUX_RECVERR) {
    /* Told by its flag: upstream gives a report a positive nread. */
    P.reports++;
    P.report_nread = (long) nread;
    on_report(buf->base);
  } else if (nread > 0) {
    P.datagrams++;
    on_datagram();
  } else if (nread < 0) {
    if (P.plain++ == 0)
      P.first_plain = (long) nread;
  } else {
    P.empty++;
  }
  if (!(flags & UV_UDP_MMSG_CHUNK) && buf != NULL)
    give_back(buf->base);
  if (P.act != ACT_NONE && !P.acted &&
      ((flags & UV_UDP_LINUX_RECVERR) || nread > 0))
    act(handle);
}

static void on_check(uv_check_t* check) {
  (void) check;
  /* The mixed cases end when all is handed over or lost, or closed. */
  if (P.kind == K_MIXED && !P.stopped && P.acted &&
      (P.closed ||
       P.reports + P.datagrams + (msgs_read - P.reports - P.datagrams) >=
           P.expected))
    end_in(10);
}

/* A loop, a handle bound to addr:0 and the timers. Returns 0 or a UV_E*
 * code.
 */
static int setup(int kind, const char* addr, unsigned init, unsigned bind) {
  struct sockaddr_storage ss;
  uv_os_fd_t fd;
  int r;

  memset(&P, 0, sizeof(P));
  P.kind = kind;
  P.mmsg = (init & UV_UDP_RECVMMSG) != 0;
  memset(&ss, 0, sizeof(ss));
  if (strchr(addr, ':') != NULL)
    r = uv_ip6_addr(addr, 0, (struct sockaddr_in6*) &ss);
  else
    r = uv_ip4_addr(addr, 0, (struct sockaddr_in*) &ss);
  if (r == 0)
    r = uv_loop_init(&P.loop);
  if (r != 0)
    return r;
  r = uv_udp_init_ex(&P.loop, &P.udp, (unsigned) ss.ss_family | init);
  if (r == 0)
    r = uv_udp_bind(&P.udp, (const struct sockaddr*) &ss, bind);
  if (r == 0)
    r = uv_fileno((uv_handle_t*) &P.udp, &fd);
  if (r == 0) {
    P.fd = fd;
    r = uv_timer_init(&P.loop, &P.end);
  }
  if (r == 0)
    r = uv_timer_init(&P.loop, &P.timer);
  if (r == 0)
    r = uv_check_init(&P.loop, &P.check);
  if (r == 0)
    r = uv_check_start(&P.check, on_check);
  return r;
}

/* Runs the loop until a case's end or SAFETY_MS; returns what
 * uv_loop_close() returned, having freed what libuv kept.
 */
static int run(void) {
  int i;
  int r;

  watch_fd = P.fd;
  errq_calls = 0;
  errq_mmsg_calls = 0;
  msgs_read = 0;
  uv_timer_start(&P.end, on_end, SAFETY_MS, 0);
  uv_run(&P.loop, UV_RUN_DEFAULT);
  watch_fd = -1;
  r = uv_loop_close(&P.loop);
  for (i = 0; i < LENT_MAX; i++)
    free(P.lentp[i]);
  return r;
}

static int enter_private_netns(void) {
  int err;

  err = private_netns();
  if (err != 0)
    return harness_set_reason(CASE_SKIP, "no private network namespace "
                              "(root or user namespaces): %s",
                              strerror(err));
  return CASE_OK;
}

static void force_rcvbuf(int fd, int size) {
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) != 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
}

/* Sends a numbered payload from fd to dst; a pending socket error (of an
 * earlier ICMP error) fails a send: then send again. Returns 0 or -1.
 */
static int send_numbered(int fd, const void* dst, socklen_t len, long seq) {
  char payload[8];
  int tries;

  memcpy(payload, MAGIC, 4);
  put_seq(payload + 4, (unsigned long) seq);
  for (tries = 0; tries < 10; tries++) {
    if (sendto(fd, payload, 8, 0, dst, len) == 8)
      return 0;
    if (errno != ECONNREFUSED && errno != EINTR)
      return -1;
  }
  return -1;
}

/* The prober's life: one send every PROBE_MS until told to stop. */
static void prober(void* arg) {
  struct timespec ts;
  probe_t* p;
  uint64_t next;
  char payload[8];
  int tries;

  p = arg;
  next = uv_hrtime();
  while (!p->stop && p->sent < MAX_PROBES) {
    memcpy(payload, MAGIC, 4);
    put_seq(payload + 4, (unsigned long) p->sent);
    for (tries = 0; tries < 10; tries++) {
      p->sent_ns[p->sent] = uv_hrtime();
      if (sendto(p->fd, payload, 8, 0, (struct sockaddr*) &p->dst,
                 sizeof(p->dst)) == 8)
        break;
      if (errno != ECONNREFUSED && errno != EINTR)
        p->failed = errno;
    }
    p->sent++;
    next += (uint64_t) PROBE_MS * 1000000;
    ts.tv_sec = (time_t) (next / 1000000000);
    ts.tv_nsec = (long) (next % 1000000000);
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
  }
}

/* 20,000 datagrams queued, drained at 20 us each, a probe every 10 ms:
 * reports by IP_RECVERR (set after uv_udp_bind) or TX timestamps.
 */
static int backlog_case(const char* name, int timestamps) {
  struct sockaddr_storage me;
  probe_t* p;
  uint64_t median;
  long drops;
  pid_t pid;
  int namelen;
  int child_ok;
  int opt;
  int src;
  long i;
  int r;

  if ((r = enter_private_netns()) != CASE_OK)
    return r;
  CHECK_UV(setup(K_BACKLOG, "127.0.0.1", AF_UNSPEC, 0));
  if (timestamps) {
    opt = SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE |
          SOF_TIMESTAMPING_OPT_ID;
    CHECK(setsockopt(P.fd, SOL_SOCKET, SO_TIMESTAMPING, &opt,
                     sizeof(opt)) == 0);
  } else {
    opt = 1;
    CHECK(setsockopt(P.fd, IPPROTO_IP, IP_RECVERR, &opt, sizeof(opt)) == 0);
  }
  force_rcvbuf(P.fd, BIG_RCVBUF);
  namelen = sizeof(me);
  CHECK_UV(uv_udp_getsockname(&P.udp, (struct sockaddr*) &me, &namelen));
  p = mmap(NULL, sizeof(*p), PROT_READ | PROT_WRITE,
           MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  CHECK(p != MAP_FAILED);
  memset(p, 0, sizeof(*p));
  p->fd = P.fd;
  CHECK(closed_port(AF_INET, &p->dst) == 0);
  P.probe = p;

  drops = snmp_counter("Udp:", "RcvbufErrors");
  src = socket(AF_INET, SOCK_DGRAM, 0);
  CHECK(src >= 0);
  for (i = 0; i < BACKLOG; i++)
    CHECK(sendto(src, "backlog!", 8, 0, (struct sockaddr*) &me,
                 sizeof(struct sockaddr_in)) == 8);
  close(src);
  drops = snmp_counter("Udp:", "RcvbufErrors") - drops;

  CHECK_UV(uv_udp_recv_start(&P.udp, on_alloc, on_recv));
  pid = spawn(prober, p, 5);
  CHECK(pid > 0);
  r = run();
  p->stop = 1;
  child_ok = reap(pid, 1000);

  sort_u64(P.lat, (size_t) P.nlat);
  median = quantile_u64(P.lat, (size_t) P.nlat, 0.5);
  printf("{\"paths\": \"%s\", \"datagrams\": %ld, \"backlog\": %d, "
         "\"rcvbuf_drops\": %ld, \"probes\": %ld, \"reports\": %ld, "
         "\"reports_while_draining\": %ld, \"report_nread\": %ld, "
         "\"plain_errors\": %ld, \"latency_median_us\": %.1f, "
         "\"latency_max_us\": %.1f, \"allocs\": %ld}\n",
         name, P.datagrams, BACKLOG, drops, p->sent, P.reports, P.in_drain,
         P.report_nread, P.plain, median / 1e3,
         quantile_u64(P.lat, (size_t) P.nlat, 1.0) / 1e3, P.allocs);
  fflush(stdout);
  munmap(p, sizeof(*p));
  CHECK(r == 0);
  CHECK(child_ok);
  if (P.err[0] != '\0')
    FAIL("%s", P.err);
  if (P.datagrams != BACKLOG)
    FAIL("%ld of %d datagrams of the backlog handed over (%ld dropped by "
         "the kernel)", P.datagrams, BACKLOG, drops);
  if (P.in_drain == 0)
    FAIL("no report while the backlog drained (%ld reports in all)",
         P.reports);
  CHECK_TIMING(median <= (uint64_t) MEDIAN_MS * 1000000,
               "median latency of a report %.2f ms, bound %d ms",
               median / 1e6, MEDIAN_MS);
  return CASE_OK;
}

static int backlog_recverr_setsockopt(void) {
  return backlog_case("backlog_recverr_setsockopt", 0);
}

static int backlog_timestamping(void) {
  return backlog_case("backlog_timestamping", 1);
}

/* 1,000 reports queued on a recvmmsg handle, then drained. */
static int report_flood_mmsg(void) {
  struct sockaddr_in dst;
  struct timespec t0;
  struct timespec t1;
  double cpu_ms;
  long icmp;
  long i;
  int r;

  if ((r = enter_private_netns()) != CASE_OK)
    return r;
  CHECK_UV(setup(K_FLOOD, "127.0.0.1", UV_UDP_RECVMMSG,
                 UV_UDP_LINUX_RECVERR));
  if (!uv_udp_using_recvmmsg(&P.udp))
    SKIP("recvmmsg is not supported here (uv_udp_using_recvmmsg)");
  force_rcvbuf(P.fd, 8 * 1024 * 1024);
  CHECK(closed_port(AF_INET, &dst) == 0);
  icmp = snmp_counter("Icmp:", "InDestUnreachs");
  for (i = 0; i < FLOOD; i++)
    CHECK(send_numbered(P.fd, &dst, sizeof(dst), i) == 0);
  usleep(20000);
  icmp = snmp_counter("Icmp:", "InDestUnreachs") - icmp;

  CHECK_UV(uv_udp_recv_start(&P.udp, on_alloc, on_recv));
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
  r = run();
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
  cpu_ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
  printf("{\"paths\": \"report_flood_mmsg\", \"icmp_errors\": %ld, "
         "\"reports\": %ld, \"duplicates\": %ld, \"plain_errors\": %ld, "
         "\"errqueue_recvmmsg\": %ld, \"errqueue_reads\": %ld, "
         "\"allocs\": %ld, \"cpu_ms\": %.2f, \"unreturned\": %ld}\n",
         icmp, P.reports, P.dups, P.plain, errq_mmsg_calls, errq_calls,
         P.allocs, cpu_ms, P.lent);
  fflush(stdout);
  CHECK(r == 0);
  if (P.err[0] != '\0')
    FAIL("%s", P.err);
  if (icmp != FLOOD)
    SKIP("%ld ICMP errors for %d sends: the rate limit held", icmp, FLOOD);
  if (P.reports != FLOOD || P.dups != 0)
    FAIL("%ld reports (%ld twice) of %d", P.reports, P.dups, FLOOD);
  if (errq_mmsg_calls > FLOOD_ERRQ_CALLS)
    FAIL("%ld error-queue recvmmsg() calls for %d reports, bound %d",
         errq_mmsg_calls, FLOOD, FLOOD_ERRQ_CALLS);
  if (P.allocs > FLOOD_ALLOCS)
    FAIL("%ld alloc_cb calls for %d reports, bound %d", P.allocs, FLOOD,
         FLOOD_ALLOCS);
  if (P.lent != 0)
    FAIL("%ld buffers from alloc_cb never given back", P.lent);
  return CASE_OK;
}

/* 20 reports and 50 datagrams queued, then stop, restart or close. */
static int mixed_case(const char* name, int how, int mmsg) {
  static const char* acts[] = { "", "stop", "restart", "close" };
  struct sockaddr_storage me;
  struct sockaddr_in dst;
  long allowed;
  long icmp;
  long lost;
  long left;
  int namelen;
  int src;
  long i;
  int r;

  if ((r = enter_private_netns()) != CASE_OK)
    return r;
  CHECK_UV(setup(K_MIXED, "127.0.0.1", mmsg ? UV_UDP_RECVMMSG : 0,
                 UV_UDP_LINUX_RECVERR));
  if (mmsg && !uv_udp_using_recvmmsg(&P.udp))
    SKIP("recvmmsg is not supported here (uv_udp_using_recvmmsg)");
  P.act = how;
  force_rcvbuf(P.fd, 4 * 1024 * 1024);
  namelen = sizeof(me);
  CHECK_UV(uv_udp_getsockname(&P.udp, (struct sockaddr*) &me, &namelen));
  src = socket(AF_INET, SOCK_DGRAM, 0);
  CHECK(src >= 0);
  for (i = 0; i < MIXED_DATAGRAMS; i++)
    CHECK(sendto(src, "mixed", 5, 0, (struct sockaddr*) &me,
                 sizeof(struct sockaddr_in)) == 5);
  close(src);
  CHECK(closed_port(AF_INET, &dst) == 0);
  icmp = snmp_counter("Icmp:", "InDestUnreachs");
  for (i = 0; i < MIXED_REPORTS; i++)
    CHECK(send_numbered(P.fd, &dst, sizeof(dst), i) == 0);
  usleep(10000);
  icmp = snmp_counter("Icmp:", "InDestUnreachs") - icmp;
  P.expected = MIXED_DATAGRAMS + icmp;

  CHECK_UV(uv_udp_recv_start(&P.udp, on_alloc, on_recv));
  r = run();
  lost = msgs_read - P.reports - P.datagrams;
  left = P.expected - msgs_read;
  allowed = mmsg ? MMSG_CHUNKS : 0;
  printf("{\"paths\": \"%s\", \"act\": \"%s\", \"mmsg\": %s, "
         "\"icmp_errors\": %ld, \"datagrams_sent\": %d, \"reports\": %ld, "
         "\"datagrams\": %ld, \"plain_errors\": %ld, \"read\": %ld, "
         "\"lost\": %ld, \"left\": %ld, \"calls_while_stopped\": %ld, "
         "\"frees_while_stopped\": %ld, \"calls_after_close\": %ld, "
         "\"chunks_after_close\": %ld, \"allocs\": %ld, \"frees\": %ld, "
         "\"unreturned\": %ld}\n",
         name, acts[how], mmsg ? "true" : "false", icmp, MIXED_DATAGRAMS,
         P.reports, P.datagrams, P.plain, msgs_read, lost, left,
         P.calls_stopped, P.frees_stopped, P.calls_closed, P.chunks_closed,
         P.allocs, P.frees, P.lent);
  fflush(stdout);
  CHECK(r == 0);
  if (P.err[0] != '\0')
    FAIL("%s", P.err);
  if (!P.acted)
    FAIL("recv_cb never handed a report or a datagram over");
  if (lost > allowed)
    FAIL("%ld reports and datagrams read and never handed over, bound %ld",
         lost, allowed);
  if (how != ACT_CLOSE && left != 0)
    FAIL("%ld of %ld never read (%ld reports, %ld datagrams handed over)",
         left, P.expected, P.reports, P.datagrams);
  if (how == ACT_STOP && P.calls_stopped != 0)
    FAIL("%ld alloc_cb/recv_cb calls while stopped", P.calls_stopped);
  if (how == ACT_STOP && P.frees_stopped != mmsg)
    FAIL("%ld UV_UDP_MMSG_FREE while stopped, expected %d",
         P.frees_stopped, mmsg);
  if (how == ACT_CLOSE && P.calls_closed != 0)
    FAIL("%ld alloc_cb and recv_cb calls after uv_close() (chunks and "
         "UV_UDP_MMSG_FREE aside)", P.calls_closed);
  if (P.lent != 0)
    FAIL("%ld buffers from alloc_cb never given back", P.lent);
  return CASE_OK;
}

static int stop_with_backlog_msg(void) {
  return mixed_case("stop_with_backlog_msg", ACT_STOP, 0);
}

static int stop_with_backlog_mmsg(void) {
  return mixed_case("stop_with_backlog_mmsg", ACT_STOP, 1);
}

static int restart_with_backlog_msg(void) {
  return mixed_case("restart_with_backlog_msg", ACT_RESTART, 0);
}

static int restart_with_backlog_mmsg(void) {
  return mixed_case("restart_with_backlog_mmsg", ACT_RESTART, 1);
}

static int close_with_backlog_msg(void) {
  return mixed_case("close_with_backlog_msg", ACT_CLOSE, 0);
}

static int close_with_backlog_mmsg(void) {
  return mixed_case("close_with_backlog_mmsg", ACT_CLOSE, 1);
}

/* Sends to the mapped peer, PACE_MS apart; ends a pace after the last. */
static void on_pace(uv_timer_t* timer) {
  int tries;

  (void) timer;
  if (P.sent == MAPPED_SENDS) {
    end_in(1);
    return;
  }
  for (tries = 0; tries < 10; tries++) {
    if (send(P.fd, "mapped", 6, 0) == 6)
      break;
    if (errno != ECONNREFUSED)
      break;
    P.send_refused++;
  }
  P.sent++;
}

/* A dual-stack handle with IPV6_RECVERR only, connected to a v4 peer. */
static int dual_stack_mapped(void) {
  struct sockaddr_in closed;
  long icmp;
  int v6only;
  socklen_t len;
  int r;

  if ((r = enter_private_netns()) != CASE_OK)
    return r;
  if (no_ipv6())
    SKIP("no IPv6 loopback (::1) here");
  CHECK_UV(setup(K_MAPPED, "::", AF_UNSPEC, UV_UDP_LINUX_RECVERR));
  len = sizeof(v6only);
  CHECK(getsockopt(P.fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &len) == 0);
  if (v6only)
    SKIP("the [::] socket is V6ONLY (net.ipv6.bindv6only)");
  CHECK(closed_port(AF_INET, &closed) == 0);
  CHECK_UV(uv_ip6_addr("::ffff:127.0.0.1", ntohs(closed.sin_port),
                       &P.mapped));
  CHECK_UV(uv_udp_connect(&P.udp, (const struct sockaddr*) &P.mapped));
  CHECK_UV(uv_udp_recv_start(&P.udp, on_alloc, on_recv));
  CHECK_UV(uv_timer_start(&P.timer, on_pace, 10, PACE_MS));
  icmp = snmp_counter("Icmp:", "InDestUnreachs");
  r = run();
  icmp = icmp < 0 ? MAPPED_SENDS
                  : snmp_counter("Icmp:", "InDestUnreachs") - icmp;
  printf("{\"paths\": \"dual_stack_mapped\", \"sends\": %ld, "
         "\"send_refused\": %ld, \"icmp_errors\": %ld, \"errqueue_reads\": "
         "%ld, \"reports\": %ld, \"plain_errors\": %ld, \"first_plain\": "
         "\"%s\", \"empty_reads\": %ld, \"allocs\": %ld}\n",
         P.sent, P.send_refused, icmp, errq_calls, P.reports, P.plain,
         P.plain ? uv_err_name((int) P.first_plain) : "-", P.empty,
         P.allocs);
  fflush(stdout);
  CHECK(r == 0);
  if (P.err[0] != '\0')
    FAIL("%s", P.err);
  if (icmp != MAPPED_SENDS)
    FAIL("%ld ICMP errors for %d sends", icmp, MAPPED_SENDS);
  if (errq_calls > icmp)
    FAIL("%ld error-queue reads for %ld ICMP errors, bound 1 each",
         errq_calls, icmp);
  if (P.plain != icmp || P.first_plain != UV_ECONNREFUSED)
    FAIL("%ld plain errors (the first %s) for %ld ICMP errors, expected "
         "one ECONNREFUSED each", P.plain,
         P.plain ? uv_err_name((int) P.first_plain) : "-", icmp);
  if (P.lent != 0)
    FAIL("%ld buffers from alloc_cb never given back", P.lent);
  return CASE_OK;
}

#else  /* !__linux__ */

static int linux_only(void) {
  SKIP("Linux only: IP_RECVERR and the socket error queue");
}

#define backlog_recverr_setsockopt linux_only
#define backlog_timestamping linux_only
#define report_flood_mmsg linux_only
#define stop_with_backlog_msg linux_only
#define stop_with_backlog_mmsg linux_only
#define restart_with_backlog_msg linux_only
#define restart_with_backlog_mmsg linux_only
#define close_with_backlog_msg linux_only
#define close_with_backlog_mmsg linux_only
#define dual_stack_mapped linux_only

#endif  /* __linux__ */

static const test_case cases[] = {
  { "backlog_recverr_setsockopt", backlog_recverr_setsockopt, 0 },
  { "backlog_timestamping", backlog_timestamping, 0 },
  { "report_flood_mmsg", report_flood_mmsg, 0 },
  { "stop_with_backlog_msg", stop_with_backlog_msg, 0 },
  { "stop_with_backlog_mmsg", stop_with_backlog_mmsg, 0 },
  { "restart_with_backlog_msg", restart_with_backlog_msg, 0 },
  { "restart_with_backlog_mmsg", restart_with_backlog_mmsg, 0 },
  { "close_with_backlog_msg", close_with_backlog_msg, 0 },
  { "close_with_backlog_mmsg", close_with_backlog_mmsg, 0 },
  { "dual_stack_mapped", dual_stack_mapped, 0 },
  { NULL, NULL, 0 }
};

int main(int argc, char** argv) {
  return harness_main(cases, argc, argv);
}
