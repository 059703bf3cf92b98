/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * UDP flood benchmark for "unix,udp: exact receive budget of 32 per event".
 *
 * A second process (a thread on Windows) floods a libuv UDP socket on
 * loopback from its own socket (plain blocking sendmmsg() on Linux,
 * sendto() elsewhere) while
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
 *                  [--size BYTES] [--label TEXT] [--drain N [--reps N]]
 */

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


/* rx_recv's hook: only the drain scenario has a reason to stop early. */
static void after_recv(rx_counts* rx,
                       int kind,
                       const uv_buf_t* buf,
                       ssize_t n) {
  bench* b;

  (void) buf;
  (void) n;
  b = (bench*) rx;
  if (b->drain == 0)
    return;
  if (kind == RX_DRAINED)
    uv_stop(&b->loop);  /* EAGAIN: the backlog is drained. */
  else if (kind == RX_DATAGRAM && rx->received == (unsigned long) b->drain)
    uv_stop(&b->loop);  /* All there (the budget may end on the last). */
}


static void on_check(uv_check_t* handle) {
  bench* b;
  int n;

  b = handle->data;
  n = rx_iteration(&b->rx);
  if (b->log_seq && n > 0 && b->nseq < MAX_SEQ)
    b->seq[b->nseq++] = n;
}


static void on_tick(uv_timer_t* handle) {
  uint64_t now;
  uint64_t period;
  bench* b;

  b = handle->data;
  now = uv_hrtime();
  period = (uint64_t) TICK_MS * 1000000;
  if (b->last_tick_ns != 0 && b->nlags < MAX_TICKS) {
    if (now - b->last_tick_ns > period)
      b->lags[b->nlags++] = now - b->last_tick_ns - period;
    else
      b->lags[b->nlags++] = 0;
  }
  b->last_tick_ns = now;
  b->ticks++;
}


static void on_stop(uv_timer_t* handle) {
  bench* b;

  b = handle->data;
  b->end_ns = uv_hrtime();
  uv_close((uv_handle_t*) &b->udp, NULL);
  uv_close((uv_handle_t*) &b->tick, NULL);
  uv_close((uv_handle_t*) &b->stop, NULL);
  uv_close((uv_handle_t*) &b->check, NULL);
}


static void sender(void* arg) {
  char payload[1500];
  socklen_t len;
  bench* b;
  int fd;
#ifdef __linux__
  struct mmsghdr msgs[SEND_BATCH];
  struct iovec iov;
  int n;
  int i;
#endif

  b = arg;
  memset(payload, 'x', sizeof(payload));
  len = b->to.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                    : sizeof(struct sockaddr_in);
  fd = socket(b->to.ss_family, SOCK_DGRAM, 0);
  if (fd == -1 || connect(fd, (struct sockaddr*) &b->to, len) == -1) {
    b->send_err = 1;
    if (fd != -1)
      close(fd);
    return;
  }

#ifdef __linux__
  iov.iov_base = payload;
  iov.iov_len = b->size;
  memset(msgs, 0, sizeof(msgs));
  for (i = 0; i < SEND_BATCH; i++) {
    msgs[i].msg_hdr.msg_iov = &iov;
    msgs[i].msg_hdr.msg_iovlen = 1;
  }
  while (uv_hrtime() < b->send_until_ns) {
    n = sendmmsg(fd, msgs, SEND_BATCH, 0);
    if (n > 0)
      b->sent += n;
  }
#else
  while (uv_hrtime() < b->send_until_ns)
    if (send(fd, payload, b->size, 0) == b->size)
      b->sent++;
#endif
  close(fd);
}



#ifndef _WIN32
/* The flood comes from another process, as a remote peer would send it:
 * it competes with the loop for the CPU like one, not as a thread of the
 * loop's own process. It reports its count through a pipe.
 */
typedef struct {
  pid_t pid;
  int fd;
} sender_proc;
#endif


static int start_sender(bench* b, void* handle) {
#ifdef _WIN32
  return uv_thread_create((uv_thread_t*) handle, sender, b);
#else
  sender_proc* p;
  int fds[2];
  unsigned long counts[2];
  ssize_t n;

  p = handle;
  if (pipe(fds) != 0)
    return UV_EMFILE;
  p->pid = fork();
  if (p->pid == -1) {
    close(fds[0]);
    close(fds[1]);
    return UV_EAGAIN;
  }
  if (p->pid == 0) {
    close(fds[0]);
    sender(b);
    counts[0] = b->sent;
    counts[1] = (unsigned long) b->send_err;
    n = write(fds[1], counts, sizeof(counts));
    _exit(n == (ssize_t) sizeof(counts) ? 0 : 1);
  }
  close(fds[1]);
  p->fd = fds[0];
  return 0;
#endif
}


static int join_sender(bench* b, void* handle) {
#ifdef _WIN32
  return uv_thread_join((uv_thread_t*) handle);
#else
  sender_proc* p;
  unsigned long counts[2];
  ssize_t n;
  int status;

  p = handle;
  do
    n = read(p->fd, counts, sizeof(counts));
  while (n == -1 && errno == EINTR);
  close(p->fd);
  while (waitpid(p->pid, &status, 0) == -1 && errno == EINTR)
    ;
  if (n != (ssize_t) sizeof(counts))
    return UV_EIO;
  b->sent = counts[0];
  b->send_err = (int) counts[1];
  return 0;
#endif
}

/* CPU time of the calling thread in ns, or 0 if unknown. */
static uint64_t thread_cpu_ns(void) {
#if defined(__linux__) && defined(CLOCK_THREAD_CPUTIME_ID)
  struct timespec ts;

  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
    return (uint64_t) ts.tv_sec * 1000000000 + (uint64_t) ts.tv_nsec;
#endif
  return 0;
}


/* A loop and a UDP handle bound to 127.0.0.1 in b's mode; b->to is its
 * address. Returns 0, a UV_E* code, or 1 when recvmmsg mode is wanted but
 * missing: that is reported as a skip line of `name` and nothing is left
 * open.
 */
static int open_receiver(bench* b, const char* name) {
  struct sockaddr_in addr;
  int namelen;
  int err;

  err = uv_loop_init(&b->loop);
  if (err)
    return err;
  err = uv_udp_init_ex(&b->loop,
                       &b->udp,
                       AF_INET | (b->mmsg ? UV_UDP_RECVMMSG : 0));
  if (err)
    return err;
  b->udp.data = b;
  if (b->mmsg && !uv_udp_using_recvmmsg(&b->udp)) {
    printf("{\"bench\":\"%s\",\"label\":\"%s\",\"mode\":\"recvmmsg\","
           "\"skip\":\"recvmmsg is not supported here\"}\n", name, b->label);
    uv_close((uv_handle_t*) &b->udp, NULL);
    uv_run(&b->loop, UV_RUN_DEFAULT);
    uv_loop_close(&b->loop);
    return 1;
  }
  uv_ip4_addr("127.0.0.1", 0, &addr);
  err = uv_udp_bind(&b->udp, (const struct sockaddr*) &addr, 0);
  if (err)
    return err;
  namelen = sizeof(b->to);
  return uv_udp_getsockname(&b->udp, (struct sockaddr*) &b->to, &namelen);
}


static int run_one(bench* b) {
  uint64_t cpu0;
  uint64_t cpu1;
  double cpu_secs;
#ifdef _WIN32
  uv_thread_t tid;
#else
  sender_proc tid;
#endif
  double secs;
  int value;
  int err;

  b->rx.slab.len = b->mmsg ? (size_t) b->chunks * DGRAM_MAX : DGRAM_MAX;
  b->rx.slab.base = malloc(b->rx.slab.len);
  b->lags = malloc(sizeof(*b->lags) * MAX_TICKS);
  if (b->rx.slab.base == NULL || b->lags == NULL)
    return UV_ENOMEM;

  err = open_receiver(b, "udp_flood");
  if (err)
    return err == 1 ? 0 : err;
  value = 1 << 20;
  uv_recv_buffer_size((uv_handle_t*) &b->udp, &value);

  uv_timer_init(&b->loop, &b->tick);
  uv_timer_init(&b->loop, &b->stop);
  uv_check_init(&b->loop, &b->check);
  b->tick.data = b;
  b->stop.data = b;
  b->check.data = b;
  uv_check_start(&b->check, on_check);
  uv_timer_start(&b->tick, on_tick, TICK_MS, TICK_MS);
  uv_timer_start(&b->stop, on_stop, b->ms, 0);
  err = uv_udp_recv_start(&b->udp, rx_alloc, rx_recv);
  if (err)
    return err;

  b->start_ns = uv_hrtime();
  b->send_until_ns = b->start_ns + (uint64_t) b->ms * 1000000;
  err = start_sender(b, &tid);
  if (err)
    return err;
  cpu0 = thread_cpu_ns();
  uv_run(&b->loop, UV_RUN_DEFAULT);
  cpu1 = thread_cpu_ns();
  err = join_sender(b, &tid);
  uv_loop_close(&b->loop);
  if (err)
    return err;
  if (b->send_err)
    return UV_EIO;

  sort_u64(b->lags, (size_t) b->nlags);
  secs = (b->end_ns - b->start_ns) / 1e9;
  cpu_secs = cpu0 != 0 && cpu1 > cpu0 ? (cpu1 - cpu0) / 1e9 : -1;
  printf("{\"bench\":\"udp_flood\",\"label\":\"%s\",\"mode\":\"%s\","
         "\"chunks\":%d,\"size\":%d,\"ms\":%d,\"sent\":%lu,"
         "\"received\":%lu,\"dgrams_per_sec\":%.0f,\"ticks\":%d,"
         "\"lag_p50_us\":%.1f,\"lag_p99_us\":%.1f,\"lag_max_us\":%.1f,"
         "\"max_per_iteration\":%d,\"loop_cpu_ms\":%.0f,"
         "\"dgrams_per_cpu_sec\":%.0f}\n",
         b->label,
         b->mmsg ? "recvmmsg" : "recvmsg",
         b->mmsg ? b->chunks : 1,
         b->size,
         b->ms,
         b->sent,
         b->rx.received,
         b->rx.received / secs,
         b->ticks,
         1e-3 * quantile_u64(b->lags, (size_t) b->nlags, 0.50),
         1e-3 * quantile_u64(b->lags, (size_t) b->nlags, 0.99),
         1e-3 * quantile_u64(b->lags, (size_t) b->nlags, 1.0),
         b->rx.max_iter,
         cpu_secs < 0 ? -1 : cpu_secs * 1000,
         cpu_secs < 0 ? -1 : b->rx.received / cpu_secs);
  fflush(stdout);
  free(b->rx.slab.base);
  free(b->lags);
  return 0;
}


static void on_drain_timeout(uv_timer_t* handle) {
  bench* b;

  b = handle->data;
  uv_stop(&b->loop);
}


/* Queues b->drain datagrams from a plain socket, then times the loop that
 * hands them over (no sender running at the same time, so this depends
 * less on the machine's other load than the flood). Repeated b->reps
 * times; prints the medians.
 */
static int run_drain(bench* b) {
  char payload[1500];
  double* rates;
  double* cpu_rates;
  double* per_event;
  unsigned long dropped;
  uint64_t t0;
  uint64_t t1;
  uint64_t cpu0;
  uint64_t cpu1;
#if defined(__linux__) && defined(SO_RCVBUFFORCE)
  uv_os_fd_t fd;
#endif
  socklen_t len;
  int value;
  int sock;
  int err;
  int rep;
  int i;

  b->rx.slab.len = b->mmsg ? (size_t) b->chunks * DGRAM_MAX : DGRAM_MAX;
  b->rx.slab.base = malloc(b->rx.slab.len);
  rates = malloc(sizeof(*rates) * b->reps);
  cpu_rates = malloc(sizeof(*cpu_rates) * b->reps);
  per_event = malloc(sizeof(*per_event) * b->reps);
  if (b->rx.slab.base == NULL || rates == NULL || cpu_rates == NULL ||
      per_event == NULL)
    return UV_ENOMEM;

  err = open_receiver(b, "udp_drain");
  if (err)
    return err == 1 ? 0 : err;

  /* Room for the whole backlog: past rmem_max where allowed (root). */
  value = 64 << 20;
#if defined(__linux__) && defined(SO_RCVBUFFORCE)
  err = uv_fileno((uv_handle_t*) &b->udp, &fd);
  if (err)
    return err;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &value, sizeof(value)))
#endif
  {
    value = 64 << 20;
    uv_recv_buffer_size((uv_handle_t*) &b->udp, &value);
  }

  uv_check_init(&b->loop, &b->check);
  uv_timer_init(&b->loop, &b->stop);
  b->check.data = b;
  b->stop.data = b;
  uv_check_start(&b->check, on_check);

  len = sizeof(struct sockaddr_in);
  sock = socket(AF_INET, SOCK_DGRAM, 0);
  if (sock == -1 || connect(sock, (struct sockaddr*) &b->to, len) == -1)
    return UV_EIO;
  memset(payload, 'x', sizeof(payload));

  dropped = 0;
  for (rep = 0; rep < b->reps; rep++) {
    for (i = 0; i < b->drain; i++)
      if (send(sock, payload, b->size, 0) != b->size)
        return UV_EIO;

    b->rx.received = 0;
    b->rx.iterations = 0;
    b->log_seq = rep == 0;
    err = uv_udp_recv_start(&b->udp, rx_alloc, rx_recv);
    if (err)
      return err;
    /* In case some were dropped after all. */
    uv_timer_start(&b->stop, on_drain_timeout, 5000, 0);
    t0 = uv_hrtime();
    cpu0 = thread_cpu_ns();
    uv_run(&b->loop, UV_RUN_DEFAULT);
    cpu1 = thread_cpu_ns();
    t1 = uv_hrtime();
    uv_timer_stop(&b->stop);
    uv_udp_recv_stop(&b->udp);

    dropped += b->drain - b->rx.received;
    rates[rep] = b->rx.received / ((t1 - t0) / 1e9);
    cpu_rates[rep] = cpu1 > cpu0 ? b->rx.received / ((cpu1 - cpu0) / 1e9)
                                 : -1;
    per_event[rep] = b->rx.iterations > 0
                         ? (double) b->rx.received / b->rx.iterations
                         : 0;
  }
  close(sock);

  uv_close((uv_handle_t*) &b->udp, NULL);
  uv_close((uv_handle_t*) &b->check, NULL);
  uv_close((uv_handle_t*) &b->stop, NULL);
  uv_run(&b->loop, UV_RUN_DEFAULT);
  uv_loop_close(&b->loop);

  sort_double(rates, (size_t) b->reps);
  sort_double(cpu_rates, (size_t) b->reps);
  sort_double(per_event, (size_t) b->reps);
  printf("{\"bench\":\"udp_drain\",\"label\":\"%s\",\"mode\":\"%s\","
         "\"chunks\":%d,\"size\":%d,\"backlog\":%d,\"reps\":%d,"
         "\"dropped\":%lu,\"dgrams_per_sec\":%.0f,"
         "\"dgrams_per_cpu_sec\":%.0f,\"best_dgrams_per_sec\":%.0f,"
         "\"best_dgrams_per_cpu_sec\":%.0f,\"dgrams_per_iteration\":%.2f,"
         "\"max_per_iteration\":%d,\"sequence\":[",
         b->label,
         b->mmsg ? "recvmmsg" : "recvmsg",
         b->mmsg ? b->chunks : 1,
         b->size,
         b->drain,
         b->reps,
         dropped,
         rates[b->reps / 2],
         cpu_rates[b->reps / 2],
         rates[b->reps - 1],
         cpu_rates[b->reps - 1],
         per_event[b->reps / 2],
         b->rx.max_iter);
  for (i = 0; i < b->nseq; i++)
    printf(i == 0 ? "%d" : ",%d", b->seq[i]);
  printf("]}\n");
  fflush(stdout);
  free(b->rx.slab.base);
  free(rates);
  free(cpu_rates);
  free(per_event);
  return 0;
}


int main(int argc, char** argv) {
  const char* mode;
  const char* label;
  bench b;
  int chunks;
  int drain;
  int reps;
  int size;
  int ms;
  int err;
  int i;
  int m;

  drain = 0;
  reps = 9;
  mode = "both";
  label = "";
  chunks = MAX_CHUNKS;
  size = 32;
  ms = 2000;
  for (i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--mode") == 0)
      mode = argv[i + 1];
    else if (strcmp(argv[i], "--ms") == 0)
      ms = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--chunks") == 0)
      chunks = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--size") == 0)
      size = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--label") == 0)
      label = argv[i + 1];
    else if (strcmp(argv[i], "--drain") == 0)
      drain = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--reps") == 0)
      reps = atoi(argv[i + 1]);
    else
      break;
  }
  if (i < argc || ms <= 0 || chunks < 1 || chunks > MAX_CHUNKS ||
      drain < 0 || reps < 1 ||
      size < 1 || size > 1500 || strchr(label, '"') != NULL ||
      strchr(label, '\\') != NULL) {
    fprintf(stderr,
            "usage: %s [--mode recvmsg|recvmmsg|both] [--ms N] "
            "[--chunks 1-%d] [--size 1-1500] [--label TEXT] "
            "[--drain N [--reps N]]\n",
            argv[0], MAX_CHUNKS);
    return 2;
  }

  for (m = 0; m < 2; m++) {
    if (m == 0 && strcmp(mode, "recvmmsg") == 0)
      continue;
    if (m == 1 && strcmp(mode, "recvmsg") == 0)
      continue;
    memset(&b, 0, sizeof(b));
    b.mmsg = m;
    b.chunks = chunks;
    b.ms = ms;
    b.size = size;
    b.label = label;
    b.drain = drain;
    b.reps = reps;
    b.rx.after = after_recv;
    err = drain != 0 ? run_drain(&b) : run_one(&b);
    if (err) {
      fprintf(stderr, "udp_flood: %s\n", uv_strerror(err));
      return 1;
    }
  }
  return 0;
}

#else  /* _WIN32 */

int main(void) {
  printf("{\"bench\":\"udp_flood\",\"skip\":\"the budget patch is "
         "Unix-only\"}\n");
  return 0;
}

#endif  /* _WIN32 */
