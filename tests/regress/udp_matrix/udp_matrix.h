/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The case matrix of the socket error queue: every way a UDP
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
 * iterations are loop iterations in the run (a check handle counts them;
 * those of the end's waits, below, are left out), reports the recv_cb
 * calls with UV_UDP_LINUX_RECVERR, plain_errors those with a negative
 * nread and no flag, datagrams those with data, max_per_iteration the
 * most datagrams and max_reports_per_iteration the most reports handed
 * over in one iteration. icmp_errors is what the kernel received: the
 * namespace's Icmp InDestUnreachs (Icmp6InDestUnreachs) counter, or,
 * outside a private namespace, the datagrams sent to the closed port.
 *
 * Then the case judges itself against upstream's rules, which the
 * patches keep, on every tree: no spin (more than 20 loop iterations in
 * the run after one ICMP error), no lost report (fewer reports than ICMP
 * errors, on a socket with IP_RECVERR) and none twice, no more plain
 * ECONNREFUSED than ICMP errors (a flagged socket may get one beside a
 * report, as on upstream; a socket without IP_RECVERR gets one when
 * connected and nothing when not), at most 32 datagrams and, on their own
 * budget, 32 reports per iteration, no datagram lost, no buffer kept, no
 * crash. Whether the patched tree is no worse than upstream's unpatched
 * tree is for the reader of the JSON lines of both.
 *
 * What some cases allow. Stop (at the first report, on every tree): in
 * recvmmsg mode, the reports and datagrams of the batch that
 * uv_udp_recv_stop() cut short, read from the socket and never handed
 * over (upstream's rule), and then one UV_UDP_MMSG_FREE for that batch's
 * buffer; everything else comes once recv_start runs again. Close (at
 * the first callback that hands something over, a plain ECONNREFUSED or
 * a report): only what comes before and after uv_close() is judged.
 * ENOMEM: that error once in recv_cb, and every report after it. Flood:
 * the receive buffer holds every report, so reports handed over plus
 * those left queued equal the ICMP errors.
 *
 * The run ends RUN_MS after it starts, or later while the socket still
 * holds what the case sent and libuv goes on reading, or a stopped
 * handle waits for its restart (settle.h): a loaded machine delays a
 * case but does not change what it counts.
 *
 * Each case runs in a private network namespace when it can (root, or
 * unprivileged user namespaces), so that nobody else's traffic shares the
 * ICMP rate limit. The flood and the send-only cases keep the limits that
 * netns.h raises; the others put back the kernel's defaults (burst 50,
 * then 1000 a second, which their few errors stay within). "icmp_ratelimit"
 * says which held. Only loopback (127.0.0.1, ::1) is sent to. Linux only:
 * elsewhere every case is skipped.
 *
 * The files: reads.c, the program's recvmsg() and recvmmsg(); loop.c, the
 * loop of a case and its callbacks; judge.c, the figures and the rule;
 * receive.c, send_only.c and flood.c, what the kinds of case do; main.c,
 * the table of cases.
 */

#ifndef UDP_MATRIX_H_
#define UDP_MATRIX_H_

#if defined(__linux__) && !defined(_GNU_SOURCE)
# define _GNU_SOURCE  /* unshare(), CLONE_NEWNET, RTLD_NEXT */
#endif

#include <uv.h>

#define HARNESS_SHARED
#include "harness.h"

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
#include "loopback.h"
#include "netns.h"
#include "sends.h"
#include "settle.h"

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
/* Busy iterations whose counts are printed. */
#define MAX_LISTED 12

/* reads.c: what the program's recvmsg() and recvmmsg() saw, and the
 * error they are to make.
 */
extern long errqueue_reads;
extern int inject_errno;
extern long injected;
/* The last batch of recvmmsg(): its size and the chunks handed over. */
extern long batch_size;
extern long batch_seen;
/* After a plain read failed with ECONNREFUSED: REFUSED_READ; after an
 * error-queue read right after it found the queue empty: REFUSED_NO_REPORT.
 * The kernel queues a report before it sets the socket error, so a reader
 * that takes the report in between, while a second process elicits ICMP
 * errors, finds a socket error with no report left for it, which libuv
 * cannot tell from one whose report the kernel could not queue.
 */
enum { REFUSED_NONE, REFUSED_READ, REFUSED_NO_REPORT };
extern int refused_state;

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
  long this_iter;              /* Datagrams. */
  long this_iter_reports;
  long this_iter_any;          /* Every callback but empty reads. */
  long max_per_iter;
  long max_reports_per_iter;
  long waits;                  /* Iterations of the end's waits. */
  settle_state settle;
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

/* loop.c: a case's state, the loop and its callbacks. */
extern mctx mc;
extern int in_netns;
extern const char* ratelimit;

void enter_netns(int lift);
long icmp_received(int family);
int peer_act(int n, int errors);
int recv_start(void);
void on_go(uv_timer_t* timer);
int setup(const cell_t* c);
int make_seen(long n);
int run_for(uint64_t ms);

/* judge.c: the case's failures, its figures and the rule. */
extern char faults[480];

void fault(const char* fmt, ...);
void timing_fault(const char* fmt, ...);
const char* err_name(int err);
void print_figures(const cell_t* c);
void judge_common(const cell_t* c, long lost_allowed);
int finish(const cell_t* c, int loop_close);

/* What the kinds of case do, once setup() made the handle. */
int receive_case(const cell_t* c);
int send_only_case(const cell_t* c);
int flood_case(const cell_t* c);

#endif  /* __linux__ */

#endif  /* UDP_MATRIX_H_ */
