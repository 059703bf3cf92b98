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
 *   - each report reaches recv_cb once, at most 32 per readable event,
 *     after the datagrams (at most 32 per event, on their own budget), and
 *     one pending report does not make the loop spin (v1.50.0, which never
 *     reads the queue, spins). As on upstream, an ICMP error may also come
 *     once as a plain ECONNREFUSED read error: never more plain errors
 *     than ICMP errors;
 *   - a read error that an ICMP error set does not hide the datagrams
 *     queued behind it: they come in the same loop iteration (read_on.c,
 *     icmp_codes.c); an error that every read returns still ends the
 *     event at its second read (repeated_error.c);
 *   - a handle that is not receiving (send only, or stopped) calls no
 *     callback and its sends complete (upstream calls a NULL alloc_cb);
 *     its reports stay queued on the socket;
 *   - a handle without UV_UDP_LINUX_RECVERR never reads the error queue.
 *
 * Every case bounds its loop with a one second uv timer, so a spinning
 * (unpatched) loop also ends and reports what it did; while the socket
 * still holds what the case queued and libuv goes on reading, the end
 * waits for it (settle.h), so a loaded machine does not change the
 * counts. Each case runs in a private network namespace when it can
 * (root, or unprivileged user namespaces), so that other traffic does
 * not eat into the ICMP rate limit. Only loopback addresses
 * (127.0.0.0/8 and ::1) are sent to. Linux only: elsewhere every case
 * is skipped.
 *
 * The files: loop.c, the loop every case runs and what it counts;
 * report.c, one report; burst.c, several; send_only.c, a handle that
 * does not receive; without_flag.c, one without UV_UDP_LINUX_RECVERR;
 * data.c, reports and datagrams together; read_on.c, datagrams behind
 * an ICMP error; icmp_codes.c, behind the rarer ICMP errors (EACCES,
 * ENOTSUP); repeated_error.c, an error that every read returns;
 * timestamps.c, TX timestamps beside datagrams; main.c, the table of
 * cases.
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
#include "settle.h"

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
  /* The first plain (flagless) error; those not plain_code (an ICMP
   * error's UV_E* code, ECONNREFUSED when 0).
   */
  long plain_err;
  long plain_other;
  long plain_code;
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
  /* recv_start() ran; the end's waits for what is still queued. */
  int receiving;
  long waits;
  settle_state settle;
  /* Positive nread of another size than the cases' datagrams. */
  long unflagged;
  long unflagged_nread;
} ctx_t;

/* loop.c: the case's state, its callbacks, and the run. */
extern ctx_t ctx;

int recv_start(void);
int is_refused(ssize_t nread);
void format_list(char* out, size_t size, const long* v, int n);
void note(const char* name);
int setup_timers(void);
int setup_ex(int family, unsigned bind_flags, unsigned init_flags);
int setup(int family, unsigned bind_flags);
int run_and_close(void);
int start_paced_sends(int connected);
int run_one_report(int family, const char* name);
/* loop.c: the plain reads of fail_fd, which fail with fail_errno while it
 * is not 0.
 */
extern int fail_fd;
extern int fail_errno;
extern long plain_reads;
/* read_on.c: a peer's socket, its datagrams, and waiting for the kernel. */
int bound_socket(int family, struct sockaddr_storage* ss);
int send_numbered(int fd, unsigned first, int n);
int wait_for(int fd, short events);

#endif  /* __linux__ */

/* The cases of read_on.c: name, body, family, recvmmsg. */
#define READ_ON_CASES(X)                                                      \
  X(icmp_each_iteration_v4_msg, icmp_each_iteration, AF_INET, 0)             \
  X(icmp_each_iteration_v4_mmsg, icmp_each_iteration, AF_INET, 1)            \
  X(icmp_each_iteration_v6_msg, icmp_each_iteration, AF_INET6, 0)            \
  X(icmp_each_iteration_v6_mmsg, icmp_each_iteration, AF_INET6, 1)           \
  X(refused_before_data_v4_msg, refused_before_data, AF_INET, 0)             \
  X(refused_before_data_v4_mmsg, refused_before_data, AF_INET, 1)            \
  X(refused_before_data_v6_msg, refused_before_data, AF_INET6, 0)            \
  X(refused_before_data_v6_mmsg, refused_before_data, AF_INET6, 1)

/* The cases of timestamps.c: name, body, family or datagrams, recvmmsg. */
#define TIMESTAMP_CASES(X)                                                    \
  X(timestamps_17_msg, echo_with_timestamps, 17, 0)                           \
  X(timestamps_17_mmsg, echo_with_timestamps, 17, 1)                          \
  X(timestamps_20_msg, echo_with_timestamps, 20, 0)                           \
  X(timestamps_20_mmsg, echo_with_timestamps, 20, 1)                          \
  X(timestamps_24_msg, echo_with_timestamps, 24, 0)                           \
  X(timestamps_24_mmsg, echo_with_timestamps, 24, 1)                          \
  X(refused_behind_timestamps_v4_msg, refused_behind_timestamps, AF_INET, 0) \
  X(refused_behind_timestamps_v4_mmsg, refused_behind_timestamps, AF_INET,   \
    1)                                                                        \
  X(refused_behind_timestamps_v6_msg, refused_behind_timestamps, AF_INET6,   \
    0)                                                                        \
  X(refused_behind_timestamps_v6_mmsg, refused_behind_timestamps, AF_INET6,  \
    1)

/* The cases of icmp_codes.c: name, family, ICMP code, the error it sets,
 * recvmmsg, connected without UV_UDP_LINUX_RECVERR.
 */
#define ICMP_CODE_CASES(X)                                                    \
  X(icmp_eacces_v6_msg, AF_INET6, 1, UV_EACCES, 0, 0)                         \
  X(icmp_eacces_v6_mmsg, AF_INET6, 1, UV_EACCES, 1, 0)                        \
  X(icmp_eacces_v6_conn_msg, AF_INET6, 1, UV_EACCES, 0, 1)                    \
  X(icmp_eacces_v6_conn_mmsg, AF_INET6, 1, UV_EACCES, 1, 1)                   \
  X(icmp_enotsup_v4_msg, AF_INET, 5, UV_ENOTSUP, 0, 0)                        \
  X(icmp_enotsup_v4_mmsg, AF_INET, 5, UV_ENOTSUP, 1, 0)

/* The cases of repeated_error.c: name, the errno of every read, recvmmsg. */
#define REPEATED_ERROR_CASES(X)                                               \
  X(repeated_eacces_msg, EACCES, 0)                                           \
  X(repeated_eacces_mmsg, EACCES, 1)                                          \
  X(repeated_refused_msg, ECONNREFUSED, 0)                                    \
  X(repeated_refused_mmsg, ECONNREFUSED, 1)

#define DECLARE_CASE(name, fn, arg, mmsg) int case_##name(void);
#define DECLARE_CASE6(name, a, b, c, d, e) int case_##name(void);
#define DECLARE_CASE3(name, a, b) int case_##name(void);
READ_ON_CASES(DECLARE_CASE)
TIMESTAMP_CASES(DECLARE_CASE)
ICMP_CODE_CASES(DECLARE_CASE6)
REPEATED_ERROR_CASES(DECLARE_CASE3)

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
int case_close_on_first_error(void);

#endif  /* UDP_ERRQUEUE_H_ */
