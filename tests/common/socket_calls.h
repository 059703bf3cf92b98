/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The poll() and getsockopt(SO_ERROR) calls that the static libuv makes on
 * the socket watch_fd, added to socket_calls; the including program adds
 * its reads there too. It defines them: one file of a program includes
 * it, the others declare watch_fd and socket_calls extern. Linux only;
 * the including file defines _GNU_SOURCE first (RTLD_NEXT).
 */

#ifndef UVPATCH_SOCKET_CALLS_H_
#define UVPATCH_SOCKET_CALLS_H_

#include <dlfcn.h>
#include <poll.h>
#include <stddef.h>
#include <sys/socket.h>

int watch_fd = -1;
long socket_calls;

int poll(struct pollfd* fds, nfds_t n, int timeout) {
  static int (*next)(struct pollfd*, nfds_t, int);

  if (next == NULL)
    next = (int (*)(struct pollfd*, nfds_t, int)) dlsym(RTLD_NEXT, "poll");
  socket_calls += n == 1 && fds[0].fd == watch_fd;
  return next(fds, n, timeout);
}


int getsockopt(int fd, int level, int name, void* value, socklen_t* len) {
  static int (*next)(int, int, int, void*, socklen_t*);

  if (next == NULL)
    next = (int (*)(int, int, int, void*, socklen_t*)) dlsym(RTLD_NEXT,
                                                            "getsockopt");
  socket_calls += fd == watch_fd && level == SOL_SOCKET && name == SO_ERROR;
  return next(fd, level, name, value, len);
}

#endif  /* UVPATCH_SOCKET_CALLS_H_ */
