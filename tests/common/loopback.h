/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * Loopback sockets for the UDP programs: every address they send to is on
 * loopback (127.0.0.0/8 or ::1). POSIX sockets; the including file guards
 * it where those are missing.
 */

#ifndef UVPATCH_LOOPBACK_H_
#define UVPATCH_LOOPBACK_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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

#endif  /* UVPATCH_LOOPBACK_H_ */
