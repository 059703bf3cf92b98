/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * A handle that does not receive: its sends complete, and no callback
 * runs.
 */

#include "udp_errqueue.h"

#ifdef __linux__

/* A RECVERR handle that does not receive queues n sends to a closed port:
 * ICMP errors come back while sends are still queued, so the loop polls
 * the socket for POLLOUT and gets EPOLLERR. With stop_first, the handle
 * received first and stopped.
 */
static int send_only(int connected, int stop_first, const char* name) {
  struct sockaddr_storage dst;
  const char* why;
  uv_buf_t buf;
  int sndbuf;
  int n;
  int i;
  int r;

  n = 2000;
  CHECK_UV(setup(AF_INET, UV_UDP_LINUX_RECVERR));
  if (stop_first) {
    CHECK_UV(recv_start());
    uv_run(&ctx.loop, UV_RUN_NOWAIT);
    CHECK_UV(uv_udp_recv_stop(&ctx.udp));
    ctx.stopped = 1;
  }
  sndbuf = 4096;
  CHECK_UV(uv_send_buffer_size((uv_handle_t*) &ctx.udp, &sndbuf));
  CHECK_EQ(closed_port(AF_INET, &dst), 0);
  if (connected)
    CHECK_UV(uv_udp_connect(&ctx.udp, (const struct sockaddr*) &dst));

  buf = uv_buf_init("send-only", 9);
  r = send_n(&ctx.udp,
             &ctx.sends,
             &buf,
             n,
             connected ? NULL : (const struct sockaddr*) &dst,
             &i);
  if (r != 0)
    FAIL("uv_udp_send #%d: %s", i, uv_strerror(r));
  r = run_and_close();
  note(name);

  if ((why = sends_missing(&ctx.sends, n)) != NULL ||
      (why = sends_failed(&ctx.sends)) != NULL)
    FAIL("%s", why);
  if (stop_first && ctx.calls_after_stop != 0)
    FAIL("%ld alloc_cb/recv_cb calls after uv_udp_recv_stop()",
         ctx.calls_after_stop);
  if (!stop_first && ctx.alloc_calls + ctx.recv_calls != 0)
    FAIL("%ld alloc_cb and %ld recv_cb calls on a handle that never "
         "received", ctx.alloc_calls, ctx.recv_calls);
  if (ctx.iterations > 50)
    FAIL("loop spun: %ld iterations in %d ms", ctx.iterations, RUN_MS);
  CHECK_EQ(r, 0);
  return CASE_OK;
}

#endif  /* __linux__ */

int case_send_only_unconnected(void) {
#ifndef __linux__
  SKIP(LINUX_ONLY);
#else
  return send_only(0, 0, "send_only_unconnected");
#endif
}

int case_send_only_connected(void) {
#ifndef __linux__
  SKIP(LINUX_ONLY);
#else
  return send_only(1, 0, "send_only_connected");
#endif
}

int case_stopped_handle_sends(void) {
#ifndef __linux__
  SKIP(LINUX_ONLY);
#else
  return send_only(0, 1, "stopped_handle_sends");
#endif
}
