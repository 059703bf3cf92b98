/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The flood: a second process sends as fast as it can while a 1 ms
 * repeating timer measures how late the loop runs it.
 */

#include "udp_flood.h"

#include "handles.h"

#ifndef _WIN32

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
  close_handles(&b->loop);
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


/* The flood comes from another process, as a remote peer would send it:
 * it competes with the loop for the CPU like one, not as a thread of the
 * loop's own process. It reports its count through a pipe.
 */
typedef struct {
  pid_t pid;
  int fd;
} sender_proc;


static int start_sender(bench* b, sender_proc* p) {
  int fds[2];
  unsigned long counts[2];
  ssize_t n;

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
}


static int join_sender(bench* b, sender_proc* p) {
  unsigned long counts[2];
  ssize_t n;
  int status;

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
}


int run_one(bench* b) {
  uint64_t cpu0;
  uint64_t cpu1;
  double cpu_secs;
  sender_proc tid;
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

#endif  /* !_WIN32 */
