/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * A handle without UV_UDP_LINUX_RECVERR: no report, and no more reads of
 * the error queue than upstream makes.
 */

#include "udp_errqueue.h"

#ifdef __linux__

/* A receiving connected handle without UV_UDP_LINUX_RECVERR: the kernel
 * sets the socket error for each ICMP error (EPOLLERR) and queues nothing
 * on the error queue. libuv reads the queue once per EPOLLERR, as upstream
 * does, and finds nothing there.
 */
static int errqueue_reads_case(int mmsg, const char* name) {
  int r;

  CHECK_UV(setup_ex(AF_INET, 0, mmsg ? UV_UDP_RECVMMSG : 0));
  if (mmsg && !uv_udp_using_recvmmsg(&ctx.udp))
    SKIP("recvmmsg is not supported here (uv_udp_using_recvmmsg)");
  CHECK_UV(recv_start());
  CHECK_UV(start_paced_sends(1));
  r = run_and_close();
  note(name);

  if (ctx.pace_failed != 0)
    FAIL("uv_udp_try_send: %s", uv_strerror(ctx.pace_failed));
  if (ctx.plain_errors == 0 && ctx.sends.refused == 0)
    FAIL("no ECONNREFUSED came back: no EPOLLERR to judge by");
  if (ctx.errqueue_reads > PACED_SENDS)
    FAIL("%ld reads of the error queue (MSG_ERRQUEUE) on a socket without "
         "UV_UDP_LINUX_RECVERR, for %d ICMP errors: more than one each",
         ctx.errqueue_reads, PACED_SENDS);
  CHECK_EQ(ctx.reports, 0);
  if (r != 0)
    FAIL("uv_loop_close: %s", uv_strerror(r));
  return CASE_OK;
}

#endif  /* __linux__ */

int case_errqueue_reads_without_flag(void) {
#ifndef __linux__
  SKIP(LINUX_ONLY);
#else
  return errqueue_reads_case(0, "errqueue_reads_without_flag");
#endif
}

int case_errqueue_reads_without_flag_mmsg(void) {
#ifndef __linux__
  SKIP(LINUX_ONLY);
#else
  return errqueue_reads_case(1, "errqueue_reads_without_flag_mmsg");
#endif
}
