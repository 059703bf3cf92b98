/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * Datagrams behind a read error that an ICMP error set. The kernel hands
 * the socket error to the next plain read, before the datagrams queued on
 * the socket; upstream ends the readable event there, so a handle that
 * gets an ICMP error in every loop iteration never sees a datagram. The
 * patched libuv passes the error to recv_cb and reads on.
 *
 * The cases drive the loop one iteration at a time (UV_RUN_NOWAIT), after
 * waiting with poll() for what the iteration is to read, so that they
 * judge counts per iteration, whatever the machine's load.
 */

#include "udp_errqueue.h"

#ifdef __linux__

#include <poll.h>

/* Rounds of the flagged handle: within the kernel's ICMP burst of 50, so
 * that the default rate limits hold outside a private namespace too.
 */
#define ROUNDS 40
/* Datagrams queued in front of which the connected socket's error sits. */
#define BEHIND 10
/* How long a round waits for the kernel to queue what it sent. */
#define QUEUE_WAIT_MS 5000

/* A UDP socket bound to the family's loopback address, its address in
 * *ss. Returns the socket or -1.
 */
int bound_socket(int family, struct sockaddr_storage* ss) {
  socklen_t len;
  int fd;

  loopback_addr(family, ss);
  fd = socket(family, SOCK_DGRAM, 0);
  if (fd < 0)
    return -1;
  len = sizeof(*ss);
  if (bind(fd, (struct sockaddr*) ss, addr_len(ss)) != 0 ||
      getsockname(fd, (struct sockaddr*) ss, &len) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}


/* Sends the datagrams numbered first to first + n - 1 from fd to the
 * case's handle (the number in host order, as data.c sends them).
 * Returns 0 or -1.
 */
int send_numbered(int fd, unsigned first, int n) {
  struct sockaddr_storage me;
  unsigned seq;
  int namelen;
  int i;

  namelen = sizeof(me);
  if (uv_udp_getsockname(&ctx.udp, (struct sockaddr*) &me, &namelen) != 0)
    return -1;
  for (i = 0; i < n; i++) {
    seq = first + (unsigned) i;
    if (sendto(fd, &seq, sizeof(seq), 0, (struct sockaddr*) &me,
               (socklen_t) namelen) != (ssize_t) sizeof(seq))
      return -1;
  }
  return 0;
}


/* Waits until fd has all of `events` (POLLIN, POLLERR) to report, at
 * most QUEUE_WAIT_MS: loopback queues what is sent at once on an idle
 * machine, later under load. Returns 0 or -1.
 */
int wait_for(int fd, short events) {
  struct pollfd p;
  uint64_t deadline;

  deadline = uv_hrtime() / 1000000 + QUEUE_WAIT_MS;
  for (;;) {
    p.fd = fd;
    p.events = POLLIN;
    p.revents = 0;
    if (poll(&p, 1, 10) == 1 && (p.revents & events) == events)
      return 0;
    if (uv_hrtime() / 1000000 >= deadline)
      return -1;
  }
}


/* A handle bound with UV_UDP_LINUX_RECVERR gets, in each of ROUNDS loop
 * iterations, a datagram from a peer and then one ICMP error (a send of
 * its own to a closed port): the datagram must come in its iteration.
 */
static int icmp_each_iteration(int family, int mmsg, const char* name) {
  struct sockaddr_storage dst;
  struct sockaddr_storage pa;
  long in_round;
  long before;
  int peer;
  int fd;
  int i;
  int r;

  CHECK_UV(setup_ex(family, UV_UDP_LINUX_RECVERR,
                    mmsg ? UV_UDP_RECVMMSG : 0));
  if (mmsg && !uv_udp_using_recvmmsg(&ctx.udp))
    SKIP("recvmmsg is not supported here (uv_udp_using_recvmmsg)");
  CHECK_UV(recv_start());
  ctx.data_expected = ROUNDS;
  ctx.data_seen = calloc(ROUNDS, 1);
  CHECK(ctx.data_seen != NULL);
  CHECK_EQ(closed_port(family, &dst), 0);
  peer = bound_socket(family, &pa);
  CHECK_GE(peer, 0);
  fd = udp_fd(&ctx.udp);

  in_round = 0;
  for (i = 0; i < ROUNDS; i++) {
    before = ctx.datagrams;
    CHECK_EQ(send_numbered(peer, (unsigned) i, 1), 0);
    CHECK_EQ(send_for_report(fd, &dst), 0);
    CHECK_EQ(wait_for(fd, POLLIN | POLLERR), 0);
    uv_run(&ctx.loop, UV_RUN_NOWAIT);
    in_round += ctx.datagrams > before;
  }
  close(peer);
  /* Then what is left, until the socket is drained. */
  r = run_and_close();
  note(name);
  fprintf(stderr, "# %s: %ld of %d datagrams in their iteration, %ld in "
          "all; %ld reports, %ld plain errors for %d ICMP errors\n", name,
          in_round, ROUNDS, ctx.datagrams, ctx.reports, ctx.plain_errors,
          ROUNDS);

  CHECK_EQ(r, 0);
  if (in_round != ROUNDS)
    FAIL("%ld of %d datagrams came in the loop iteration of their ICMP "
         "error (%ld in all; plain errors %ld, first %s)", in_round, ROUNDS,
         ctx.datagrams, ctx.plain_errors,
         ctx.plain_errors ? uv_err_name((int) ctx.plain_err) : "-");
  if (ctx.datagrams != ROUNDS || ctx.data_dup != 0)
    FAIL("%ld of %d datagrams delivered, %ld twice", ctx.datagrams, ROUNDS,
         ctx.data_dup);
  if (ctx.reports != ROUNDS || ctx.report_dup + ctx.report_bad != 0)
    FAIL("%ld reports for %d ICMP errors", ctx.reports, ROUNDS);
  if (ctx.plain_errors > ROUNDS || ctx.plain_other != 0)
    FAIL("%ld plain errors for %d ICMP errors (first %s)", ctx.plain_errors,
         ROUNDS, uv_err_name((int) ctx.plain_err));
  CHECK_EQ(ctx.calls_after_close, 0);
  free(ctx.data_seen);
  return CASE_OK;
}


/* A connected socket without IP_RECVERR: the peer sends BEHIND datagrams
 * and goes away, then a send to it sets ECONNREFUSED, in front of them.
 * One loop iteration hands over the error and every datagram.
 */
static int refused_before_data(int family, int mmsg, const char* name) {
  struct sockaddr_storage pa;
  long first_iter;
  int peer;
  int fd;
  int r;

  CHECK_UV(setup_ex(family, 0, mmsg ? UV_UDP_RECVMMSG : 0));
  if (mmsg && !uv_udp_using_recvmmsg(&ctx.udp))
    SKIP("recvmmsg is not supported here (uv_udp_using_recvmmsg)");
  peer = bound_socket(family, &pa);
  CHECK_GE(peer, 0);
  CHECK_UV(uv_udp_connect(&ctx.udp, (const struct sockaddr*) &pa));
  CHECK_UV(recv_start());
  ctx.data_expected = BEHIND;
  ctx.data_seen = calloc(BEHIND, 1);
  CHECK(ctx.data_seen != NULL);
  fd = udp_fd(&ctx.udp);
  CHECK_EQ(send_numbered(peer, 0, BEHIND), 0);
  close(peer);
  CHECK_EQ(send(fd, "gone", 4, 0), 4);
  CHECK_EQ(wait_for(fd, POLLIN | POLLERR), 0);
  uv_run(&ctx.loop, UV_RUN_NOWAIT);
  first_iter = ctx.datagrams;
  r = run_and_close();
  note(name);
  fprintf(stderr, "# %s: first iteration: %ld plain errors (first %s), "
          "%ld of %d datagrams; in all %ld\n", name, ctx.plain_errors,
          ctx.plain_errors ? uv_err_name((int) ctx.plain_err) : "-",
          first_iter, BEHIND, ctx.datagrams);

  CHECK_EQ(r, 0);
  if (ctx.plain_errors != 1 || ctx.plain_err != UV_ECONNREFUSED)
    FAIL("%ld plain errors (first %s), expected one ECONNREFUSED",
         ctx.plain_errors,
         ctx.plain_errors ? uv_err_name((int) ctx.plain_err) : "-");
  if (first_iter != BEHIND)
    FAIL("%ld of the %d datagrams behind the ECONNREFUSED came in its loop "
         "iteration (%ld in all)", first_iter, BEHIND, ctx.datagrams);
  if (ctx.datagrams != BEHIND || ctx.data_dup != 0)
    FAIL("%ld of %d datagrams delivered, %ld twice", ctx.datagrams, BEHIND,
         ctx.data_dup);
  CHECK_EQ(ctx.reports, 0);
  free(ctx.data_seen);
  return CASE_OK;
}


static int v6_skip(int family) {
  private_netns_once();
  return family == AF_INET6 && no_ipv6();
}

#endif  /* __linux__ */

#ifndef __linux__
# define READ_ON_CASE(name, fn, family, mmsg)                                 \
  int case_##name(void) {                                                     \
    SKIP(LINUX_ONLY);                                                         \
  }
#else
# define READ_ON_CASE(name, fn, family, mmsg)                                 \
  int case_##name(void) {                                                     \
    if (v6_skip(family))                                                      \
      SKIP("no IPv6 loopback (::1) on this machine");                         \
    return fn(family, mmsg, #name);                                           \
  }
#endif

READ_ON_CASES(READ_ON_CASE)
