/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The C library's recvmsg() and recvmmsg(), for the programs that define
 * their own to watch libuv's reads: the static libuv they link calls the
 * program's, which counts (or fails) a read and passes it on to these.
 * Linux only; the including file defines _GNU_SOURCE first (RTLD_NEXT).
 */

#ifndef UVPATCH_LIBC_RECV_H_
#define UVPATCH_LIBC_RECV_H_

#include <dlfcn.h>
#include <stddef.h>
#include <sys/socket.h>
#include <time.h>

static ssize_t libc_recvmsg(int fd, struct msghdr* msg, int flags) {
  static ssize_t (*next)(int, struct msghdr*, int);

  if (next == NULL)
    next = (ssize_t (*)(int, struct msghdr*, int)) dlsym(RTLD_NEXT,
                                                         "recvmsg");
  return next(fd, msg, flags);
}


static int libc_recvmmsg(int fd,
                         struct mmsghdr* msgs,
                         unsigned int n,
                         int flags,
                         struct timespec* timeout) {
  static int (*next)(int, struct mmsghdr*, unsigned int, int,
                     struct timespec*);

  if (next == NULL)
    next = (int (*)(int, struct mmsghdr*, unsigned int, int,
                    struct timespec*)) dlsym(RTLD_NEXT, "recvmmsg");
  return next(fd, msgs, n, flags, timeout);
}

#endif  /* UVPATCH_LIBC_RECV_H_ */
