/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * Loopback sockets for the UDP programs: every address they send to is on
 * loopback (127.0.0.0/8 or ::1). POSIX sockets; the including file guards
 * it where those are missing.
 */

#ifndef UVPATCH_LOOPBACK_H_
#define UVPATCH_LOOPBACK_H_

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "uv.h"

/* The socket of a UDP handle, or -1 (closing, or not open). */
static int udp_fd(uv_udp_t* handle) {
  uv_os_fd_t fd;

  if (uv_fileno((uv_handle_t*) handle, &fd) != 0)
    return -1;
  return fd;
}


/* Fills out (a struct sockaddr_in or sockaddr_in6, as family says) with a
 * loopback port that nothing listens on: binds a socket, reads its port
 * and closes it. Returns 0 or -1.
 */
static int closed_port(int family, void* out) {
  struct sockaddr_in6* s6;
  struct sockaddr_in* s4;
  socklen_t len;
  int fd;

  if (family == AF_INET6) {
    s6 = out;
    memset(s6, 0, sizeof(*s6));
    s6->sin6_family = AF_INET6;
    s6->sin6_addr = in6addr_loopback;
    len = sizeof(*s6);
  } else {
    s4 = out;
    memset(s4, 0, sizeof(*s4));
    s4->sin_family = AF_INET;
    s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    len = sizeof(*s4);
  }
  fd = socket(family, SOCK_DGRAM, 0);
  if (fd < 0)
    return -1;
  if (bind(fd, (struct sockaddr*) out, len) != 0 ||
      getsockname(fd, (struct sockaddr*) out, &len) != 0) {
    close(fd);
    return -1;
  }
  close(fd);
  return 0;
}


static socklen_t addr_len(const struct sockaddr_storage* ss) {
  return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                   : sizeof(struct sockaddr_in);
}


/* The loopback address of the family, port 0. */
static void loopback_addr(int family, struct sockaddr_storage* ss) {
  memset(ss, 0, sizeof(*ss));
  if (family == AF_INET6) {
    ((struct sockaddr_in6*) ss)->sin6_family = AF_INET6;
    ((struct sockaddr_in6*) ss)->sin6_addr = in6addr_loopback;
  } else {
    ((struct sockaddr_in*) ss)->sin_family = AF_INET;
    ((struct sockaddr_in*) ss)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  }
}


/* Nonzero when ::1 cannot be bound here (a kernel or namespace without
 * IPv6): the IPv6 cases skip then.
 */
static int no_ipv6(void) {
  struct sockaddr_storage ss;
  int fd;
  int r;

  fd = socket(AF_INET6, SOCK_DGRAM, 0);
  if (fd < 0)
    return 1;
  loopback_addr(AF_INET6, &ss);
  r = bind(fd, (struct sockaddr*) &ss, addr_len(&ss));
  close(fd);
  return r != 0;
}


/* Sends one datagram from fd to dst (a closed port), so that one ICMP
 * error comes back. A socket error still pending (from the previous one)
 * fails a send without sending anything: then send again.
 */
static int send_for_report(int fd, const struct sockaddr_storage* dst) {
  int tries;

  for (tries = 0; tries < 10; tries++) {
    if (sendto(fd, "errq", 4, 0, (const struct sockaddr*) dst,
               addr_len(dst)) == 4)
      return 0;
    if (errno != ECONNREFUSED && errno != EINTR)
      return -1;
  }
  return -1;
}


#ifdef MSG_ERRQUEUE
/* Takes the reports left on fd's error queue, at most max of them, and
 * returns how many there were: what libuv left behind, so a case can
 * judge it and the next read starts clean.
 */
static long take_errqueue(int fd, long max) {
  struct msghdr h;
  struct iovec iov;
  char payload[64];
  char control[256];
  long n;

  for (n = 0; n < max; n++) {
    memset(&h, 0, sizeof(h));
    iov.iov_base = payload;
    iov.iov_len = sizeof(payload);
    h.msg_iov = &iov;
    h.msg_iovlen = 1;
    h.msg_control = control;
    h.msg_controllen = sizeof(control);
    if (recvmsg(fd, &h, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
      break;
  }
  return n;
}
#endif

#endif  /* UVPATCH_LOOPBACK_H_ */
