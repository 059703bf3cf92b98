/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * Datagrams behind the rarer ICMP errors: an ICMPv6 destination
 * unreachable "administratively prohibited" (code 1) sets EACCES, an
 * ICMPv4 destination unreachable "source route failed" (code 5) sets
 * EOPNOTSUPP (UV_ENOTSUP). No port of the machine answers with them, so
 * the cases craft them on a raw socket, quoting the IP and UDP headers of
 * a datagram the handle sent to a peer: the kernel then finds the handle's
 * socket and sets its error, as a router's message would. Like
 * ECONNREFUSED (read_on.c), the error comes to the next plain read in
 * place of the datagrams queued behind it; upstream ends the readable
 * event there, and a handle that gets one such error each loop iteration
 * never sees a datagram.
 *
 * A socket with IP_RECVERR gets every ICMP error; one without gets only
 * those the kernel deems fatal, and only when connected: code 1 of ICMPv6
 * is one, code 5 of ICMPv4 is not, so only EACCES has a connected case
 * without UV_UDP_LINUX_RECVERR. Raw sockets need CAP_NET_RAW: without
 * it the cases skip.
 */

#include "udp_errqueue.h"

#ifdef __linux__

#include <poll.h>

#define ROUNDS 20
/* The ICMP type "destination unreachable" of each family. */
#define ICMP4_DEST_UNREACH 3
#define ICMP6_DEST_UNREACH 1
/* The bytes the handle sends in each round, which the message quotes. */
#define SENT "quoted"
#define SENT_LEN 6

static void put16(unsigned char* p, unsigned v) {
  p[0] = (unsigned char) (v >> 8);
  p[1] = (unsigned char) v;
}


/* The Internet checksum of len bytes, in network byte order at the end. */
static unsigned inet_sum(const unsigned char* p, size_t len) {
  unsigned long s;
  size_t i;

  s = 0;
  for (i = 0; i + 1 < len; i += 2)
    s += (unsigned long) p[i] << 8 | p[i + 1];
  if (len & 1)
    s += (unsigned long) p[len - 1] << 8;
  while (s >> 16)
    s = (s & 0xffff) + (s >> 16);
  return (unsigned) (~s & 0xffff);
}


/* The port of a socket address, host order. */
static unsigned port_of(const struct sockaddr_storage* ss) {
  if (ss->ss_family == AF_INET6)
    return ntohs(((const struct sockaddr_in6*) ss)->sin6_port);
  return ntohs(((const struct sockaddr_in*) ss)->sin_port);
}


/* Sends, on the raw socket raw, a destination unreachable of the given
 * code to the handle at me, quoting the header of a datagram of SENT_LEN
 * bytes from me to to. Both are loopback addresses of the family. The
 * kernel fills in the checksum of ICMPv6, not that of ICMPv4. Returns 0
 * or -1 (errno set).
 */
static int send_unreachable(int raw,
                            int code,
                            const struct sockaddr_storage* me,
                            const struct sockaddr_storage* to) {
  struct sockaddr_storage dst;
  unsigned char pkt[8 + 40 + 8];
  unsigned char* ip;
  unsigned char* udp;
  size_t iplen;
  size_t len;

  memset(pkt, 0, sizeof(pkt));
  ip = pkt + 8;
  if (me->ss_family == AF_INET6) {
    iplen = 40;
    pkt[0] = ICMP6_DEST_UNREACH;
    ip[0] = 0x60;  /* Version 6. */
    put16(ip + 4, 8 + SENT_LEN);
    ip[6] = IPPROTO_UDP;
    ip[7] = 64;
    memcpy(ip + 8, &((const struct sockaddr_in6*) me)->sin6_addr, 16);
    memcpy(ip + 24, &((const struct sockaddr_in6*) to)->sin6_addr, 16);
  } else {
    iplen = 20;
    pkt[0] = ICMP4_DEST_UNREACH;
    ip[0] = 0x45;  /* Version 4, a header of 5 words. */
    put16(ip + 2, 20 + 8 + SENT_LEN);
    ip[8] = 64;
    ip[9] = IPPROTO_UDP;
    memcpy(ip + 12, &((const struct sockaddr_in*) me)->sin_addr, 4);
    memcpy(ip + 16, &((const struct sockaddr_in*) to)->sin_addr, 4);
    put16(ip + 10, inet_sum(ip, 20));
  }
  pkt[1] = (unsigned char) code;
  udp = ip + iplen;
  put16(udp, port_of(me));
  put16(udp + 2, port_of(to));
  put16(udp + 4, 8 + SENT_LEN);
  len = 8 + iplen + 8;
  if (me->ss_family == AF_INET)
    put16(pkt + 2, inet_sum(pkt, len));
  /* A raw IPv6 socket takes a port as its protocol: none, then. */
  loopback_addr(me->ss_family, &dst);
  if (sendto(raw, pkt, len, 0, (struct sockaddr*) &dst, addr_len(&dst)) !=
      (ssize_t) len)
    return -1;
  return 0;
}


/* Each of ROUNDS loop iterations: a peer's datagram queued to the handle,
 * a datagram of the handle to the peer, and the crafted ICMP error for
 * it, which sets the socket error (code) in front of the peer's datagram.
 * The datagram and the error must both come in their iteration.
 */
static int icmp_code_rounds(int family,
                            int code,
                            long expected,
                            int mmsg,
                            int connected,
                            const char* name) {
  struct sockaddr_storage me;
  struct sockaddr_storage pa;
  long in_round;
  long errors_in_round;
  long before;
  long errors_before;
  int namelen;
  int peer;
  int raw;
  int fd;
  int i;
  int r;

  CHECK_UV(setup_ex(family, connected ? 0 : UV_UDP_LINUX_RECVERR,
                    mmsg ? UV_UDP_RECVMMSG : 0));
  if (mmsg && !uv_udp_using_recvmmsg(&ctx.udp))
    SKIP("recvmmsg is not supported here (uv_udp_using_recvmmsg)");
  raw = socket(family, SOCK_RAW,
               family == AF_INET6 ? IPPROTO_ICMPV6 : IPPROTO_ICMP);
  if (raw < 0 && (errno == EPERM || errno == EACCES))
    SKIP("a raw ICMP socket needs CAP_NET_RAW (root)");
  CHECK_GE(raw, 0);
  ctx.plain_code = expected;
  peer = bound_socket(family, &pa);
  CHECK_GE(peer, 0);
  if (connected)
    CHECK_UV(uv_udp_connect(&ctx.udp, (const struct sockaddr*) &pa));
  namelen = sizeof(me);
  CHECK_UV(uv_udp_getsockname(&ctx.udp, (struct sockaddr*) &me, &namelen));
  CHECK_UV(recv_start());
  ctx.data_expected = ROUNDS;
  ctx.data_seen = calloc(ROUNDS, 1);
  CHECK(ctx.data_seen != NULL);
  fd = udp_fd(&ctx.udp);

  in_round = 0;
  errors_in_round = 0;
  for (i = 0; i < ROUNDS; i++) {
    before = ctx.datagrams;
    errors_before = ctx.plain_errors;
    CHECK_EQ(send_numbered(peer, (unsigned) i, 1), 0);
    CHECK_EQ(sendto(fd, SENT, SENT_LEN, 0, (struct sockaddr*) &pa,
                    addr_len(&pa)), SENT_LEN);
    CHECK_EQ(send_unreachable(raw, code, &me, &pa), 0);
    /* The error is there (POLLERR) before the iteration runs. */
    CHECK_EQ(wait_for(fd, POLLIN | POLLERR), 0);
    uv_run(&ctx.loop, UV_RUN_NOWAIT);
    in_round += ctx.datagrams > before;
    errors_in_round += ctx.plain_errors > errors_before;
  }
  close(peer);
  close(raw);
  r = run_and_close();
  note(name);
  fprintf(stderr, "# %s: %ld of %d datagrams and %ld of %d %s errors in "
          "their iteration; %ld datagrams in all; %ld reports\n", name,
          in_round, ROUNDS, errors_in_round, ROUNDS,
          uv_err_name((int) expected), ctx.datagrams, ctx.reports);

  CHECK_EQ(r, 0);
  if (in_round != ROUNDS)
    FAIL("%ld of %d datagrams came in the loop iteration of their %s "
         "(%ld in all; plain errors %ld, first %s)", in_round, ROUNDS,
         uv_err_name((int) expected), ctx.datagrams, ctx.plain_errors,
         ctx.plain_errors ? uv_err_name((int) ctx.plain_err) : "-");
  if (errors_in_round != ROUNDS || ctx.plain_errors != ROUNDS ||
      ctx.plain_other != 0)
    FAIL("%ld of %d rounds handed over their error; %ld plain errors, %ld "
         "not %s (first %s)", errors_in_round, ROUNDS, ctx.plain_errors,
         ctx.plain_other, uv_err_name((int) expected),
         ctx.plain_errors ? uv_err_name((int) ctx.plain_err) : "-");
  if (ctx.datagrams != ROUNDS || ctx.data_dup != 0)
    FAIL("%ld of %d datagrams delivered, %ld twice", ctx.datagrams, ROUNDS,
         ctx.data_dup);
  /* The report of each error, on the handle that asked for them. */
  if (ctx.reports != (connected ? 0 : ROUNDS))
    FAIL("%ld reports for %d ICMP errors", ctx.reports, ROUNDS);
  if (!connected && ctx.report_nread != expected)
    FAIL("the first report has nread %ld, not %s", (long) ctx.report_nread,
         uv_err_name((int) expected));
  CHECK_EQ(ctx.calls_after_close, 0);
  free(ctx.data_seen);
  return CASE_OK;
}

#endif  /* __linux__ */

#ifndef __linux__
# define ICMP_CODE_CASE(name, family, code, expected, mmsg, connected)       \
  int case_##name(void) {                                                     \
    SKIP(LINUX_ONLY);                                                         \
  }
#else
# define ICMP_CODE_CASE(name, family, code, expected, mmsg, connected)       \
  int case_##name(void) {                                                     \
    private_netns_once();                                                     \
    if (family == AF_INET6 && no_ipv6())                                      \
      SKIP("no IPv6 loopback (::1) on this machine");                         \
    return icmp_code_rounds(family, code, expected, mmsg, connected, #name); \
  }
#endif

ICMP_CODE_CASES(ICMP_CODE_CASE)
