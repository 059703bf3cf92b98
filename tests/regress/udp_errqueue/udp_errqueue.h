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
 *
 * The files: loop.c, the loop every case runs and what it counts;
 * report.c, one report; burst.c, several; send_only.c, a handle that
 * does not receive; without_flag.c, one without UV_UDP_LINUX_RECVERR;
 * data.c, reports and datagrams together; main.c, the table of cases.
 */

#ifndef UDP_ERRQUEUE_H_
#define UDP_ERRQUEUE_H_

#if defined(__linux__) && !defined(_GNU_SOURCE)
# define _GNU_SOURCE  /* unshare(), CLONE_NEWNET, RTLD_NEXT */
#endif

#include <uv.h>

#define HARNESS_SHARED
#include "harness.h"

#define LINUX_ONLY "Linux only: IP_RECVERR and the socket error queue"

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
#include "netns.h"
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

/* loop.c: the case's state, its callbacks, and the run. */
extern ctx_t ctx;

int recv_start(void);
void format_list(char* out, size_t size, const long* v, int n);
void note(const char* name);
int setup_timers(void);
int setup_ex(int family, unsigned bind_flags, unsigned init_flags);
int setup(int family, unsigned bind_flags);
int run_and_close(void);
int start_paced_sends(int connected);
int run_one_report(int family, const char* name);

#endif  /* __linux__ */

/* The cases, in the files of their behaviour (above). */
int case_one_report_ipv4(void);
int case_one_report_ipv6(void);
int case_negative_nread(void);
int case_alloc_cb_buffer(void);
int case_one_report_no_spin(void);
int case_three_reports_once(void);
int case_report_burst(void);
int case_send_only_unconnected(void);
int case_send_only_connected(void);
int case_stopped_handle_sends(void);
int case_errqueue_reads_without_flag(void);
int case_errqueue_reads_without_flag_mmsg(void);
int case_data_and_reports(void);
int case_data_and_reports_mmsg(void);
int case_close_on_first_report(void);

#endif  /* UDP_ERRQUEUE_H_ */
