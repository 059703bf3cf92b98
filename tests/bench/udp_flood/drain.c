/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The drain: a backlog queued before the loop runs, handed over with no
 * sender competing for the CPU.
 */

#include "udp_flood.h"

#include "handles.h"

#ifndef _WIN32

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
int run_drain(bench* b) {
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

  close_handles(&b->loop);
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

#endif  /* !_WIN32 */
