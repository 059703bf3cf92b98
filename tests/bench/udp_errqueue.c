/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * Benchmark for "linux,udp: drain the error queue on EPOLLERR" (Linux only).
 * Prints one JSON object per line on stdout.
 *
 *   idle:  one ICMP error report queued on a UV_UDP_LINUX_RECVERR socket
 *          that receives; loop iterations and CPU seconds in 5 s.
 *   flood: a second process (forked, sharing the receiving socket) sends
 *          datagrams from that socket to a closed loopback port as fast as
 *          it can, so that port-unreachable reports pour into the socket's
 *          error queue, and sends numbered datagrams to the socket from a
 *          socket of its own. The receiving loop runs a 1 ms repeating
 *          timer. Reported: timer lateness (p50/p99/max), datagrams sent,
 *          delivered and lost, reports delivered, the kernel's UDP
 *          RcvbufErrors, and the receiver's CPU time.
 *
 * Build by hand against a static libuv, e.g.:
 *   gcc -O2 -Wall -I TREE/include -I ../common udp_errqueue.c BUILD/libuv.a \
 *       -lpthread -ldl -lrt -lm -o udp_errqueue
 *   ./udp_errqueue LABEL [idle|flood|all] [TRIGGERS_PER_MS] [WORK_US]
 *                  [IDLE_MS]
 *
 * TRIGGERS_PER_MS paces the flood: that many sends to the closed port every
 * millisecond (0, the default, sends as fast as one core allows). WORK_US
 * makes every 1 ms timer tick busy-wait that long, standing in for an
 * application that has work to do: loop iterations get longer, so more
 * reports arrive per iteration than the drain budget takes (0 by default).
 * IDLE_MS is how long the idle scenario runs (default 5000, at most 60000).
 *
 * When it can (root, or unprivileged user namespaces), it first moves into
 * a private network namespace with loopback up and the ICMP rate limits
 * raised, so that neither the global ICMP limit nor other traffic shapes
 * the flood. Only loopback addresses are sent to, and every loop is bounded
 * in time and count.
 */

#define _GNU_SOURCE

#include <uv.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __linux__

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "handles.h"
#include "loopback.h"
#include "netns.h"
#include "rx.h"
#include "stats.h"

#define IDLE_MS 5000
#define FLOOD_MS 2000
#define TAIL_MS 500
#define FLOOD_MAX_SENDS 5000000L
#define DATA_EVERY 16          /* One data datagram per this many triggers. */
#define MAX_DATA 400000
#define MAX_TICKS 8192

static const char* label;
static int netns;
static long rate;  /* Flood sends per millisecond; 0: unpaced. */
static long work_us;  /* Busy time per timer tick. */
static long idle_ms = IDLE_MS;

static uv_loop_t* loop;
static uv_udp_t udp;
static uv_timer_t stop_timer;
static uv_timer_t tick_timer;
static uv_check_t check;

static rx_counts rx;
static long duplicates;
static unsigned char* seen;

static uint64_t last_tick;
static long nticks;
static double lateness_us[MAX_TICKS];


static double cpu_seconds(void) {
  struct rusage ru;

  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
         ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}


/* rx_recv's hook: a datagram's first bytes are its sequence number. */
static void after_recv(rx_counts* counts,
                       int kind,
                       const uv_buf_t* buf,
                       ssize_t n) {
  unsigned seq;

  (void) counts;
  if (kind != RX_DATAGRAM || n < (ssize_t) sizeof(seq) || seen == NULL)
    return;
  memcpy(&seq, buf->base, sizeof(seq));
  if (seq < MAX_DATA) {
    if (seen[seq])
      duplicates++;
    seen[seq] = 1;
  }
}


static void on_check(uv_check_t* c) {
  (void) c;
  rx_iteration(&rx);
}


static void on_tick(uv_timer_t* t) {
  uint64_t now;
  double late;
  (void) t;

  now = uv_hrtime();
  if (last_tick != 0 && nticks < MAX_TICKS) {
    late = (double) (now - last_tick) / 1e3 - 1000.0;
    late -= work_us;  /* The previous tick's own work is not lateness. */
    lateness_us[nticks++] = late < 0 ? 0 : late;
  }
  last_tick = now;
  while (work_us > 0 && uv_hrtime() - now < (uint64_t) work_us * 1000)
    continue;
}


static void on_stop(uv_timer_t* t) {
  (void) t;
  uv_stop(loop);
}


static void finish_loop(void) {
  close_handles(loop);
  uv_run(loop, UV_RUN_DEFAULT);
  uv_loop_close(loop);
}


static void reset(void) {
  rx_reset(&rx);
  duplicates = 0;
  nticks = 0;
  last_tick = 0;
}


static int setup_receiver(void) {
  static char slab[65536];
  struct sockaddr_in addr;

  loop = malloc(sizeof(*loop));
  if (loop == NULL || uv_loop_init(loop) != 0)
    return -1;
  uv_ip4_addr("127.0.0.1", 0, &addr);
  rx.slab = uv_buf_init(slab, sizeof(slab));
  rx.after = after_recv;
  if (uv_udp_init(loop, &udp) != 0)
    return -1;
  udp.data = &rx;
  if (uv_udp_bind(&udp, (const struct sockaddr*) &addr,
                  UV_UDP_LINUX_RECVERR) != 0 ||
      uv_udp_recv_start(&udp, rx_alloc, rx_recv) != 0)
    return -1;
  uv_check_init(loop, &check);
  uv_check_start(&check, on_check);
  uv_timer_init(loop, &stop_timer);
  return 0;
}


static int bench_idle(void) {
  struct sockaddr_in dst;
  uv_os_fd_t fd;
  double cpu0;
  double cpu1;
  uint64_t t0;
  uint64_t t1;

  reset();
  if (setup_receiver() != 0)
    return -1;
  uv_fileno((uv_handle_t*) &udp, &fd);
  closed_port(AF_INET, &dst);
  if (sendto(fd, "idle", 4, 0, (struct sockaddr*) &dst, sizeof(dst)) != 4)
    return -1;
  uv_timer_start(&stop_timer, on_stop, (uint64_t) idle_ms, 0);
  cpu0 = cpu_seconds();
  t0 = uv_hrtime();
  uv_run(loop, UV_RUN_DEFAULT);
  t1 = uv_hrtime();
  cpu1 = cpu_seconds();
  finish_loop();
  free(loop);

  printf("{\"bench\":\"idle_one_report\",\"label\":\"%s\",\"netns\":%d,"
         "\"wall_s\":%.3f,\"iterations\":%ld,\"cpu_s\":%.3f,"
         "\"reports\":%ld,\"plain_errors\":%ld}\n",
         label, netns, (t1 - t0) / 1e9, rx.iterations, cpu1 - cpu0,
         rx.reports, rx.errors);
  fflush(stdout);
  return 0;
}


/* The flooder: runs in a child process that shares the receiving socket. */
static void flooder(int shared_fd,
                    const struct sockaddr_in* target,
                    int result_fd) {
  struct sockaddr_in dst;
  struct timespec ts;
  long results[3];
  uint64_t next;
  uint64_t end;
  uint64_t now;
  unsigned seq;
  long attempts;
  long elicited;
  int data_fd;

  closed_port(AF_INET, &dst);
  data_fd = socket(AF_INET, SOCK_DGRAM, 0);
  clock_gettime(CLOCK_MONOTONIC, &ts);
  next = ts.tv_sec * 1000000000ULL + ts.tv_nsec;
  end = next + FLOOD_MS * 1000000ULL;
  attempts = 0;
  elicited = 0;
  seq = 0;
  for (;;) {
    if (sendto(shared_fd, "flood", 5, 0, (struct sockaddr*) &dst,
               sizeof(dst)) == 5)
      elicited++;
    attempts++;
    if (attempts % DATA_EVERY == 0 && seq < MAX_DATA) {
      if (sendto(data_fd, &seq, sizeof(seq), 0,
                 (const struct sockaddr*) target, sizeof(*target)) ==
          (ssize_t) sizeof(seq))
        seq++;
    }
    if (rate > 0 && attempts % rate == 0) {
      /* Paced: sleep until the next millisecond. */
      next += 1000000ULL;
      ts.tv_sec = next / 1000000000ULL;
      ts.tv_nsec = next % 1000000000ULL;
      clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    }
    if (attempts % 256 == 0 || (rate > 0 && attempts % rate == 0)) {
      clock_gettime(CLOCK_MONOTONIC, &ts);
      now = ts.tv_sec * 1000000000ULL + ts.tv_nsec;
      if (now >= end || attempts >= FLOOD_MAX_SENDS)
        break;
    }
  }
  results[0] = attempts;
  results[1] = elicited;
  results[2] = (long) seq;
  if (write(result_fd, results, sizeof(results)) < 0)
    _exit(1);
  _exit(0);
}


static int bench_flood(void) {
  struct sockaddr_in target;
  long results[3];
  long rcvbuf0;
  long rcvbuf1;
  long lost;
  int namelen;
  int pipefd[2];
  uv_os_fd_t fd;
  double cpu0;
  double cpu1;
  double p50;
  double p99;
  double max;
  pid_t pid;
  int status;

  reset();
  seen = calloc(MAX_DATA, 1);
  if (seen == NULL || setup_receiver() != 0)
    return -1;
  uv_fileno((uv_handle_t*) &udp, &fd);
  namelen = sizeof(target);
  uv_udp_getsockname(&udp, (struct sockaddr*) &target, &namelen);
  uv_timer_init(loop, &tick_timer);
  uv_timer_start(&tick_timer, on_tick, 1, 1);
  uv_timer_start(&stop_timer, on_stop, FLOOD_MS + TAIL_MS, 0);

  if (pipe(pipefd) != 0)
    return -1;
  rcvbuf0 = snmp_counter("Udp:", "RcvbufErrors");
  fflush(stdout);
  pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    close(pipefd[0]);
    flooder(fd, &target, pipefd[1]);
  }
  close(pipefd[1]);

  cpu0 = cpu_seconds();
  uv_run(loop, UV_RUN_DEFAULT);
  cpu1 = cpu_seconds();

  memset(results, 0, sizeof(results));
  if (read(pipefd[0], results, sizeof(results)) != sizeof(results))
    fprintf(stderr, "flooder gave no result\n");
  close(pipefd[0]);
  waitpid(pid, &status, 0);
  rcvbuf1 = snmp_counter("Udp:", "RcvbufErrors");
  finish_loop();
  free(loop);

  sort_double(lateness_us, (size_t) nticks);
  p50 = nticks ? lateness_us[nticks / 2] : -1;
  p99 = nticks ? lateness_us[(nticks * 99) / 100] : -1;
  max = nticks ? lateness_us[nticks - 1] : -1;
  lost = results[2] - (long) rx.received;

  printf("{\"bench\":\"flood\",\"label\":\"%s\",\"netns\":%d,"
         "\"flood_ms\":%d,\"triggers_per_ms\":%ld,\"work_us\":%ld,"
         "\"trigger_sends\":%ld,\"icmp_elicited\":%ld,"
         "\"reports_delivered\":%ld,\"plain_errors\":%ld,"
         "\"data_sent\":%ld,\"data_delivered\":%ld,\"data_lost\":%ld,"
         "\"data_dup\":%ld,\"udp_rcvbuf_errors\":%ld,"
         "\"iterations\":%ld,\"cpu_s\":%.3f,\"timer_ticks\":%ld,"
         "\"timer_late_p50_us\":%.1f,\"timer_late_p99_us\":%.1f,"
         "\"timer_late_max_us\":%.1f}\n",
         label, netns, FLOOD_MS, rate, work_us, results[0], results[1],
         rx.reports, rx.errors, results[2], (long) rx.received, lost,
         duplicates, rcvbuf0 >= 0 && rcvbuf1 >= 0 ? rcvbuf1 - rcvbuf0 : -1,
         rx.iterations, cpu1 - cpu0, nticks, p50, p99, max);
  fflush(stdout);
  free(seen);
  seen = NULL;
  return 0;
}


int main(int argc, char** argv) {
  const char* what;

  label = argc > 1 ? argv[1] : "libuv";
  what = argc > 2 ? argv[2] : "all";
  rate = argc > 3 ? atol(argv[3]) : 0;
  work_us = argc > 4 ? atol(argv[4]) : 0;
  if (argc > 5)
    idle_ms = atol(argv[5]);
  if (idle_ms < 1 || idle_ms > 60000) {
    fprintf(stderr, "IDLE_MS must be 1 to 60000\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  netns = private_netns() == 0;
  if (strcmp(what, "idle") == 0 || strcmp(what, "all") == 0)
    if (bench_idle() != 0)
      return 1;
  if (strcmp(what, "flood") == 0 || strcmp(what, "all") == 0)
    if (bench_flood() != 0)
      return 1;
  return 0;
}

#else  /* !__linux__ */

int main(void) {
  printf("{\"bench\":\"udp_errqueue\",\"skip\":\"Linux only\"}\n");
  return 0;
}

#endif  /* __linux__ */
