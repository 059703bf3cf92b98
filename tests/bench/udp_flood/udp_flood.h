/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * UDP flood benchmark for "unix,udp: exact receive budget of 32 per event".
 *
 * A second process floods a libuv UDP socket on loopback from its own
 * socket (plain blocking sendmmsg() on Linux, sendto() elsewhere) while
 * the loop receives in recvmsg or recvmmsg mode and a 1 ms repeating timer
 * measures how late the loop runs it. Prints one JSON object per line on
 * stdout, one per mode:
 *
 *   {"bench":"udp_flood","label":...,"mode":"recvmmsg","chunks":20,
 *    "ms":2000,"sent":...,"received":...,"dgrams_per_sec":...,
 *    "ticks":...,"lag_p50_us":...,"lag_p99_us":...,"lag_max_us":...,
 *    "max_per_iteration":...,"loop_cpu_ms":...,"dgrams_per_cpu_sec":...}
 *
 * Lateness of a tick is the time since the previous tick minus the 1 ms
 * period (0 if early). max_per_iteration is the most datagrams handed over
 * in one loop iteration (counted with a uv_check_t). On Linux, loop_cpu_ms
 * is the CPU time of the loop thread and dgrams_per_cpu_sec the datagrams
 * received per second of it, which depends less on what else the machine
 * runs than dgrams_per_sec (-1 where the thread's CPU time is unknown).
 * --work-us N spins N microseconds in the callback of each datagram, as an
 * application that does some work per datagram.
 *
 * With --drain N it runs a second scenario instead ("bench":"udp_drain"):
 * N datagrams are queued from a plain socket before the loop runs, then
 * the loop hands them all over; repeated --reps times (default 9), the
 * medians printed, and the best of the reps (best_*), which is the least
 * disturbed by other load. No sender competes for the CPU while the loop
 * reads, so it measures the receive path with less noise than the flood.
 * dgrams_per_iteration is the mean number handed over per loop iteration;
 * "sequence":[...] lists how many each iteration of the first rep handed
 * over (iterations that handed over none left out; at most MAX_SEQ).
 *
 * Usage: udp_flood [--mode recvmsg|recvmmsg|both] [--ms N] [--chunks N]
 *                  [--size BYTES] [--label TEXT] [--work-us N]
 *                  [--drain N [--reps N]]
 *
 * Unix only: on Windows it prints one skip line. The files: receiver.c,
 * the loop's handle and what it counts; flood.c and drain.c, the two
 * scenarios; main.c, the options.
 */

#ifndef UDP_FLOOD_H_
#define UDP_FLOOD_H_

#if defined(__linux__) && !defined(_GNU_SOURCE)
# define _GNU_SOURCE  /* sendmmsg() */
#endif

#include "uv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rx.h"
#include "stats.h"

#ifndef _WIN32
# include <sys/types.h>
# include <sys/socket.h>
# include <netinet/in.h>
# include <unistd.h>
# include <errno.h>
# include <sys/wait.h>
#endif

#define DGRAM_MAX (64 * 1024)
#define MAX_CHUNKS 20
#define MAX_TICKS 200000
#define SEND_BATCH 64
#define TICK_MS 1
#define MAX_SEQ 256

#ifndef _WIN32

typedef struct {
  /* First: the handle's data is the bench, and rx_alloc and rx_recv take
   * it for its counts.
   */
  rx_counts rx;
  /* Settings. */
  int mmsg;
  int chunks;
  int ms;
  int size;
  int work_us;
  const char* label;
  /* Loop side. */
  uv_loop_t loop;
  uv_udp_t udp;
  uv_timer_t tick;
  uv_timer_t stop;
  uv_check_t check;
  uint64_t start_ns;
  uint64_t end_ns;
  uint64_t last_tick_ns;
  uint64_t* lags;
  int nlags;
  int ticks;
  /* Sender side. */
  struct sockaddr_storage to;
  uint64_t send_until_ns;
  unsigned long sent;
  int send_err;
  /* Drain scenario. */
  int drain;
  int reps;
  int seq[MAX_SEQ];
  int nseq;
  int log_seq;
} bench;

/* receiver.c */
void after_recv(rx_counts* rx, int kind, const uv_buf_t* buf, ssize_t n);
void on_check(uv_check_t* handle);
uint64_t thread_cpu_ns(void);
int open_receiver(bench* b, const char* name);

/* The scenarios. */
int run_one(bench* b);
int run_drain(bench* b);

#endif  /* !_WIN32 */

#endif  /* UDP_FLOOD_H_ */
