/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * Hostile-peer cases for the UDP receive path of the patched libuv: a
 * second process floods the socket with datagrams or provokes a flood of
 * ICMP error reports, a peer sends datagrams larger than the buffer or
 * empty ones, and the receive callback closes, stops or restarts the handle
 * at every point of a backlog.
 *
 * Every flood goes to loopback only (127.0.0.1), comes from a child made
 * with fork() that stops by itself after a bounded time and count (and is
 * killed with its parent), and every case finishes within about 8 seconds.
 * Linux only: elsewhere every case is skipped.
 *
 * The files: flood_loop.c, the loop that a flood comes to, and the
 * flooding children; flood.c, a datagram flood; icmp_flood.c, a flood of
 * ICMP error reports; truncated.c, datagrams larger than the buffer or
 * empty; callbacks.c, a close, stop or restart at every point of a
 * backlog; main.c, the table of cases.
 */

#ifndef UDP_HOSTILE_H_
#define UDP_HOSTILE_H_

#if defined(__linux__) && !defined(_GNU_SOURCE)
# define _GNU_SOURCE  /* unshare(), CLONE_NEWNET */
#endif

#include "uv.h"

#define HARNESS_SHARED
#include "harness.h"

#define LINUX_ONLY                                                            \
  "Linux only: fork(), network namespaces, the Unix receive budget"

#ifdef __linux__

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "dgram.h"
#include "handles.h"
#include "loopback.h"
#include "netns.h"

/* The receive budget: datagrams (or reports) handed over per event. */
#define BUDGET 32
#define DGRAM_MAX (64 * 1024)
#define TICK_MS 20
#define FLOOD_MS 5000
/* Bound on what one flood sends: 2^24 sequence numbers, a 2 MiB bitmap. */
#define FLOOD_MAX_SEQ (1UL << 24)
#define FLOOD_PAYLOAD 32
#define FLOOD_CHUNKS 20
/* RSS may grow by less than this between 1 s and the end of a flood. */
#define RSS_SLACK (2L * 1024 * 1024)
#define REPORT_MS 3000
#define WINDOW_MS 250
#define MAX_WINDOWS 64
/* recvmmsg chunks of the flood cases, and of the backlog cases. */
#define FLOOD_CHUNKS 20
#define CB_CHUNKS 7

typedef struct {
  uv_loop_t loop;
  uv_udp_t udp;
  uv_timer_t tick;
  uv_timer_t end;
  uv_check_t check;
  int chunks;
  int closed;
  uint64_t start;
  uint64_t run_ms;
  /* Datagrams. */
  unsigned char* seen;
  unsigned long max_seq;
  unsigned long datagrams;
  unsigned long dups;
  unsigned long bad;
  long this_iter;
  long max_iter;
  long iterations;
  long ticks;
  /* Error reports (UV_UDP_LINUX_RECVERR). */
  long reports;
  long bad_reports;
  long first_bad_report;
  long reports_this_iter;
  long max_reports_iter;
  long plain_errors;
  long first_plain_error;
  long cbs_after_close;
  /* Datagrams per WINDOW_MS window of the run, and, per window, the ticks
   * and the lowest and highest count of datagrams sent that they saw.
   */
  long windows[MAX_WINDOWS];
  long window_ticks[MAX_WINDOWS];
  unsigned long window_sent_lo[MAX_WINDOWS];
  unsigned long window_sent_hi[MAX_WINDOWS];
  const volatile unsigned long* peer_sent;
  /* Memory. */
  long rss_1s;
  long rss_end;
  long allocs;
  long frees;
  long lent;
  long max_lent;
  /* The last buffer given back, lent again next: a pool of one, as an
   * application keeps. Under ASan every malloc() of a recvmmsg buffer maps
   * fresh memory, so that without it a report flood, which costs a buffer
   * per report, would measure the allocator rather than libuv.
   */
  char* spare;
  char err[256];
} hctx;

/* Memory shared with the children: what they did. */
typedef struct {
  struct sockaddr_in to;
  int fd;                     /* A socket to send from, or -1. */
  unsigned long max;          /* Count bound. */
  unsigned ms;                /* Time bound. */
  unsigned burst;             /* Datagrams between pauses, or 0. */
  unsigned pause_us;
  volatile unsigned long sent;
  volatile unsigned long refused;
  volatile int failed;
} flood_arg;

/* flood_loop.c: the loop a flood comes to, and the flooding children. */
extern hctx hc;

flood_arg* shared_arg(void);
void flood_child(void* arg);
int hc_setup(int chunks, unsigned bind_flags, unsigned long max_seq);
int hc_addr(struct sockaddr_in* out);
int hc_run(uint64_t run_ms);
int ticks_ok(void);

#endif  /* __linux__ */

/* The cases, in the files of their behaviour (above). */
int case_flood_recvmsg(void);
int case_flood_recvmmsg(void);
int case_icmp_flood(void);
int case_icmp_flood_mmsg(void);
int case_truncated_recvmsg(void);
int case_truncated_recvmmsg(void);
int case_cb_close(void);
int case_cb_stop(void);
int case_cb_stop_start(void);
int case_cb_free_early(void);

#endif  /* UDP_HOSTILE_H_ */
