/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * TX timestamps (SO_TIMESTAMPING, set by the user on uv_fileno()) beside
 * datagrams. The kernel queues one on the error queue for each send, so
 * libuv hands them over as reports (UV_UDP_LINUX_RECVERR, nread
 * UV_ENOMSG) on any socket, with IP_RECVERR or not. They must not take
 * the datagrams' budget: an echo server that sends a reply per request
 * would fall behind its requests, and the kernel would drop them. Nor
 * may they hide a socket error that has no report.
 */

#include "udp_errqueue.h"

#ifdef __linux__

#include <linux/net_tstamp.h>

/* Loop iterations of the echo load, and replies sent in each. */
#define TS_ROUNDS 100
#define REPLIES 24
/* Timestamps queued in front of the connected socket's error. */
#define TS_QUEUED 20
/* The receive buffer (the kernel doubles it): room for a few rounds. */
#define TS_RCVBUF (128 * 1024)

static int enable_timestamps(int fd) {
  int opts;
  int size;

  opts = SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE |
         SOF_TIMESTAMPING_OPT_ID;
  size = TS_RCVBUF;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size)) != 0)
    return -1;
  return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &opts, sizeof(opts));
}


/* Takes every reply the client got, so that its buffer never fills. */
static void drain(int fd) {
  char buf[64];

  while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) >= 0)
    continue;
}


/* An echo-like server: in each of TS_ROUNDS loop iterations, n requests
 * come in and REPLIES replies go out, each reply a TX timestamp on the
 * error queue for the next iteration. Every request must be delivered,
 * none dropped by the kernel, and every timestamp reported.
 */
static int echo_with_timestamps(int n, int mmsg, const char* name) {
  struct sockaddr_storage ca;
  char list[256];
  uv_buf_t reply;
  long in_rounds;
  long drops0;
  long drops;
  long sent;
  int client;
  int fd;
  int i;
  int k;
  int r;

  CHECK_UV(setup_ex(AF_INET, 0, mmsg ? UV_UDP_RECVMMSG : 0));
  if (mmsg && !uv_udp_using_recvmmsg(&ctx.udp))
    SKIP("recvmmsg is not supported here (uv_udp_using_recvmmsg)");
  fd = udp_fd(&ctx.udp);
  CHECK_EQ(enable_timestamps(fd), 0);
  CHECK_UV(recv_start());
  sent = (long) TS_ROUNDS * n;
  ctx.data_expected = (int) sent;
  ctx.data_seen = calloc((size_t) sent, 1);
  CHECK(ctx.data_seen != NULL);
  client = bound_socket(AF_INET, &ca);
  CHECK_GE(client, 0);
  /* The kernel's drops, counted in the private namespace only. */
  drops0 = private_netns_once() == 0 ? snmp_counter("Udp:", "RcvbufErrors")
                                     : -1;
  reply = uv_buf_init("reply", 5);

  for (i = 0; i < TS_ROUNDS; i++) {
    CHECK_EQ(send_numbered(client, (unsigned) (i * n), n), 0);
    CHECK_EQ(wait_for(fd, POLLIN), 0);
    uv_run(&ctx.loop, UV_RUN_NOWAIT);
    for (k = 0; k < REPLIES; k++)
      CHECK_EQ(uv_udp_try_send(&ctx.udp, &reply, 1,
                               (const struct sockaddr*) &ca), 5);
    drain(client);
  }
  in_rounds = ctx.datagrams;
  close(client);
  r = run_and_close();
  drops = drops0 < 0 ? -1 : snmp_counter("Udp:", "RcvbufErrors") - drops0;
  note(name);
  format_list(list, sizeof(list), ctx.reports_per_iter,
              ctx.report_iters < 8 ? ctx.report_iters : 8);
  fprintf(stderr, "# %s: %d in and %d replies out per iteration, %d "
          "iterations: %ld of %ld datagrams delivered (%.1f %%), %ld by "
          "the last iteration; kernel drops %ld; %ld timestamps reported "
          "(%ld without the flag) of %d; plain errors %ld; reports/iter "
          "[%s ...]\n", name, n, REPLIES, TS_ROUNDS, ctx.datagrams, sent,
          100.0 * (double) ctx.datagrams / (double) sent, in_rounds, drops,
          ctx.reports, ctx.unflagged, TS_ROUNDS * REPLIES, ctx.plain_errors,
          list);

  CHECK_EQ(r, 0);
  if (ctx.datagrams != sent || ctx.data_dup != 0 || drops > 0)
    FAIL("%ld of %ld requests delivered (%.1f %%), %ld twice, %ld dropped "
         "by the kernel", ctx.datagrams, sent,
         100.0 * (double) ctx.datagrams / (double) sent, ctx.data_dup,
         drops);
  /* Each iteration takes its n requests: the backlog stays within one
   * round, whatever the load delayed.
   */
  if (in_rounds < sent - n)
    FAIL("%ld of %ld requests delivered by the last iteration: the server "
         "fell behind", in_rounds, sent);
  for (k = 0; k < ctx.data_iters; k++)
    CHECK_LE(ctx.data_per_iter[k], DATA_BUDGET);
  for (k = 0; k < ctx.report_iters; k++)
    CHECK_LE(ctx.reports_per_iter[k], REPORT_BUDGET);
  /* In recvmmsg mode libuv, upstream's too, hands timestamps over as
   * datagrams without the flag (see loop.c): they are counted, not
   * judged for their form here.
   */
  if (ctx.reports + ctx.unflagged != TS_ROUNDS * REPLIES)
    FAIL("%ld timestamps reported (%ld more without the flag) for %d "
         "replies", ctx.reports, ctx.unflagged, TS_ROUNDS * REPLIES);
  CHECK_EQ(ctx.plain_errors, 0);
  free(ctx.data_seen);
  return CASE_OK;
}


/* A connected socket without IP_RECVERR, TS_QUEUED timestamps queued, a
 * datagram waiting, then an ICMP error: its ECONNREFUSED has no report,
 * only the socket error, and must reach recv_cb.
 */
static int refused_behind_timestamps(int family, int mmsg,
                                     const char* name) {
  struct sockaddr_storage pa;
  int peer;
  int fd;
  int i;
  int r;

  CHECK_UV(setup_ex(family, 0, mmsg ? UV_UDP_RECVMMSG : 0));
  if (mmsg && !uv_udp_using_recvmmsg(&ctx.udp))
    SKIP("recvmmsg is not supported here (uv_udp_using_recvmmsg)");
  fd = udp_fd(&ctx.udp);
  CHECK_EQ(enable_timestamps(fd), 0);
  peer = bound_socket(family, &pa);
  CHECK_GE(peer, 0);
  CHECK_UV(uv_udp_connect(&ctx.udp, (const struct sockaddr*) &pa));
  CHECK_UV(recv_start());
  ctx.data_expected = 1;
  ctx.data_seen = calloc(1, 1);
  CHECK(ctx.data_seen != NULL);
  for (i = 0; i < TS_QUEUED; i++)
    CHECK_EQ(send(fd, "ts", 2, 0), 2);
  CHECK_EQ(send_numbered(peer, 0, 1), 0);
  close(peer);
  CHECK_EQ(send(fd, "gone", 4, 0), 4);
  CHECK_EQ(wait_for(fd, POLLIN | POLLERR), 0);
  r = run_and_close();
  note(name);

  CHECK_EQ(r, 0);
  if (ctx.plain_errors != 1 || ctx.plain_err != UV_ECONNREFUSED)
    FAIL("%ld plain errors (first %s) behind %ld timestamps, expected one "
         "ECONNREFUSED", ctx.plain_errors,
         ctx.plain_errors ? uv_err_name((int) ctx.plain_err) : "-",
         ctx.reports);
  CHECK_EQ(ctx.datagrams, 1);
  /* A timestamp for each send, the last one's too; in recvmmsg mode
   * without the flag (see loop.c).
   */
  CHECK_EQ(ctx.reports + ctx.unflagged, TS_QUEUED + 1);
  free(ctx.data_seen);
  return CASE_OK;
}

#endif  /* __linux__ */

#ifndef __linux__
# define TIMESTAMP_CASE(name, fn, arg, mmsg)                                  \
  int case_##name(void) {                                                     \
    SKIP(LINUX_ONLY);                                                         \
  }
#else
# define TIMESTAMP_CASE(name, fn, arg, mmsg)                                  \
  int case_##name(void) {                                                     \
    private_netns_once();                                                     \
    if (arg == AF_INET6 && no_ipv6())                                         \
      SKIP("no IPv6 loopback (::1) on this machine");                         \
    return fn(arg, mmsg, #name);                                              \
  }
#endif

TIMESTAMP_CASES(TIMESTAMP_CASE)
