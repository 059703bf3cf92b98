/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * A handle that sends and never receives.
 */

#include "udp_matrix.h"

#ifdef __linux__

/* 2000 sends to a closed port from a handle that never receives. */
int send_only_case(const cell_t* c) {
  const char* why;
  uv_buf_t buf;
  int sndbuf;
  int r;
  int i;

  close(mc.peer);
  mc.peer = -1;
  sndbuf = SEND_ONLY_SNDBUF;
  CHECK_UV(uv_send_buffer_size((uv_handle_t*) &mc.udp, &sndbuf));
  mc.icmp_before = icmp_received(mc.family);
  buf = uv_buf_init("send-only", 9);
  r = send_n(&mc.udp,
             &mc.sends,
             &buf,
             SEND_ONLY_SENDS,
             c->connected ? NULL : (const struct sockaddr*) &mc.peer_addr,
             &i);
  if (r != 0)
    FAIL("uv_udp_send #%d: %s", i, uv_strerror(r));
  r = run_for(RUN_MS);
  print_figures(c);

  if ((why = sends_missing(&mc.sends, SEND_ONLY_SENDS)) != NULL)
    fault("%s", why);
  if ((why = sends_failed(&mc.sends)) != NULL)
    fault("%s", why);
  if (mc.alloc_calls + mc.reports + mc.plain_errors + mc.datagrams +
      mc.empty_reads != 0)
    fault("%ld alloc_cb and %ld recv_cb calls on a handle that never "
          "received", mc.alloc_calls,
          mc.reports + mc.plain_errors + mc.datagrams + mc.empty_reads);
  if (mc.idle_iterations > SPIN_BOUND)
    fault("spin: %ld of %ld loop iterations in %d ms did nothing",
          mc.idle_iterations, mc.iterations, RUN_MS);
  return finish(c, r);
}

#endif  /* __linux__ */
