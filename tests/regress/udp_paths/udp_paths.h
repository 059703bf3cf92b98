/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The paths to the socket error queue that udp_matrix does not take.
 * backlog_*: 20,000 datagrams queued, 20 us of work on each in
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
 * stop. In a private network namespace, on loopback only. Linux only.
 *
 * The files: loop.c, the program's reads, a case's loop and the prober;
 * backlog.c, flood.c, mixed.c and mapped.c, the cases' bodies; main.c,
 * the table of cases.
 */

#ifndef UDP_PATHS_H_
#define UDP_PATHS_H_

#if defined(__linux__) && !defined(_GNU_SOURCE)
# define _GNU_SOURCE  /* unshare(), CLONE_NEWNET, RTLD_NEXT */
#endif

#include <uv.h>

#define HARNESS_SHARED
#include "harness.h"

#define LINUX_ONLY "Linux only: IP_RECVERR and the socket error queue"

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

enum { ACT_NONE, ACT_STOP, ACT_RESTART, ACT_CLOSE };

extern const char* case_name;  /* The case running, for its JSON line. */

/* The cases' bodies, in the files of their names. */
int backlog_case(int kind);
int flood_case(void);
int mixed_case(int how, int mmsg);
int mapped_case(void);

#ifdef __linux__

#include <linux/net_tstamp.h>
#include <sys/mman.h>

#include "child.h"
#include "dgram.h"
#include "handles.h"
#include "loopback.h"
#include "netns.h"
#include "settle.h"
#include "stats.h"

#define DGRAM_MAX (64 * 1024)
#define MMSG_CHUNKS 20
/* The backlog, a probe every PROBE_MS, the bound on a report's median
 * lag (below); the flood and its bounds: error-queue reads, upstream's 50
 * times 1.3; reads on the socket and alloc_cb calls, twice upstream's 75,
 * since an event whose plain read returns an ICMP error reads on once
 * more, with its alloc_cb call, to find the datagrams behind it.
 */
#define BACKLOG 20000
#define SPEND_NS 20000
#define PROBE_MS 10
#define MAX_PROBES 150
/* A report's lag: the datagrams handed over between its send and its
 * report. The datagrams' budget of the event running when it came, then
 * that of the next, whose error-queue loop reads it: load cannot change
 * that count, as it does the latency in ms (printed, not judged).
 */
#define MEDIAN_LAG 64
#define FLOOD 1000
#define FLOOD_ERRQ_CALLS 65
#define FLOOD_SOCKET_CALLS 150
#define FLOOD_ALLOCS 150
#define MIXED_REPORTS 20
#define MIXED_DATAGRAMS 50
#define RESUME_MS 100
#define MAPPED_SENDS 3
#define PACE_MS 100
/* Every case ends once it has what it waits for; this bound, generous so
 * that a loaded machine delays a case without ending it early, only ends
 * one that waits in vain.
 */
#define SAFETY_MS 5000
/* A probe's payload, MAGIC and a number, in its report's first SCAN. */
#define MAGIC "uvP!"
#define SCAN 64

/* On stderr, where the test command keeps a case's figures. */
#define FIGURE(...) fprintf(stderr, __VA_ARGS__)

/* On watch_fd: error-queue reads (recvmmsg() among them), messages read. */
extern long errq_calls;
extern long errq_mmsg_calls;
extern long msgs_read;
/* On watch_fd: poll() and getsockopt(SO_ERROR) calls (socket_calls.h),
 * and the reads above.
 */
extern int watch_fd;
extern long socket_calls;

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
  /* Datagrams handed over (the loop counts them), and their number when
   * each send returned.
   */
  volatile long delivered;
  volatile long sent_at[MAX_PROBES];
} probe_t;

typedef struct {
  uv_loop_t loop;
  uv_udp_t udp;
  uv_timer_t end;
  uv_timer_t timer;
  uv_check_t check;
  long waits;         /* Of the end, for what is still to come. */
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
  uint64_t lag[MAX_PROBES];
  int acted, stopped, closed;
  long calls_stopped, frees_stopped, calls_closed, chunks_closed;
} pctx;

/* loop.c: a case's state, its loop and the prober. */
extern pctx P;

void on_end(uv_timer_t* timer);
int recv_start(void);
int setup(const char* addr, unsigned init, unsigned bind, int rcvbuf);
int run(void);
int queue(long n, long m);
pid_t start_prober(unsigned period_ms, long max, int connected);

#endif  /* __linux__ */

#endif  /* UDP_PATHS_H_ */
