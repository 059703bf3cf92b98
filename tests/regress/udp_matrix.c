/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The case matrix of the socket error queue (issue 19): every way a UDP
 * socket reaches the error-queue path of libuv on Linux, one case each.
 *
 *   - the socket: bound with UV_UDP_LINUX_RECVERR (bound_flag) or without
 *     (bound_noflag); given to uv_udp_open() by an owner that set
 *     IP_RECVERR (IPV6_RECVERR on IPv6) (open_recverr) or not (open_plain);
 *   - recvmsg (msg) or uv_udp_init_ex(UV_UDP_RECVMMSG) (mmsg);
 *   - IPv4 or IPv6; unconnected, or connected (conn);
 *   - and, with the flag on IPv4: send-only, uv_udp_recv_start() after
 *     reports have queued, uv_udp_recv_stop() and uv_close() from inside
 *     recv_cb, an ICMP flood in a private network namespace, and an
 *     error-queue read that fails with ENOMEM.
 *
 * A cell case runs the loop for half a second: 50 ms in, a peer sends 10
 * numbered datagrams to the handle and closes, and the handle sends one
 * datagram to the peer's now closed port, so the kernel sends back one
 * ICMP port unreachable. Each case prints one JSON line on stdout before
 * its result line:
 *
 *   {"matrix": NAME, "iterations": N, "reports": N, "plain_errors": N,
 *    "datagrams": N, "max_per_iteration": N, "icmp_ratelimit": ...,
 *    "netns": ..., "icmp_errors": N, ...}
 *
 * iterations are loop iterations in the run (a check handle counts them),
 * reports the recv_cb calls with UV_UDP_LINUX_RECVERR, plain_errors those
 * with a negative nread and no flag, datagrams those with data, and
 * max_per_iteration the most datagrams and reports (UV_UDP_MMSG_FREE not
 * counted) handed over in one iteration. icmp_errors is what the kernel
 * received: the namespace's Icmp InDestUnreachs (Icmp6InDestUnreachs)
 * counter, or, outside a private namespace, the datagrams sent to the
 * closed port.
 *
 * Then the case judges itself against the rule of the issue, on every
 * tree: no spin (more than 20 loop iterations in the run after one ICMP
 * error), no lost report (fewer reports than ICMP errors, on a socket
 * with IP_RECVERR) and none twice, no plain error beside a report (a
 * socket without IP_RECVERR gets one plain error when connected and
 * nothing when not), at most 32 callbacks per iteration, no datagram lost,
 * no crash. Whether the patched tree is no worse than upstream's unpatched
 * tree is for the reader of the JSON lines of both.
 *
 * What some cases allow. Stop (at the first report, on every tree): in
 * recvmmsg mode, the reports and datagrams of the batch that
 * uv_udp_recv_stop() cut short, read from the socket and never handed
 * over (upstream's rule), and then one UV_UDP_MMSG_FREE for that batch's
 * buffer; everything else comes once recv_start runs again. Close: only
 * what comes before and after uv_close() is judged; the first callback
 * must be the report. ENOMEM: that error once in recv_cb, and every
 * report after it. Flood: the receive buffer holds every report, so
 * reports handed over plus those left queued equal the ICMP errors; a
 * plain ECONNREFUSED beside the reports is a duplicate that the kernel's
 * race let through (it queues a report just before it sets the socket
 * error), allowed up to FLOOD_DUPS_BASE plus one per FLOOD_DUPS_PER
 * reports.
 *
 * Each case runs in a private network namespace when it can (root, or
 * unprivileged user namespaces), so that nobody else's traffic shares the
 * ICMP rate limit. The flood and the send-only cases keep the limits that
 * netns.h raises; the others put back the kernel's defaults (burst 50,
 * then 1000 a second, which their few errors stay within). "icmp_ratelimit"
 * says which held. Only loopback (127.0.0.1, ::1) is sent to. Linux only:
 * elsewhere every case is skipped.
 */

#if defined(__linux__) && !defined(_GNU_SOURCE)
# define _GNU_SOURCE  /* unshare(), CLONE_NEWNET, RTLD_NEXT */
#endif

#include <uv.h>

#include "harness.h"
#include "netns.h"

/* The socket of a case. */
enum {
  MX_BOUND_FLAG,     /* uv_udp_bind() with UV_UDP_LINUX_RECVERR. */
  MX_BOUND_NOFLAG,   /* uv_udp_bind() without it. */
  MX_OPEN_RECVERR,   /* uv_udp_open() of a socket with IP(V6)_RECVERR. */
  MX_OPEN_PLAIN      /* uv_udp_open() of a socket without. */
};

/* What a case does. */
enum {
  KIND_CELL,         /* One ICMP error and 10 datagrams while receiving. */
  KIND_SEND_ONLY,    /* 2000 sends to a closed port, never receiving. */
  KIND_AFTER_QUEUED, /* 20 errors and 40 datagrams, then recv_start. */
  KIND_STOP,         /* uv_udp_recv_stop() at the first report. */
  KIND_CLOSE,        /* uv_close() in the first recv_cb. */
  KIND_FLOOD,        /* A second process elicits ICMP errors for 1 s. */
  KIND_ENOMEM        /* The first error-queue read fails with ENOMEM. */
};

typedef struct {
  const char* name;
  int sock;
  int ipv6;
  int mmsg;
  int connected;
  int kind;
} cell_t;

/* The cases: name, socket, IPv6, recvmmsg, connected, kind. */
#define MATRIX(X)                                                             \
  X(bound_flag_v4_msg, MX_BOUND_FLAG, 0, 0, 0, KIND_CELL)                     \
  X(bound_flag_v4_msg_conn, MX_BOUND_FLAG, 0, 0, 1, KIND_CELL)                \
  X(bound_flag_v4_mmsg, MX_BOUND_FLAG, 0, 1, 0, KIND_CELL)                    \
  X(bound_flag_v4_mmsg_conn, MX_BOUND_FLAG, 0, 1, 1, KIND_CELL)               \
  X(bound_flag_v6_msg, MX_BOUND_FLAG, 1, 0, 0, KIND_CELL)                     \
  X(bound_flag_v6_msg_conn, MX_BOUND_FLAG, 1, 0, 1, KIND_CELL)                \
  X(bound_flag_v6_mmsg, MX_BOUND_FLAG, 1, 1, 0, KIND_CELL)                    \
  X(bound_flag_v6_mmsg_conn, MX_BOUND_FLAG, 1, 1, 1, KIND_CELL)               \
  X(open_recverr_v4_msg, MX_OPEN_RECVERR, 0, 0, 0, KIND_CELL)                 \
  X(open_recverr_v4_msg_conn, MX_OPEN_RECVERR, 0, 0, 1, KIND_CELL)            \
  X(open_recverr_v4_mmsg, MX_OPEN_RECVERR, 0, 1, 0, KIND_CELL)                \
  X(open_recverr_v4_mmsg_conn, MX_OPEN_RECVERR, 0, 1, 1, KIND_CELL)           \
  X(open_recverr_v6_msg, MX_OPEN_RECVERR, 1, 0, 0, KIND_CELL)                 \
  X(open_recverr_v6_msg_conn, MX_OPEN_RECVERR, 1, 0, 1, KIND_CELL)            \
  X(open_recverr_v6_mmsg, MX_OPEN_RECVERR, 1, 1, 0, KIND_CELL)                \
  X(open_recverr_v6_mmsg_conn, MX_OPEN_RECVERR, 1, 1, 1, KIND_CELL)           \
  X(bound_noflag_v4_msg, MX_BOUND_NOFLAG, 0, 0, 0, KIND_CELL)                 \
  X(bound_noflag_v4_msg_conn, MX_BOUND_NOFLAG, 0, 0, 1, KIND_CELL)            \
  X(bound_noflag_v4_mmsg, MX_BOUND_NOFLAG, 0, 1, 0, KIND_CELL)                \
  X(bound_noflag_v4_mmsg_conn, MX_BOUND_NOFLAG, 0, 1, 1, KIND_CELL)           \
  X(bound_noflag_v6_msg_conn, MX_BOUND_NOFLAG, 1, 0, 1, KIND_CELL)            \
  X(open_plain_v4_msg, MX_OPEN_PLAIN, 0, 0, 0, KIND_CELL)                     \
  X(open_plain_v4_msg_conn, MX_OPEN_PLAIN, 0, 0, 1, KIND_CELL)                \
  X(open_plain_v4_mmsg, MX_OPEN_PLAIN, 0, 1, 0, KIND_CELL)                    \
  X(open_plain_v4_mmsg_conn, MX_OPEN_PLAIN, 0, 1, 1, KIND_CELL)               \
  X(open_plain_v6_msg_conn, MX_OPEN_PLAIN, 1, 0, 1, KIND_CELL)                \
  X(send_only_v4, MX_BOUND_FLAG, 0, 0, 0, KIND_SEND_ONLY)                     \
  X(send_only_v4_conn, MX_BOUND_FLAG, 0, 0, 1, KIND_SEND_ONLY)                \
  X(after_queued_v4_msg, MX_BOUND_FLAG, 0, 0, 0, KIND_AFTER_QUEUED)           \
  X(after_queued_v4_mmsg, MX_BOUND_FLAG, 0, 1, 0, KIND_AFTER_QUEUED)          \
  X(stop_in_cb_v4_msg, MX_BOUND_FLAG, 0, 0, 0, KIND_STOP)                     \
  X(stop_in_cb_v4_mmsg, MX_BOUND_FLAG, 0, 1, 0, KIND_STOP)                    \
  X(close_in_cb_v4_msg, MX_BOUND_FLAG, 0, 0, 0, KIND_CLOSE)                   \
  X(close_in_cb_v4_mmsg, MX_BOUND_FLAG, 0, 1, 0, KIND_CLOSE)                  \
  X(flood_v4_msg, MX_BOUND_FLAG, 0, 0, 0, KIND_FLOOD)                         \
  X(flood_v4_mmsg, MX_BOUND_FLAG, 0, 1, 0, KIND_FLOOD)                        \
  X(errqueue_enomem_v4_msg, MX_BOUND_FLAG, 0, 0, 0, KIND_ENOMEM)              \
  X(errqueue_enomem_v4_mmsg, MX_BOUND_FLAG, 0, 1, 0, KIND_ENOMEM)

static int run_cell(const cell_t* c);

#ifdef __linux__

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "dgram.h"
#include "handles.h"
#include "libc_recv.h"
#include "loopback.h"
#include "sends.h"

/* The receive budget of the patches: callbacks per readable event. */
#define BUDGET 32
/* How long a case runs the loop (-DRUN_MS=1000 for the "in 1 s");
 * when the cell's peer acts.
 */
#ifndef RUN_MS
# define RUN_MS 500
#endif
#define GO_MS 50
/* Loop iterations the run may take after one ICMP error. */
#define SPIN_BOUND 20
/* Datagrams of a cell; errors and datagrams queued before recv_start. */
#define CELL_DATAGRAMS 10
#define QUEUED_ERRORS 20
#define QUEUED_DATAGRAMS 40
/* Errors and datagrams of the stop, close and ENOMEM cases. */
#define FEW_ERRORS 3
/* When the stopped handle receives again. */
#define RESUME_MS 200
/* Sends of the send-only cases, and their socket's send buffer. */
#define SEND_ONLY_SENDS 2000
#define SEND_ONLY_SNDBUF 4096
/* recvmmsg: 64 KiB chunks per buffer (libuv reads at most 20 at once). */
#define DGRAM_MAX (64 * 1024)
#define MMSG_CHUNKS 20
/* The flood: ICMP errors per millisecond for FLOOD_MS, at most FLOOD_MAX,
 * one datagram per FLOOD_DATA_EVERY of them, then TAIL_MS to drain. The
 * receive buffer holds all of it (a report costs about 832 bytes).
 */
#define FLOOD_MS 1000
#define TAIL_MS 1000
#define FLOOD_PER_MS 16
#define FLOOD_MAX 30000L
#define FLOOD_DATA_EVERY 16
#define FLOOD_RCVBUF (32 * 1024 * 1024)
/* Duplicates allowed beside the reports of a flood, as in udp_hostile. */
#define FLOOD_DUPS_BASE 10L
#define FLOOD_DUPS_PER 200
/* Busy iterations whose counts are printed. */
#define MAX_LISTED 12

/* The program defines recvmsg() and recvmmsg(), which the static libuv it
 * is linked with calls: they count the reads of the error queue, can fail
 * the next one with an errno of our choosing, and note what each
 * recvmmsg() returned, then pass every call on to the C library.
 */
static long errqueue_reads;
static int inject_errno;
static long injected;
/* The last batch of recvmmsg(): its size and the chunks handed over. */
static long batch_size;
static long batch_seen;
/* After a plain read failed with ECONNREFUSED: REFUSED_READ; after an
 * error-queue read right after it found the queue empty: REFUSED_NO_REPORT.
 * The kernel queues a report before it sets the socket error, so a reader
 * that takes the report in between, while a second process elicits ICMP
 * errors, finds a socket error with no report left for it, which libuv
 * cannot tell from one whose report the kernel could not queue.
 */
enum { REFUSED_NONE, REFUSED_READ, REFUSED_NO_REPORT };
static int refused_state;

static void note_read(int flags, long r, int err) {
  if (flags & MSG_ERRQUEUE)
    refused_state = refused_state == REFUSED_READ && r < 0 && err == EAGAIN
                        ? REFUSED_NO_REPORT
                        : REFUSED_NONE;
  else
    refused_state = r < 0 && err == ECONNREFUSED ? REFUSED_READ
                                                 : REFUSED_NONE;
}

/* Counts an error-queue read; makes it fail once with inject_errno when a
 * case asked for that. Returns 1 when the read is to fail.
 */
static int errqueue_read_fails(int flags) {
  if (!(flags & MSG_ERRQUEUE))
    return 0;
  errqueue_reads++;
  if (inject_errno == 0)
    return 0;
  errno = inject_errno;
  inject_errno = 0;
  injected++;
  refused_state = REFUSED_NONE;
  return 1;
}

ssize_t recvmsg(int fd, struct msghdr* msg, int flags) {
  ssize_t r;
  int err;

  if (errqueue_read_fails(flags))
    return -1;
  r = libc_recvmsg(fd, msg, flags);
  err = errno;
  note_read(flags, (long) r, err);
  errno = err;
  return r;
}

int recvmmsg(int fd,
             struct mmsghdr* msgs,
             unsigned int n,
             int flags,
             struct timespec* timeout) {
  int err;
  int r;

  if (errqueue_read_fails(flags))
    return -1;
  r = libc_recvmmsg(fd, msgs, n, flags, timeout);
  err = errno;
  note_read(flags, r, err);
  if (r > 0) {
    batch_size = r;
    batch_seen = 0;
  }
  errno = err;
  return r;
}

/* What the flooding child did, in memory shared with it. */
typedef struct {
  struct sockaddr_in closed;   /* Sent to from the handle's socket. */
  struct sockaddr_in target;   /* The handle: numbered datagrams. */
  int fd;                      /* The handle's socket. */
  long max;
  volatile long elicited;      /* Sends to the closed port. */
  volatile long data_sent;
  volatile int done;
  volatile int failed;         /* errno of a failed send. */
} flood_t;

typedef struct {
  uv_loop_t loop;
  uv_udp_t udp;
  uv_timer_t end;
  uv_timer_t go;
  uv_timer_t resume;
  uv_check_t check;
  const cell_t* cell;
  int family;
  int recverr;                 /* The socket has IP(V6)_RECVERR. */
  struct sockaddr_storage me;
  struct sockaddr_storage peer_addr;
  int peer;                    /* Port P: sends, closes, elicits errors. */
  int errors_to_send;
  int datagrams_to_send;
  char loop_err[160];           /* What failed inside the loop. */
  /* Loop iterations, and those that handed nothing over. */
  long iterations;
  long idle_iterations;
  long this_iter;              /* Datagrams and reports. */
  long this_iter_any;          /* Every callback but empty reads. */
  long max_per_iter;
  long listed[MAX_LISTED];
  int nlisted;
  /* recv_cb. */
  long reports;
  long bad_nread;
  long first_report_nread;
  long plain_errors;
  long plain_refused;
  long plain_no_report;        /* ECONNREFUSED, error queue found empty. */
  long plain_enomem;
  int first_plain_error;
  long empty_reads;
  long datagrams;
  long datagrams_sent;
  long dups;
  unsigned char* seen;
  long seen_len;
  long alloc_calls;
  /* Buffers lent to libuv: a pool of one spare, the recvmmsg slab. */
  char* spare;
  char* slab;
  long lent;
  /* Stop and close. */
  int acted;
  int first_was_report;
  int stopped;
  close_watch watch;
  long calls_while_stopped;
  long frees_while_stopped;
  long chunks_after_close;
  long frees_after_close;
  long others_after_close;
  long allocs_after_close;
  long batch_rest;             /* Chunks of the interrupted batch. */
  /* Send-only. */
  send_tally sends;
  /* The flood. */
  flood_t* flood;
  pid_t flood_pid;
  int tail;
  long tail_iterations;
  long tail_idle;
  /* At the end. */
  long reads_of_errqueue;
  long injected;
  long left_reports;
  long left_datagrams;
  long icmp_before;
  long icmp_errors;
  int icmp_counted;
} mctx;

static mctx mc;

/* The namespace a case ran in, and its ICMP limits. */
static int in_netns;
static const char* ratelimit = "unknown";

/* Moves into a private network namespace (netns.h, which lifts the ICMP
 * rate limits), and puts the kernel's default limits back unless lift.
 * Outside one (no privilege), the case runs with the machine's limits.
 */
static void enter_netns(int lift) {
  in_netns = private_netns() == 0;
  if (in_netns && !lift)
    default_icmp_limits();
  ratelimit = icmp_ratelimit();
}

/* The namespace's count of ICMP destination unreachables received, from
 * /proc/net/snmp (IPv4) or /proc/net/snmp6 (IPv6); -1 if unknown.
 */
static long icmp_received(int family) {
  char line[2048];
  FILE* f;
  long r;

  if (family != AF_INET6)
    return snmp_counter("Icmp:", "InDestUnreachs");
  f = fopen("/proc/net/snmp6", "r");
  if (f == NULL)
    return -1;
  r = -1;
  while (fgets(line, sizeof(line), f) != NULL)
    if (sscanf(line, "Icmp6InDestUnreachs %ld", &r) == 1)
      break;
  fclose(f);
  return r;
}

/* The peer: sends n numbered datagrams from port P to the handle, closes
 * P, and has the handle send `errors` datagrams to P. Returns 0 or -1.
 */
static int peer_act(int n, int errors) {
  char payload[4];
  int fd;
  int i;

  for (i = 0; i < n; i++) {
    put_seq(payload, (unsigned long) i);
    if (sendto(mc.peer, payload, sizeof(payload), 0,
               (struct sockaddr*) &mc.me, addr_len(&mc.me)) !=
        (ssize_t) sizeof(payload))
      return -1;
    mc.datagrams_sent++;
  }
  close(mc.peer);
  mc.peer = -1;
  fd = udp_fd(&mc.udp);
  mc.icmp_before = icmp_received(mc.family);
  for (i = 0; i < errors; i++)
    if (send_for_report(fd, &mc.peer_addr) != 0)
      return -1;
  return 0;
}

/* Notes the first thing that failed inside the loop. */
static void loop_error(const char* fmt, ...) {
  va_list ap;

  va_start(ap, fmt);
  harness_note_first(mc.loop_err, sizeof(mc.loop_err), fmt, ap);
  va_end(ap);
}

static void give_back(char* p) {
  if (p == NULL)
    return;
  mc.lent--;
  if (p == mc.slab)
    mc.slab = NULL;
  if (mc.spare == NULL)
    mc.spare = p;
  else
    free(p);
}

static void on_alloc(uv_handle_t* handle, size_t suggested, uv_buf_t* buf) {
  size_t len;

  (void) suggested;
  mc.alloc_calls++;
  if (mc.watch.closed)
    mc.allocs_after_close++;
  if (mc.stopped)
    mc.calls_while_stopped++;
  len = uv_udp_using_recvmmsg((uv_udp_t*) handle)
            ? (size_t) MMSG_CHUNKS * DGRAM_MAX
            : DGRAM_MAX;
  if (mc.spare != NULL) {
    buf->base = mc.spare;
    mc.spare = NULL;
  } else {
    buf->base = malloc(len);
  }
  buf->len = buf->base == NULL ? 0 : len;
  if (buf->base == NULL)
    return;
  mc.lent++;
  if (uv_udp_using_recvmmsg((uv_udp_t*) handle))
    mc.slab = buf->base;
}

static void close_all(void) {
  if (!uv_is_closing((uv_handle_t*) &mc.udp))
    close_watched((uv_handle_t*) &mc.udp, &mc.watch);
  close_handles(&mc.loop);
}

/* Takes off and counts what is still queued on the socket: reports on the
 * error queue, datagrams on the receive queue.
 */
static void count_left(void) {
  char payload[64];
  int fd;
  int n;

  if (mc.watch.closed || (fd = udp_fd(&mc.udp)) < 0)
    return;
  mc.left_reports += take_errqueue(fd, 1000000);
  /* A pending socket error fails one read without taking a datagram. */
  for (n = 0; n < 1000000; n++)
    if (recv(fd, payload, sizeof(payload), MSG_DONTWAIT) >= 0)
      mc.left_datagrams++;
    else if (errno != ECONNREFUSED && errno != EINTR)
      break;
}

static void on_end(uv_timer_t* timer) {
  (void) timer;
  /* What libuv did, before our own reads. */
  mc.reads_of_errqueue = errqueue_reads;
  mc.injected = injected;
  inject_errno = 0;
  count_left();
  close_all();
}

static void on_check(uv_check_t* check) {
  (void) check;
  mc.iterations++;
  if (mc.this_iter_any == 0)
    mc.idle_iterations++;
  if (mc.this_iter > mc.max_per_iter)
    mc.max_per_iter = mc.this_iter;
  if (mc.this_iter > 0 && mc.nlisted < MAX_LISTED)
    mc.listed[mc.nlisted++] = mc.this_iter;
  if (mc.flood != NULL && !mc.tail && mc.flood->done)
    mc.tail = 1;
  else if (mc.tail) {
    mc.tail_iterations++;
    if (mc.this_iter_any == 0)
      mc.tail_idle++;
  }
  mc.this_iter = 0;
  mc.this_iter_any = 0;
  /* recvmmsg: a batch cut short by uv_udp_recv_stop() gives no
   * UV_UDP_MMSG_FREE; its buffer is ours again.
   */
  if (mc.stopped && mc.slab != NULL)
    give_back(mc.slab);
}

static void on_recv(uv_udp_t* handle,
                    ssize_t nread,
                    const uv_buf_t* buf,
                    const struct sockaddr* addr,
                    unsigned flags);

static void on_resume(uv_timer_t* timer) {
  int r;

  (void) timer;
  mc.stopped = 0;
  r = uv_udp_recv_start(&mc.udp, on_alloc, on_recv);
  if (r != 0)
    loop_error("uv_udp_recv_start: %s", uv_strerror(r));
}

/* The stop and close cases act on the first callback that hands
 * something over.
 */
static void act(uv_udp_t* handle, int report) {
  int r;

  mc.acted = 1;
  mc.first_was_report = report;
  if (mc.cell->kind == KIND_STOP) {
    r = uv_udp_recv_stop(handle);
    if (r != 0)
      loop_error("uv_udp_recv_stop: %s", uv_strerror(r));
    mc.stopped = 1;
    if (uv_udp_using_recvmmsg(handle) && batch_seen > 0)
      mc.batch_rest = batch_size - batch_seen;
    uv_timer_start(&mc.resume, on_resume, RESUME_MS, 0);
  } else {
    if (uv_udp_using_recvmmsg(handle) && batch_seen > 0)
      mc.batch_rest = batch_size - batch_seen;
    close_watched((uv_handle_t*) handle, &mc.watch);
  }
}

static void on_recv(uv_udp_t* handle,
                    ssize_t nread,
                    const uv_buf_t* buf,
                    const struct sockaddr* addr,
                    unsigned flags) {
  unsigned long seq;
  int was_closed;
  int report;

  (void) addr;
  was_closed = mc.watch.closed;
  if (mc.stopped && !(flags & UV_UDP_MMSG_FREE))
    mc.calls_while_stopped++;

  if (flags & UV_UDP_MMSG_FREE) {
    if (mc.stopped)
      mc.frees_while_stopped++;
    if (was_closed)
      mc.frees_after_close++;
    give_back(buf->base);
    return;
  }
  if (flags & UV_UDP_MMSG_CHUNK) {
    batch_seen++;
    if (was_closed)
      mc.chunks_after_close++;
  } else if (was_closed) {
    mc.others_after_close++;
  }

  report = 0;
  if (flags & UV_UDP_LINUX_RECVERR) {
    /* A report is told by its flag: upstream gives it a positive nread. */
    report = 1;
    if (mc.reports == 0)
      mc.first_report_nread = (long) nread;
    mc.reports++;
    if (nread != UV_ECONNREFUSED)
      mc.bad_nread++;
    mc.this_iter++;
    mc.this_iter_any++;
  } else if (nread > 0) {
    mc.datagrams++;
    mc.this_iter++;
    mc.this_iter_any++;
    if (nread >= 4 && mc.seen != NULL) {
      seq = get_seq(buf->base);
      if (seq < (unsigned long) mc.seen_len) {
        if (mc.seen[seq])
          mc.dups++;
        mc.seen[seq] = 1;
      }
    }
  } else if (nread < 0) {
    if (mc.plain_errors == 0)
      mc.first_plain_error = (int) nread;
    mc.plain_errors++;
    if (nread == UV_ECONNREFUSED)
      mc.plain_refused++;
    if (nread == UV_ECONNREFUSED && refused_state == REFUSED_NO_REPORT)
      mc.plain_no_report++;
    else if (nread == UV_ENOMEM)
      mc.plain_enomem++;
    mc.this_iter_any++;
  } else {
    mc.empty_reads++;
  }

  if (!(flags & UV_UDP_MMSG_CHUNK) && buf != NULL)
    give_back(buf->base);

  /* A stop acts at the first report, so that every tree is cut at the same
   * place: upstream's first callback is a plain error, outside any batch.
   */
  if (!mc.acted && !was_closed &&
      ((mc.cell->kind == KIND_STOP && report) ||
       (mc.cell->kind == KIND_CLOSE && (report || nread != 0))))
    act(handle, report);
}

/* 50 ms into the run: the peer sends and closes, the errors come back. */
static void on_go(uv_timer_t* timer) {
  (void) timer;
  if (peer_act(mc.datagrams_to_send, mc.errors_to_send) != 0)
    loop_error("the peer's sends: %s", strerror(errno));
  if (mc.cell->kind == KIND_ENOMEM)
    inject_errno = ENOMEM;
}

/* The flooding child: sends to the closed port from the handle's socket
 * (shared through fork(); ICMP errors go to the socket that sent),
 * FLOOD_PER_MS each millisecond, and every FLOOD_DATA_EVERY a numbered
 * datagram to the handle from a socket of its own, until FLOOD_MS have
 * passed or max errors were elicited.
 */
static void flooder(flood_t* f) {
  struct timespec ts;
  char payload[4];
  uint64_t start;
  uint64_t next;
  long ms;
  int data_fd;
  int i;

  data_fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (data_fd < 0) {
    f->failed = errno;
    return;
  }
  start = uv_hrtime();
  for (ms = 1; ms <= FLOOD_MS && f->elicited < f->max; ms++) {
    for (i = 0; i < FLOOD_PER_MS && f->elicited < f->max; i++) {
      if (sendto(f->fd, "flood", 5, 0, (struct sockaddr*) &f->closed,
                 sizeof(f->closed)) == 5) {
        f->elicited++;
        if (f->elicited % FLOOD_DATA_EVERY != 0)
          continue;
        put_seq(payload, (unsigned long) f->data_sent);
        if (sendto(data_fd, payload, sizeof(payload), 0,
                   (struct sockaddr*) &f->target, sizeof(f->target)) ==
            (ssize_t) sizeof(payload))
          f->data_sent++;
      } else if (errno != ECONNREFUSED && errno != EINTR &&
                 errno != EAGAIN && errno != ENOBUFS) {
        f->failed = errno;
        close(data_fd);
        return;
      }
    }
    next = start + (uint64_t) ms * 1000000;
    ts.tv_sec = (time_t) (next / 1000000000);
    ts.tv_nsec = (long) (next % 1000000000);
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
  }
  close(data_fd);
}

/* The child's whole life (spawn() runs it): the flood, then the word
 * that it ended.
 */
static void flood_child(void* arg) {
  flooder(arg);
  ((flood_t*) arg)->done = 1;
}

/* The loop, the handle (bound or opened, connected to the peer or not),
 * the peer's socket at port P, the timers and the check handle.
 */
static int setup(const cell_t* c) {
  struct sockaddr_storage ss;
  unsigned init_flags;
  socklen_t len;
  int namelen;
  int level;
  int name;
  int yes;
  int fd;

  memset(&mc, 0, sizeof(mc));
  mc.cell = c;
  mc.family = c->ipv6 ? AF_INET6 : AF_INET;
  mc.recverr = c->sock == MX_BOUND_FLAG || c->sock == MX_OPEN_RECVERR;
  mc.peer = -1;
  mc.icmp_before = -1;
  init_flags = c->mmsg ? UV_UDP_RECVMMSG : 0;
  loopback_addr(mc.family, &ss);
  CHECK_UV(uv_loop_init(&mc.loop));
  if (c->sock == MX_BOUND_FLAG || c->sock == MX_BOUND_NOFLAG) {
    CHECK_UV(uv_udp_init_ex(&mc.loop,
                            &mc.udp,
                            (unsigned) mc.family | init_flags));
    CHECK_UV(uv_udp_bind(&mc.udp,
                         (const struct sockaddr*) &ss,
                         c->sock == MX_BOUND_FLAG ? UV_UDP_LINUX_RECVERR
                                                  : 0));
  } else {
    /* The owner makes the socket, sets the option or not, binds it. */
    fd = socket(mc.family, SOCK_DGRAM, 0);
    CHECK_GE(fd, 0);
    if (c->sock == MX_OPEN_RECVERR) {
      level = c->ipv6 ? IPPROTO_IPV6 : IPPROTO_IP;
      name = c->ipv6 ? IPV6_RECVERR : IP_RECVERR;
      yes = 1;
      CHECK_EQ(setsockopt(fd, level, name, &yes, sizeof(yes)), 0);
    }
    CHECK_EQ(bind(fd, (struct sockaddr*) &ss, addr_len(&ss)), 0);
    CHECK_UV(uv_udp_init_ex(&mc.loop, &mc.udp, AF_UNSPEC | init_flags));
    CHECK_UV(uv_udp_open(&mc.udp, fd));
  }
  if (c->mmsg && !uv_udp_using_recvmmsg(&mc.udp))
    SKIP("recvmmsg is not supported here (uv_udp_using_recvmmsg)");
  namelen = sizeof(mc.me);
  CHECK_UV(uv_udp_getsockname(&mc.udp, (struct sockaddr*) &mc.me, &namelen));

  mc.peer = socket(mc.family, SOCK_DGRAM, 0);
  CHECK_GE(mc.peer, 0);
  loopback_addr(mc.family, &mc.peer_addr);
  CHECK(bind(mc.peer, (struct sockaddr*) &mc.peer_addr,
             addr_len(&mc.peer_addr)) == 0);
  len = sizeof(mc.peer_addr);
  CHECK_EQ(getsockname(mc.peer, (struct sockaddr*) &mc.peer_addr, &len), 0);
  if (c->connected)
    CHECK_UV(uv_udp_connect(&mc.udp,
                            (const struct sockaddr*) &mc.peer_addr));

  CHECK_UV(uv_timer_init(&mc.loop, &mc.end));
  CHECK_UV(uv_timer_init(&mc.loop, &mc.go));
  CHECK_UV(uv_timer_init(&mc.loop, &mc.resume));
  CHECK_UV(uv_check_init(&mc.loop, &mc.check));
  CHECK_UV(uv_check_start(&mc.check, on_check));
  return CASE_OK;
}

static int make_seen(long n) {
  mc.seen_len = n;
  mc.seen = calloc((size_t) n, 1);
  return mc.seen == NULL ? -1 : 0;
}

/* Runs the loop for ms, until the end timer closes everything; returns
 * what uv_loop_close() returned.
 */
static int run_for(uint64_t ms) {
  errqueue_reads = 0;
  injected = 0;
  uv_timer_start(&mc.end, on_end, ms, 0);
  uv_run(&mc.loop, UV_RUN_DEFAULT);
  if (mc.peer >= 0)
    close(mc.peer);
  mc.peer = -1;
  if (mc.icmp_before >= 0 && in_netns) {
    mc.icmp_errors = icmp_received(mc.family) - mc.icmp_before;
    mc.icmp_counted = 1;
  }
  return uv_loop_close(&mc.loop);
}

/* The case's failures, joined. */
static char faults[480];

static void fault(const char* fmt, ...) {
  va_list ap;
  size_t used;

  used = strlen(faults);
  if (used + 8 >= sizeof(faults))
    return;
  if (used > 0) {
    strcpy(faults + used, "; ");
    used += 2;
  }
  va_start(ap, fmt);
  vsnprintf(faults + used, sizeof(faults) - used, fmt, ap);
  va_end(ap);
}

/* A bound on wall-clock time: reported, not judged, under valgrind. */
static void timing_fault(const char* fmt, ...) {
  char text[256];
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  if (harness_timing_reported())
    fprintf(stderr, "# timing: %s (not judged: UVPATCH_TIMING=report)\n",
            text);
  else
    fault("%s", text);
}

static const char* err_name(int err) {
  return err == 0 ? "-" : uv_err_name(err);
}

/* The case's JSON line on stdout, and its summary on stderr. */
static void print_figures(const cell_t* c) {
  char list[160];
  size_t used;
  int i;

  used = 0;
  list[0] = '\0';
  for (i = 0; i < mc.nlisted && used + 16 < sizeof(list); i++)
    used += (size_t) snprintf(list + used, sizeof(list) - used, "%s%ld",
                              i ? ", " : "", mc.listed[i]);
  printf("{\"matrix\": \"%s\", \"iterations\": %ld, \"reports\": %ld, "
         "\"plain_errors\": %ld, \"datagrams\": %ld, "
         "\"max_per_iteration\": %ld, \"icmp_ratelimit\": \"%s\", "
         "\"netns\": \"%s\", \"icmp_errors\": %ld, "
         "\"datagrams_sent\": %ld, \"first_plain_error\": ",
         c->name, mc.iterations, mc.reports, mc.plain_errors, mc.datagrams,
         mc.max_per_iter, ratelimit, in_netns ? "private" : "host",
         mc.icmp_errors, mc.datagrams_sent);
  if (mc.plain_errors == 0)
    printf("null");
  else
    printf("\"%s\"", uv_err_name(mc.first_plain_error));
  printf(", \"plain_errors_no_report\": %ld, \"bad_nread\": %ld, "
         "\"idle_iterations\": %ld, \"per_iteration\": [%s], "
         "\"errqueue_reads\": %ld, \"left_reports\": %ld, "
         "\"left_datagrams\": %ld",
         mc.plain_no_report, mc.bad_nread, mc.idle_iterations, list,
         mc.reads_of_errqueue, mc.left_reports, mc.left_datagrams);
  switch (c->kind) {
    case KIND_SEND_ONLY:
      printf(", \"sends\": %d, \"send_callbacks\": %ld, \"send_ok\": %ld, "
             "\"send_refused\": %ld, \"send_other\": %ld",
             SEND_ONLY_SENDS, mc.sends.cbs, mc.sends.ok, mc.sends.refused,
             mc.sends.other);
      break;
    case KIND_STOP:
      printf(", \"calls_while_stopped\": %ld, \"frees_while_stopped\": %ld, "
             "\"batch_rest\": %ld", mc.calls_while_stopped,
             mc.frees_while_stopped, mc.batch_rest);
      break;
    case KIND_CLOSE:
      printf(", \"first_was_report\": %s, \"chunks_after_close\": %ld, "
             "\"frees_after_close\": %ld, \"others_after_close\": %ld, "
             "\"allocs_after_close\": %ld",
             mc.first_was_report ? "true" : "false", mc.chunks_after_close,
             mc.frees_after_close, mc.others_after_close,
             mc.allocs_after_close);
      break;
    case KIND_FLOOD:
      printf(", \"flood_ms\": %d, \"elicited\": %ld, "
             "\"tail_iterations\": %ld, \"tail_idle_iterations\": %ld",
             FLOOD_MS, mc.flood != NULL ? mc.flood->elicited : 0,
             mc.tail_iterations, mc.tail_idle);
      break;
    case KIND_ENOMEM:
      printf(", \"injected\": %ld, \"enomem_errors\": %ld", mc.injected,
             mc.plain_enomem);
      break;
  }
  printf("}\n");
  fflush(stdout);

  fprintf(stderr,
          "# %s: iterations=%ld (idle %ld) reports=%ld (bad nread %ld) "
          "plain_errors=%ld (first %s, no report %ld) datagrams=%ld of %ld "
          "max/iter=%ld per_iter=[%s] icmp=%ld left=%ld/%ld "
          "errqueue_reads=%ld ratelimit=%s netns=%s\n",
          c->name, mc.iterations, mc.idle_iterations, mc.reports,
          mc.bad_nread, mc.plain_errors, err_name(mc.first_plain_error),
          mc.plain_no_report,
          mc.datagrams, mc.datagrams_sent, mc.max_per_iter, list,
          mc.icmp_errors, mc.left_reports, mc.left_datagrams,
          mc.reads_of_errqueue, ratelimit, in_netns ? "private" : "host");
}

/* The rule, for the cases that receive. */
static void judge_common(const cell_t* c, long lost_allowed) {
  long lost;

  if (c->kind != KIND_FLOOD && mc.iterations > SPIN_BOUND)
    fault("spin: %ld loop iterations in %d ms (%ld idle), bound %d",
          mc.iterations, RUN_MS, mc.idle_iterations, SPIN_BOUND);
  if (mc.max_per_iter > BUDGET)
    fault("%ld callbacks in one iteration, budget %d", mc.max_per_iter,
          BUDGET);
  if (mc.dups != 0)
    fault("%ld datagrams delivered twice", mc.dups);

  lost = 0;
  if (mc.recverr) {
    /* Reports lost to a stop count with the datagrams of their batch. */
    if (mc.reports > mc.icmp_errors)
      fault("%ld reports for %ld ICMP errors", mc.reports, mc.icmp_errors);
    else
      lost += mc.icmp_errors - mc.reports;
    if (mc.plain_refused != 0)
      fault("%ld plain %s beside %ld reports: duplicates", mc.plain_refused,
            uv_err_name(UV_ECONNREFUSED), mc.reports);
  } else {
    if (mc.reports != 0)
      fault("%ld reports on a socket without IP_RECVERR", mc.reports);
    if (c->connected && mc.icmp_errors > 0 && mc.plain_refused != 1)
      fault("%ld plain ECONNREFUSED for %ld ICMP error on a connected "
            "socket without IP_RECVERR, expected 1", mc.plain_refused,
            mc.icmp_errors);
    if (!c->connected && mc.plain_refused != 0)
      fault("%ld plain ECONNREFUSED on an unconnected socket without "
            "IP_RECVERR, expected none", mc.plain_refused);
  }
  if (mc.datagrams < mc.datagrams_sent)
    lost += mc.datagrams_sent - mc.datagrams;
  if (lost > lost_allowed) {
    if (mc.recverr && mc.reports < mc.icmp_errors)
      fault("lost reports: %ld of %ld ICMP errors reported (%ld still "
            "queued at the end)", mc.reports, mc.icmp_errors,
            mc.left_reports);
    if (mc.datagrams < mc.datagrams_sent)
      fault("lost datagrams: %ld of %ld delivered (%ld still queued)",
            mc.datagrams, mc.datagrams_sent, mc.left_datagrams);
    if (lost_allowed > 0)
      fault("(%ld of the interrupted recvmmsg batch allowed)",
            lost_allowed);
  }
  if (mc.plain_errors != mc.plain_refused + mc.plain_enomem)
    fault("%ld plain errors, the first %s", mc.plain_errors,
          uv_err_name(mc.first_plain_error));
  if (mc.lent != 0)
    fault("%ld buffers from alloc_cb never given back", mc.lent);
  if (mc.loop_err[0] != '\0')
    fault("%s", mc.loop_err);
}

static int finish(const cell_t* c, int loop_close) {
  if (loop_close != 0)
    fault("uv_loop_close: %s", uv_strerror(loop_close));
  free(mc.spare);
  mc.spare = NULL;
  free(mc.seen);
  mc.seen = NULL;
  (void) c;
  if (faults[0] != '\0')
    FAIL("%s", faults);
  return CASE_OK;
}

/* One ICMP error and 10 datagrams while receiving; or 20 and 40 queued
 * before uv_udp_recv_start(); or the stop, close or ENOMEM cases.
 */
static int receive_case(const cell_t* c) {
  int r;

  if (c->kind == KIND_AFTER_QUEUED) {
    mc.datagrams_to_send = QUEUED_DATAGRAMS;
    mc.errors_to_send = QUEUED_ERRORS;
  } else if (c->kind == KIND_CELL) {
    mc.datagrams_to_send = CELL_DATAGRAMS;
    mc.errors_to_send = 1;
  } else {
    mc.datagrams_to_send = CELL_DATAGRAMS;
    mc.errors_to_send = FEW_ERRORS;
  }
  CHECK_EQ(make_seen(mc.datagrams_to_send), 0);
  if (c->kind == KIND_AFTER_QUEUED) {
    /* Queued while the handle runs in the loop without receiving. */
    CHECK_EQ(peer_act(mc.datagrams_to_send, mc.errors_to_send), 0);
    uv_run(&mc.loop, UV_RUN_NOWAIT);
    CHECK_UV(uv_udp_recv_start(&mc.udp, on_alloc, on_recv));
  } else {
    CHECK_UV(uv_udp_recv_start(&mc.udp, on_alloc, on_recv));
    CHECK_UV(uv_timer_start(&mc.go, on_go, GO_MS, 0));
  }
  r = run_for(RUN_MS);
  if (!mc.icmp_counted)
    mc.icmp_errors = mc.errors_to_send;
  print_figures(c);

  switch (c->kind) {
    case KIND_STOP:
      judge_common(c, mc.batch_rest);
      if (!mc.acted)
        fault("recv_cb never handed anything over");
      if (mc.calls_while_stopped != 0)
        fault("%ld alloc_cb/recv_cb calls after uv_udp_recv_stop()",
              mc.calls_while_stopped);
      if (mc.frees_while_stopped != (mc.batch_rest > 0))
        fault("%ld UV_UDP_MMSG_FREE after uv_udp_recv_stop() cut a batch of "
              "%ld more chunks, expected %d", mc.frees_while_stopped,
              mc.batch_rest, mc.batch_rest > 0);
      break;
    case KIND_CLOSE:
      /* Closing drops what is still queued: the rule is what comes before
       * and after uv_close().
       */
      if (mc.iterations > SPIN_BOUND)
        fault("spin: %ld loop iterations in %d ms", mc.iterations, RUN_MS);
      if (mc.max_per_iter > BUDGET)
        fault("%ld callbacks in one iteration, budget %d", mc.max_per_iter,
              BUDGET);
      if (!mc.acted)
        fault("recv_cb never handed anything over");
      else if (!mc.first_was_report)
        fault("the first callback was a plain %s, not the report",
              err_name(mc.first_plain_error));
      if (mc.watch.close_cbs != 1)
        fault("close_cb ran %d times", mc.watch.close_cbs);
      if (mc.allocs_after_close + mc.others_after_close != 0)
        fault("%ld alloc_cb and %ld other recv_cb calls after uv_close()",
              mc.allocs_after_close, mc.others_after_close);
      /* recvmmsg: the rest of the batch already read still comes, then
       * one UV_UDP_MMSG_FREE; nothing beyond it.
       */
      if (mc.chunks_after_close > mc.batch_rest ||
          mc.frees_after_close > 1)
        fault("%ld chunks and %ld UV_UDP_MMSG_FREE after uv_close(), "
              "the batch had %ld more", mc.chunks_after_close,
              mc.frees_after_close, mc.batch_rest);
      if (mc.lent != 0)
        fault("%ld buffers from alloc_cb never given back", mc.lent);
      if (mc.loop_err[0] != '\0')
        fault("%s", mc.loop_err);
      break;
    case KIND_ENOMEM:
      judge_common(c, 0);
      if (mc.injected != 1)
        fault("libuv never read the error queue (%ld reads), so no ENOMEM "
              "was made", mc.reads_of_errqueue);
      else if (mc.plain_enomem != 1)
        fault("the error-queue read's ENOMEM reached recv_cb %ld times, "
              "expected once", mc.plain_enomem);
      break;
    default:
      judge_common(c, 0);
      break;
  }
  return finish(c, r);
}

/* 2000 sends to a closed port from a handle that never receives. */
static int send_only_case(const cell_t* c) {
  const char* why;
  uv_buf_t buf;
  int sndbuf;
  int r;
  int i;

  close(mc.peer);
  mc.peer = -1;
  sndbuf = SEND_ONLY_SNDBUF;
  CHECK_UV(uv_send_buffer_size((uv_handle_t*) &mc.udp, &sndbuf));
  mc.icmp_before = icmp_received(mc.family);
  buf = uv_buf_init("send-only", 9);
  r = send_n(&mc.udp,
             &mc.sends,
             &buf,
             SEND_ONLY_SENDS,
             c->connected ? NULL : (const struct sockaddr*) &mc.peer_addr,
             &i);
  if (r != 0)
    FAIL("uv_udp_send #%d: %s", i, uv_strerror(r));
  r = run_for(RUN_MS);
  print_figures(c);

  if ((why = sends_missing(&mc.sends, SEND_ONLY_SENDS)) != NULL)
    fault("%s", why);
  if ((why = sends_failed(&mc.sends)) != NULL)
    fault("%s", why);
  if (mc.alloc_calls + mc.reports + mc.plain_errors + mc.datagrams +
      mc.empty_reads != 0)
    fault("%ld alloc_cb and %ld recv_cb calls on a handle that never "
          "received", mc.alloc_calls,
          mc.reports + mc.plain_errors + mc.datagrams + mc.empty_reads);
  if (mc.idle_iterations > SPIN_BOUND)
    fault("spin: %ld of %ld loop iterations in %d ms did nothing",
          mc.idle_iterations, mc.iterations, RUN_MS);
  return finish(c, r);
}

/* The flood: FLOOD_MS of ICMP errors and datagrams from a second process,
 * then TAIL_MS for the loop to hand over what is left.
 */
static int flood_case(const cell_t* c) {
  socklen_t len;
  flood_t* f;
  int child_ok;
  int rcvbuf;
  int fd;
  int r;

  fd = udp_fd(&mc.udp);
  CHECK_GE(fd, 0);
  rcvbuf = FLOOD_RCVBUF;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf,
                 sizeof(rcvbuf)) != 0)
    CHECK_UV(uv_recv_buffer_size((uv_handle_t*) &mc.udp, &rcvbuf));
  len = sizeof(rcvbuf);
  CHECK_EQ(getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, &len), 0);

  f = mmap(NULL, sizeof(*f), PROT_READ | PROT_WRITE,
           MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  CHECK(f != MAP_FAILED);
  memset(f, 0, sizeof(*f));
  mc.flood = f;
  f->fd = fd;
  /* All of it fits in the receive buffer: the kernel drops nothing. */
  f->max = FLOOD_MAX;
  if (f->max > rcvbuf / 2048)
    f->max = rcvbuf / 2048;
  memcpy(&f->closed, &mc.peer_addr, sizeof(f->closed));
  memcpy(&f->target, &mc.me, sizeof(f->target));
  CHECK_EQ(make_seen(f->max / FLOOD_DATA_EVERY + 1), 0);
  close(mc.peer);
  mc.peer = -1;
  CHECK_UV(uv_udp_recv_start(&mc.udp, on_alloc, on_recv));

  mc.icmp_before = icmp_received(mc.family);
  mc.flood_pid = spawn(flood_child, f, FLOOD_MS / 1000 + 10);
  CHECK_GE(mc.flood_pid, 0);
  r = run_for(FLOOD_MS + TAIL_MS);
  child_ok = reap(mc.flood_pid, 5000);
  mc.datagrams_sent = f->data_sent;
  if (!mc.icmp_counted)
    mc.icmp_errors = f->elicited;
  print_figures(c);

  if (!child_ok || f->failed != 0)
    fault("the flooding child did not end cleanly (errno %d)", f->failed);
  if (mc.reports + mc.left_reports > mc.icmp_errors)
    fault("%ld reports and %ld left queued for %ld ICMP errors",
          mc.reports, mc.left_reports, mc.icmp_errors);
  else if (mc.reports + mc.left_reports < mc.icmp_errors)
    fault("lost reports: %ld reported, %ld left queued, of %ld ICMP "
          "errors", mc.reports, mc.left_reports, mc.icmp_errors);
  if (mc.left_reports != 0)
    timing_fault("%ld of %ld reports not handed over %d ms after the "
                 "flood", mc.left_reports, mc.icmp_errors, TAIL_MS);
  /* A socket error that libuv passed on after it found the error queue
   * empty is the kernel's (see refused_state): counted, not judged.
   */
  if (mc.plain_refused > FLOOD_DUPS_BASE + mc.reports / FLOOD_DUPS_PER)
    fault("%ld plain %s beside %ld reports: duplicates, more than %ld",
          mc.plain_refused, uv_err_name(UV_ECONNREFUSED), mc.reports,
          FLOOD_DUPS_BASE + mc.reports / FLOOD_DUPS_PER);
  if (mc.plain_errors != mc.plain_refused)
    fault("%ld plain errors, the first %s", mc.plain_errors,
          uv_err_name(mc.first_plain_error));
  if (mc.max_per_iter > BUDGET)
    fault("%ld callbacks in one iteration, budget %d", mc.max_per_iter,
          BUDGET);
  if (mc.tail_idle > SPIN_BOUND)
    fault("spin: %ld of the %ld loop iterations after the flood did "
          "nothing", mc.tail_idle, mc.tail_iterations);
  if (mc.dups != 0)
    fault("%ld datagrams delivered twice", mc.dups);
  if (mc.datagrams + mc.left_datagrams < mc.datagrams_sent)
    fault("lost datagrams: %ld delivered, %ld left queued, of %ld",
          mc.datagrams, mc.left_datagrams, mc.datagrams_sent);
  else if (mc.left_datagrams != 0)
    timing_fault("%ld of %ld datagrams not handed over %d ms after the "
                 "flood", mc.left_datagrams, mc.datagrams_sent, TAIL_MS);
  if (mc.lent != 0)
    fault("%ld buffers from alloc_cb never given back", mc.lent);
  mc.flood = NULL;
  munmap(f, sizeof(*f));
  return finish(c, r);
}

static int run_cell(const cell_t* c) {
  int r;

  enter_netns(c->kind == KIND_FLOOD || c->kind == KIND_SEND_ONLY);
  if (c->kind == KIND_FLOOD && !in_netns)
    SKIP("the flood runs in a private network namespace only (root or "
         "unprivileged user namespaces)");
  if (c->ipv6 && no_ipv6())
    SKIP("no IPv6 loopback (::1) here");
  faults[0] = '\0';
  r = setup(c);
  if (r != CASE_OK)
    return r;
  switch (c->kind) {
    case KIND_SEND_ONLY:
      return send_only_case(c);
    case KIND_FLOOD:
      return flood_case(c);
    default:
      return receive_case(c);
  }
}

#else  /* !__linux__ */

static int run_cell(const cell_t* c) {
  (void) c;
  SKIP("Linux only: IP_RECVERR and the socket error queue");
}

#endif  /* __linux__ */

#define MATRIX_CASE_FN(name, sock, ipv6, mmsg, connected, kind)              \
  static int case_##name(void) {                                              \
    static const cell_t c = { #name, sock, ipv6, mmsg, connected, kind };     \
    return run_cell(&c);                                                      \
  }
MATRIX(MATRIX_CASE_FN)

#define MATRIX_CASE_ENTRY(name, sock, ipv6, mmsg, connected, kind)           \
  { #name, case_##name, 0 },

static const test_case cases[] = {
  MATRIX(MATRIX_CASE_ENTRY)
  { NULL, NULL, 0 }
};

int main(int argc, char** argv) {
  return harness_main(cases, argc, argv);
}
