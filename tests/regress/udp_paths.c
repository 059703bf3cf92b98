/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The paths to the socket error queue that udp_matrix does not take
 * (issue 28). backlog_*: 20,000 datagrams queued, 20 us of work on each in
 * recv_cb, while a child sends from the handle's socket every 10 ms, each
 * send making a report: an ICMP error on a handle given IP_RECVERR by
 * setsockopt() after binding, or bound with the flag; or a TX timestamp
 * (SO_TIMESTAMPING, ee_errno ENOMSG). report_flood_mmsg: 1,000 reports
 * drained by a recvmmsg handle bound with the flag. *_with_backlog_*: 20
 * reports and 50 datagrams queued; at the first one handed over,
 * recv_stop (recv_start 100 ms later), recv_stop and recv_start, or
 * uv_close(). dual_stack_mapped: a [::] handle bound with the flag
 * (IPV6_RECVERR only) connected to ::ffff:127.0.0.1 on a closed port.
 * The program's recvmsg(), recvmmsg(), poll() and getsockopt(), which the
 * static libuv calls, count its calls on the socket and what it took
 * ("lost": taken, never handed over).
 * Each case prints {"paths": NAME, ...}, then judges itself by bounds that
 * upstream v1.x (6179e7af) meets, but for the UV_UDP_MMSG_FREE after a
 * stop and the flagged backlog's duplicates. In a private network
 * namespace, on loopback only. Linux only.
 */

#if defined(__linux__) && !defined(_GNU_SOURCE)
# define _GNU_SOURCE  /* unshare(), CLONE_NEWNET, RTLD_NEXT */
#endif

#include <uv.h>

#include "harness.h"
#include "netns.h"

/* The cases: name, then its function's body. */
#define PATHS(X)                                                              \
  X(backlog_recverr_setsockopt, backlog_case(0))                              \
  X(backlog_timestamping, backlog_case(1))                                    \
  X(backlog_recverr_flag, backlog_case(2))                                    \
  X(report_flood_mmsg, flood_case())                                          \
  X(stop_with_backlog_msg, mixed_case(ACT_STOP, 0))                           \
  X(stop_with_backlog_mmsg, mixed_case(ACT_STOP, 1))                          \
  X(restart_with_backlog_msg, mixed_case(ACT_RESTART, 0))                     \
  X(restart_with_backlog_mmsg, mixed_case(ACT_RESTART, 1))                    \
  X(close_with_backlog_msg, mixed_case(ACT_CLOSE, 0))                         \
  X(close_with_backlog_mmsg, mixed_case(ACT_CLOSE, 1))                        \
  X(dual_stack_mapped, mapped_case())

#ifdef __linux__

#include <linux/net_tstamp.h>
#include <sys/mman.h>

#include "child.h"
#include "dgram.h"
#include "handles.h"
#include "libc_recv.h"
#include "loopback.h"
#include "socket_calls.h"
#include "stats.h"

#define DGRAM_MAX (64 * 1024)
#define MMSG_CHUNKS 20
/* The backlog, a probe every PROBE_MS, the bound on a report's median
 * latency; the flood and its bounds (upstream's 50, 75 and 75 times 1.3).
 */
#define BACKLOG 20000
#define SPEND_NS 20000
#define PROBE_MS 10
#define MAX_PROBES 150
#define MEDIAN_MS 5
#define FLOOD 1000
#define FLOOD_ERRQ_CALLS 65
#define FLOOD_SOCKET_CALLS 97
#define FLOOD_ALLOCS 98
#define MIXED_REPORTS 20
#define MIXED_DATAGRAMS 50
#define RESUME_MS 100
#define MAPPED_SENDS 3
#define PACE_MS 100
#define SAFETY_MS 1400
/* A probe's payload, MAGIC and a number, in its report's first SCAN. */
#define MAGIC "uvP!"
#define SCAN 64

enum { ACT_NONE, ACT_STOP, ACT_RESTART, ACT_CLOSE };

static const char* case_name;  /* The case running, for its JSON line. */
/* On stderr, where the test command keeps a case's figures. */
#define FIGURE(...) fprintf(stderr, __VA_ARGS__)

/* On watch_fd: error-queue reads (recvmmsg() among them), messages read. */
static long errq_calls;
static long errq_mmsg_calls;
static long msgs_read;

ssize_t recvmsg(int fd, struct msghdr* msg, int flags) {
  ssize_t r;

  r = libc_recvmsg(fd, msg, flags);
  if (fd == watch_fd) {
    errq_calls += (flags & MSG_ERRQUEUE) != 0;
    msgs_read += r >= 0;
    socket_calls++;
  }
  return r;
}

int recvmmsg(int fd, struct mmsghdr* msgs, unsigned int n, int flags,
             struct timespec* timeout) {
  int r;

  r = libc_recvmmsg(fd, msgs, n, flags, timeout);
  if (fd == watch_fd) {
    errq_calls += (flags & MSG_ERRQUEUE) != 0;
    errq_mmsg_calls += (flags & MSG_ERRQUEUE) != 0;
    msgs_read += r > 0 ? r : 0;
    socket_calls++;
  }
  return r;
}

/* The prober, a child process: sends from the handle's socket to a closed
 * port (to its peer when connected), max times, period_ms apart.
 */
typedef struct {
  int fd;
  int connected;
  struct sockaddr_in dst;
  unsigned period_ms;
  long max;
  volatile int stop;
  volatile long sent;
  volatile uint64_t sent_ns[MAX_PROBES];
} probe_t;

typedef struct {
  uv_loop_t loop;
  uv_udp_t udp;
  uv_timer_t end;
  uv_timer_t timer;
  uv_check_t check;
  int act;
  int mmsg;
  int fd;
  long faults;        /* Calls inside the loop that failed. */
  long allocs;
  long lent;          /* Buffers of alloc_cb not given back. */
  long reports;
  long report_nread;
  long datagrams;
  long plain, first_plain;
  long empty;
  long dups;
  unsigned char seen[FLOOD];
  long icmp;          /* ICMP errors received from setup() to the end. */
  probe_t* probe;
  int backlog;
  int drained;
  long in_drain;
  long nlat;
  uint64_t lat[MAX_PROBES];
  int acted, stopped, closed;
  long calls_stopped, frees_stopped, calls_closed, chunks_closed;
} pctx;

static pctx P;

/* A fresh buffer each call, the first SCAN bytes of each chunk zeroed. */
static void on_alloc(uv_handle_t* handle, size_t suggested, uv_buf_t* buf) {
  size_t len;
  size_t k;

  (void) handle;
  (void) suggested;
  P.allocs++;
  P.calls_stopped += P.stopped;
  P.calls_closed += P.closed;
  len = P.mmsg ? (size_t) MMSG_CHUNKS * DGRAM_MAX : DGRAM_MAX;
  buf->base = malloc(len);
  buf->len = buf->base == NULL ? 0 : len;
  for (k = 0; k < buf->len; k += DGRAM_MAX)
    memset(buf->base + k, 0, SCAN);
  P.lent += buf->base != NULL;
  P.faults += buf->base == NULL;
}

static void give_back(char* p) {
  P.lent -= p != NULL;
  free(p);
}

static void on_end(uv_timer_t* timer) {
  (void) timer;
  watch_fd = -1;
  close_once(&P.udp, NULL);
  close_once(&P.end, NULL);
  close_once(&P.timer, NULL);
  close_once(&P.check, NULL);
}

static void on_recv(uv_udp_t* handle, ssize_t nread, const uv_buf_t* buf,
                    const struct sockaddr* addr, unsigned flags);

static void on_resume(uv_timer_t* timer) {
  (void) timer;
  P.stopped = 0;
  P.faults += uv_udp_recv_start(&P.udp, on_alloc, on_recv) != 0;
}

/* Stop, restart or close, at the first report or datagram. */
static void act(uv_udp_t* handle) {
  P.acted = 1;
  if (P.act == ACT_CLOSE) {
    P.closed = 1;
    uv_close((uv_handle_t*) handle, NULL);
    return;
  }
  P.faults += uv_udp_recv_stop(handle) != 0;
  if (P.act == ACT_RESTART) {
    P.faults += uv_udp_recv_start(handle, on_alloc, on_recv) != 0;
  } else {
    P.stopped = 1;
    uv_timer_start(&P.timer, on_resume, RESUME_MS, 0);
  }
}

/* A report: the number after MAGIC in its payload tells which send. */
static void on_report(const char* p) {
  long seq;
  int i;

  seq = -1;
  for (i = 0; i + 8 <= SCAN && seq < 0; i++)
    if (memcmp(p + i, MAGIC, 4) == 0)
      seq = (long) get_seq(p + i + 4);
  if (P.backlog) {
    P.in_drain += !P.drained;
    if (seq >= 0 && seq < P.probe->sent && P.nlat < MAX_PROBES)
      P.lat[P.nlat++] = uv_hrtime() - P.probe->sent_ns[seq];
  }
  if (seq >= 0 && seq < FLOOD) {
    P.dups += P.seen[seq];
    P.seen[seq] = 1;
  }
  if (P.reports == FLOOD)
    uv_timer_start(&P.end, on_end, 20, 0);
}

/* The backlog's work on a datagram: SPEND_NS of busy waiting. */
static void on_datagram(void) {
  uint64_t until;

  until = uv_hrtime() + SPEND_NS;
  while (P.backlog && uv_hrtime() < until)
    ;
  if (P.backlog && P.datagrams == BACKLOG) {
    P.drained = 1;
    P.probe->stop = 1;
    uv_timer_start(&P.end, on_end, 30, 0);
  }
}

static void on_recv(uv_udp_t* handle, ssize_t nread, const uv_buf_t* buf,
                    const struct sockaddr* addr, unsigned flags) {
  (void) addr;
  if (flags & UV_UDP_MMSG_FREE) {
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
  if (!(flags & UV_UDP_MMSG_CHUNK))
    give_back(buf->base);
  if (P.act != ACT_NONE && !P.acted &&
      ((flags & UV_UDP_LINUX_RECVERR) || nread > 0))
    act(handle);
}

/* The mixed cases end once all is read (msgs_read), or at the close. */
static void on_check(uv_check_t* check) {
  (void) check;
  if (P.acted && !uv_is_active((uv_handle_t*) &P.timer) &&
      (P.closed || msgs_read >= MIXED_DATAGRAMS + MIXED_REPORTS))
    uv_timer_start(&P.timer, on_end, 10, 0);
}

/* A private network namespace, a loop, a handle bound to addr:0 with a
 * receive buffer of rcvbuf bytes, and the timers.
 */
static int setup(const char* addr, unsigned init, unsigned bind, int rcvbuf) {
  struct sockaddr_storage ss;
  int r;

  memset(&P, 0, sizeof(P));
  P.mmsg = (init & UV_UDP_RECVMMSG) != 0;
  if ((r = private_netns()) != 0)
    SKIP("no private network namespace (root or user namespaces): %s",
         strerror(r));
  memset(&ss, 0, sizeof(ss));
  if (strchr(addr, ':') != NULL)
    CHECK_UV(uv_ip6_addr(addr, 0, (struct sockaddr_in6*) &ss));
  else
    CHECK_UV(uv_ip4_addr(addr, 0, (struct sockaddr_in*) &ss));
  CHECK_UV(uv_loop_init(&P.loop));
  CHECK_UV(uv_udp_init_ex(&P.loop, &P.udp, (unsigned) ss.ss_family | init));
  CHECK_UV(uv_udp_bind(&P.udp, (const struct sockaddr*) &ss, bind));
  CHECK_UV(uv_fileno((uv_handle_t*) &P.udp, &P.fd));
  if (P.mmsg && !uv_udp_using_recvmmsg(&P.udp))
    SKIP("recvmmsg is not supported here (uv_udp_using_recvmmsg)");
  if (setsockopt(P.fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(int)))
    CHECK_UV(uv_recv_buffer_size((uv_handle_t*) &P.udp, &rcvbuf));
  CHECK_UV(uv_timer_init(&P.loop, &P.end));
  CHECK_UV(uv_timer_init(&P.loop, &P.timer));
  CHECK_UV(uv_check_init(&P.loop, &P.check));
  CHECK_UV(uv_check_start(&P.check, on_check));
  P.icmp = snmp_counter("Icmp:", "InDestUnreachs");
  return CASE_OK;
}

/* Runs the loop until the case ends it or SAFETY_MS passed; prints the
 * figures of every case, the JSON line left open for the case's own.
 */
static int run(void) {
  struct timespec t0;
  struct timespec t1;
  int r;

  watch_fd = P.fd;
  uv_timer_start(&P.end, on_end, SAFETY_MS, 0);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
  uv_run(&P.loop, UV_RUN_DEFAULT);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
  watch_fd = -1;
  r = uv_loop_close(&P.loop);
  P.icmp = snmp_counter("Icmp:", "InDestUnreachs") - P.icmp;
  FIGURE("{\"paths\": \"%s\", \"icmp_errors\": %ld, \"reports\": %ld, "
         "\"report_nread\": %ld, \"datagrams\": %ld, \"plain_errors\": %ld, "
         "\"first_plain\": \"%s\", \"empty_reads\": %ld, "
         "\"errqueue_reads\": %ld, \"allocs\": %ld, \"unreturned\": %ld, "
         "\"cpu_ms\": %.2f",
         case_name, P.icmp, P.reports, P.report_nread, P.datagrams, P.plain,
         P.plain ? uv_err_name((int) P.first_plain) : "-", P.empty,
         errq_calls, P.allocs, P.lent,
         (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
  return r;
}

/* Sends MAGIC and seq from fd to dst (NULL: connected), the time in *ns;
 * again when a pending socket error failed the send. Returns 0 or -1.
 */
static int send_numbered(int fd, const struct sockaddr_in* dst, long seq,
                         volatile uint64_t* ns) {
  char payload[8];
  int tries;

  memcpy(payload, MAGIC, 4);
  put_seq(payload + 4, (unsigned long) seq);
  for (tries = 0; tries < 10; tries++) {
    *ns = uv_hrtime();
    if (sendto(fd, payload, 8, 0, (const struct sockaddr*) dst,
               dst != NULL ? sizeof(*dst) : 0) == 8)
      return 0;
    if (errno != ECONNREFUSED && errno != EINTR)
      return -1;
  }
  return -1;
}

/* Queues n datagrams from a socket of their own to the handle, then m
 * reports: sends from the handle to a closed port. Returns 0 or -1.
 */
static int queue(long n, long m) {
  struct sockaddr_storage me;
  struct sockaddr_in dst;
  uint64_t ns;
  int len;
  int fd;
  long i;

  len = sizeof(me);
  if (uv_udp_getsockname(&P.udp, (struct sockaddr*) &me, &len) != 0 ||
      closed_port(AF_INET, &dst) != 0 ||
      (fd = socket(AF_INET, SOCK_DGRAM, 0)) < 0)
    return -1;
  for (i = 0; i < n; i++)
    if (sendto(fd, "datagram", 8, 0, (struct sockaddr*) &me, len) != 8)
      break;
  close(fd);
  while (i == n && m-- > 0)
    if (send_numbered(P.fd, &dst, m, &ns) != 0)
      return -1;
  usleep(20000);
  return i == n ? 0 : -1;
}

/* The prober's life: a send every period_ms until told to stop. */
static void prober(void* arg) {
  probe_t* p;

  p = arg;
  while (!p->stop && p->sent < p->max) {
    if (send_numbered(p->fd, p->connected ? NULL : &p->dst, p->sent,
                      &p->sent_ns[p->sent]) != 0)
      _exit(1);
    p->sent++;
    usleep(p->period_ms * 1000);
  }
}

/* Starts the prober on the handle's socket; returns its pid or -1. */
static pid_t start_prober(unsigned period_ms, long max, int connected) {
  P.probe = mmap(NULL, sizeof(*P.probe), PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (P.probe == MAP_FAILED || closed_port(AF_INET, &P.probe->dst) != 0)
    return -1;
  P.probe->fd = P.fd;
  P.probe->connected = connected;
  P.probe->period_ms = period_ms;
  P.probe->max = max;
  return spawn(prober, P.probe, 5);
}

/* The backlog, a probe every 10 ms; the report by IP_RECVERR set after
 * bind (kind 0), a TX timestamp (1), or the flag (2).
 */
static int backlog_case(int kind) {
  static const int opts[] = { 1, SOF_TIMESTAMPING_TX_SOFTWARE |
                                     SOF_TIMESTAMPING_SOFTWARE |
                                     SOF_TIMESTAMPING_OPT_ID };
  uint64_t median;
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
  CHECK_UV(uv_udp_recv_start(&P.udp, on_alloc, on_recv));
  CHECK_GT((pid = start_prober(PROBE_MS, MAX_PROBES, 0)), 0);
  r = run();
  P.probe->stop = 1;
  sort_u64(P.lat, (size_t) P.nlat);
  median = quantile_u64(P.lat, (size_t) P.nlat, 0.5);
  FIGURE(", \"probes\": %ld, \"reports_while_draining\": %ld, "
         "\"latency_median_us\": %.1f, \"latency_max_us\": %.1f}\n",
         P.probe->sent, P.in_drain, median / 1e3,
         quantile_u64(P.lat, (size_t) P.nlat, 1.0) / 1e3);
  CHECK(reap(pid, 1000) && r == 0 && P.faults == 0);
  CHECK_TIMING(P.datagrams == BACKLOG, "%ld of %d datagrams in %d ms",
               P.datagrams, BACKLOG, SAFETY_MS);
  CHECK_GT(P.in_drain, 0);
  /* Twin read errors of reports: as few as udp_hostile allows. */
  if (kind == 2 && P.plain > 10 + P.reports / 200)
    FAIL("%ld plain errors beside %ld reports", P.plain, P.reports);
  CHECK_TIMING(median <= (uint64_t) MEDIAN_MS * 1000000,
               "median latency of a report %.2f ms, bound %d ms",
               median / 1e6, MEDIAN_MS);
  return CASE_OK;
}

/* 1,000 reports queued on a recvmmsg handle, then drained. */
static int flood_case(void) {
  int r;

  r = setup("127.0.0.1", UV_UDP_RECVMMSG, UV_UDP_LINUX_RECVERR, 8 << 20);
  if (r != CASE_OK)
    return r;
  CHECK_EQ(queue(0, FLOOD), 0);
  CHECK_UV(uv_udp_recv_start(&P.udp, on_alloc, on_recv));
  r = run();
  FIGURE(", \"duplicates\": %ld, \"errqueue_recvmmsg\": %ld, "
         "\"socket_calls\": %ld}\n", P.dups, errq_mmsg_calls, socket_calls);
  CHECK(r == 0 && P.faults == 0);
  if (P.icmp != FLOOD)
    SKIP("%ld ICMP errors for %d sends: the rate limit held", P.icmp,
         FLOOD);
  CHECK(P.reports == FLOOD && P.dups == 0);
  CHECK_LE(errq_mmsg_calls, FLOOD_ERRQ_CALLS);
  CHECK_LE(socket_calls, FLOOD_SOCKET_CALLS);
  CHECK_LE(P.allocs, FLOOD_ALLOCS);
  CHECK_EQ(P.lent, 0);
  return CASE_OK;
}

/* 20 reports and 50 datagrams queued, then stop, restart or close. */
static int mixed_case(int how, int mmsg) {
  long lost;
  long left;
  int r;

  r = setup("127.0.0.1", mmsg ? UV_UDP_RECVMMSG : 0, UV_UDP_LINUX_RECVERR,
            4 << 20);
  if (r != CASE_OK)
    return r;
  P.act = how;
  CHECK_EQ(queue(MIXED_DATAGRAMS, MIXED_REPORTS), 0);
  CHECK_UV(uv_udp_recv_start(&P.udp, on_alloc, on_recv));
  r = run();
  lost = msgs_read - P.reports - P.datagrams;
  left = MIXED_DATAGRAMS + P.icmp - msgs_read;
  FIGURE(", \"read\": %ld, \"lost\": %ld, \"left\": %ld, "
         "\"calls_while_stopped\": %ld, \"frees_while_stopped\": %ld, "
         "\"calls_after_close\": %ld, \"chunks_after_close\": %ld}\n",
         msgs_read, lost, left, P.calls_stopped, P.frees_stopped,
         P.calls_closed, P.chunks_closed);
  CHECK(r == 0 && P.faults == 0);
  CHECK(P.acted);
  /* Lost: at most the rest of the recvmmsg batch that the act cut. */
  CHECK_LE(lost, (mmsg ? MMSG_CHUNKS : 0));
  CHECK(how == ACT_CLOSE || left == 0);
  /* Stopped: no call but the cut batch's UV_UDP_MMSG_FREE. Closed: no
   * call but the rest of the batch and its UV_UDP_MMSG_FREE.
   */
  CHECK(how != ACT_STOP || P.calls_stopped == 0);
  CHECK(how != ACT_STOP || P.frees_stopped == mmsg);
  CHECK_EQ(P.calls_closed, 0);
  CHECK_EQ(P.lent, 0);
  return CASE_OK;
}

/* A dual-stack handle with IPV6_RECVERR only, connected to a v4 peer. */
static int mapped_case(void) {
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
  CHECK_UV(uv_udp_recv_start(&P.udp, on_alloc, on_recv));
  CHECK_GT((pid = start_prober(PACE_MS, MAPPED_SENDS, 1)), 0);
  CHECK_UV(uv_timer_start(&P.timer, on_end, PACE_MS * MAPPED_SENDS, 0));
  r = run();
  FIGURE(", \"sends\": %ld}\n", P.probe->sent);
  CHECK(reap(pid, 1000) && r == 0 && P.faults == 0);
  CHECK_EQ(P.icmp, MAPPED_SENDS);
  /* At most one error-queue read and one plain error per ICMP error. */
  CHECK_LE(errq_calls, P.icmp);
  CHECK(P.plain == P.icmp && P.first_plain == UV_ECONNREFUSED);
  CHECK_EQ(P.lent, 0);
  return CASE_OK;
}

#define PATHS_FN(name, body)                                                  \
  static int name(void) {                                                     \
    case_name = #name;                                                        \
    return body;                                                              \
  }

#else  /* !__linux__ */

#define PATHS_FN(name, body)                                                  \
  static int name(void) {                                                     \
    SKIP("Linux only: IP_RECVERR and the socket error queue");                \
  }

#endif  /* __linux__ */

PATHS(PATHS_FN)

#define PATHS_ENTRY(name, body) { #name, name, 0 },

static const test_case cases[] = {
  PATHS(PATHS_ENTRY)
  { NULL, NULL, 0 }
};

int main(int argc, char** argv) {
  return harness_main(cases, argc, argv);
}
