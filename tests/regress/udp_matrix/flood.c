/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The flood: a second process elicits ICMP errors for a second.
 */

#include "udp_matrix.h"

#ifdef __linux__

/* The flooding child: sends to the closed port from the handle's socket
 * (shared through fork(); ICMP errors go to the socket that sent),
 * FLOOD_PER_MS each millisecond, and every FLOOD_DATA_EVERY a numbered
 * datagram to the handle from a socket of its own, until FLOOD_MS have
 * passed or max errors were elicited.
 */
static void flooder(flood_t* f) {
  struct timespec ts;
  char payload[4];
  uint64_t start;
  uint64_t next;
  long ms;
  int data_fd;
  int i;

  data_fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (data_fd < 0) {
    f->failed = errno;
    return;
  }
  start = uv_hrtime();
  for (ms = 1; ms <= FLOOD_MS && f->elicited < f->max; ms++) {
    for (i = 0; i < FLOOD_PER_MS && f->elicited < f->max; i++) {
      if (sendto(f->fd, "flood", 5, 0, (struct sockaddr*) &f->closed,
                 sizeof(f->closed)) == 5) {
        f->elicited++;
        if (f->elicited % FLOOD_DATA_EVERY != 0)
          continue;
        put_seq(payload, (unsigned long) f->data_sent);
        if (sendto(data_fd, payload, sizeof(payload), 0,
                   (struct sockaddr*) &f->target, sizeof(f->target)) ==
            (ssize_t) sizeof(payload))
          f->data_sent++;
      } else if (errno != ECONNREFUSED && errno != EINTR &&
                 errno != EAGAIN && errno != ENOBUFS) {
        f->failed = errno;
        close(data_fd);
        return;
      }
    }
    next = start + (uint64_t) ms * 1000000;
    ts.tv_sec = (time_t) (next / 1000000000);
    ts.tv_nsec = (long) (next % 1000000000);
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
  }
  close(data_fd);
}

/* The child's whole life (spawn() runs it): the flood, then the word
 * that it ended.
 */
static void flood_child(void* arg) {
  flooder(arg);
  ((flood_t*) arg)->done = 1;
}

/* The flood: FLOOD_MS of ICMP errors and datagrams from a second process,
 * then TAIL_MS for the loop to hand over what is left.
 */
int flood_case(const cell_t* c) {
  socklen_t len;
  flood_t* f;
  int child_ok;
  int rcvbuf;
  int fd;
  int r;

  fd = udp_fd(&mc.udp);
  CHECK_GE(fd, 0);
  rcvbuf = FLOOD_RCVBUF;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf,
                 sizeof(rcvbuf)) != 0)
    CHECK_UV(uv_recv_buffer_size((uv_handle_t*) &mc.udp, &rcvbuf));
  len = sizeof(rcvbuf);
  CHECK_EQ(getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, &len), 0);

  f = mmap(NULL, sizeof(*f), PROT_READ | PROT_WRITE,
           MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  CHECK(f != MAP_FAILED);
  memset(f, 0, sizeof(*f));
  mc.flood = f;
  f->fd = fd;
  /* All of it fits in the receive buffer: the kernel drops nothing. */
  f->max = FLOOD_MAX;
  if (f->max > rcvbuf / 2048)
    f->max = rcvbuf / 2048;
  memcpy(&f->closed, &mc.peer_addr, sizeof(f->closed));
  memcpy(&f->target, &mc.me, sizeof(f->target));
  CHECK_EQ(make_seen(f->max / FLOOD_DATA_EVERY + 1), 0);
  close(mc.peer);
  mc.peer = -1;
  CHECK_UV(recv_start());

  mc.icmp_before = icmp_received(mc.family);
  mc.flood_pid = spawn(flood_child, f, FLOOD_MS / 1000 + 10);
  CHECK_GE(mc.flood_pid, 0);
  r = run_for(FLOOD_MS + TAIL_MS);
  child_ok = reap(mc.flood_pid, 5000);
  mc.datagrams_sent = f->data_sent;
  if (!mc.icmp_counted)
    mc.icmp_errors = f->elicited;
  print_figures(c);

  if (!child_ok || f->failed != 0)
    fault("the flooding child did not end cleanly (errno %d)", f->failed);
  if (mc.reports + mc.left_reports > mc.icmp_errors)
    fault("%ld reports and %ld left queued for %ld ICMP errors",
          mc.reports, mc.left_reports, mc.icmp_errors);
  else if (mc.reports + mc.left_reports < mc.icmp_errors)
    fault("lost reports: %ld reported, %ld left queued, of %ld ICMP "
          "errors", mc.reports, mc.left_reports, mc.icmp_errors);
  if (mc.left_reports != 0)
    timing_fault("%ld of %ld reports not handed over %d ms after the "
                 "flood", mc.left_reports, mc.icmp_errors, TAIL_MS);
  /* As on upstream, an ICMP error may come as a plain ECONNREFUSED beside
   * its report: never more of them than ICMP errors.
   */
  if (mc.plain_refused > mc.icmp_errors)
    fault("%ld plain %s for %ld ICMP errors", mc.plain_refused,
          uv_err_name(UV_ECONNREFUSED), mc.icmp_errors);
  if (mc.plain_errors != mc.plain_refused)
    fault("%ld plain errors, the first %s", mc.plain_errors,
          uv_err_name(mc.first_plain_error));
  if (mc.max_per_iter > BUDGET || mc.max_reports_per_iter > BUDGET)
    fault("%ld datagrams and %ld reports in one iteration, budget %d "
          "each", mc.max_per_iter, mc.max_reports_per_iter, BUDGET);
  if (mc.tail_idle > SPIN_BOUND)
    fault("spin: %ld of the %ld loop iterations after the flood did "
          "nothing", mc.tail_idle, mc.tail_iterations);
  if (mc.dups != 0)
    fault("%ld datagrams delivered twice", mc.dups);
  if (mc.datagrams + mc.left_datagrams < mc.datagrams_sent)
    fault("lost datagrams: %ld delivered, %ld left queued, of %ld",
          mc.datagrams, mc.left_datagrams, mc.datagrams_sent);
  else if (mc.left_datagrams != 0)
    timing_fault("%ld of %ld datagrams not handed over %d ms after the "
                 "flood", mc.left_datagrams, mc.datagrams_sent, TAIL_MS);
  if (mc.lent != 0)
    fault("%ld buffers from alloc_cb never given back", mc.lent);
  mc.flood = NULL;
  munmap(f, sizeof(*f));
  return finish(c, r);
}

#endif  /* __linux__ */
