/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The loop's handle, and what it counts per loop iteration.
 */

#include "udp_flood.h"

#ifndef _WIN32

/* rx_recv's hook: only the drain scenario has a reason to stop early. */
void after_recv(rx_counts* rx,
                int kind,
                const uv_buf_t* buf,
                ssize_t n) {
  bench* b;

  (void) buf;
  (void) n;
  b = (bench*) rx;
  if (kind == RX_DATAGRAM && b->work_us > 0) {
    uint64_t until;

    until = uv_hrtime() + (uint64_t) b->work_us * 1000;
    while (uv_hrtime() < until)
      continue;
  }
  if (b->drain == 0)
    return;
  if (kind == RX_DRAINED)
    uv_stop(&b->loop);  /* EAGAIN: the backlog is drained. */
  else if (kind == RX_DATAGRAM && rx->received == (unsigned long) b->drain)
    uv_stop(&b->loop);  /* All there (the budget may end on the last). */
}


void on_check(uv_check_t* handle) {
  bench* b;
  int n;

  b = handle->data;
  n = rx_iteration(&b->rx);
  if (b->log_seq && n > 0 && b->nseq < MAX_SEQ)
    b->seq[b->nseq++] = n;
}

/* CPU time of the calling thread in ns, or 0 if unknown. */
uint64_t thread_cpu_ns(void) {
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
int open_receiver(bench* b, const char* name) {
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

#endif  /* !_WIN32 */
