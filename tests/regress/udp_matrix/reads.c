/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The program's recvmsg() and recvmmsg(), which the static libuv calls.
 */

#include "udp_matrix.h"

#ifdef __linux__

#include "libc_recv.h"

/* The program defines recvmsg() and recvmmsg(), which the static libuv it
 * is linked with calls: they count the reads of the error queue, can fail
 * the next one with an errno of our choosing, and note what each
 * recvmmsg() returned, then pass every call on to the C library.
 */
long errqueue_reads;
int inject_errno;
long injected;
/* The last batch of recvmmsg(): its size and the chunks handed over. */
long batch_size;
long batch_seen;
int refused_state;

static void note_read(int flags, long r, int err) {
  if (flags & MSG_ERRQUEUE)
    refused_state = refused_state == REFUSED_READ && r < 0 && err == EAGAIN
                        ? REFUSED_NO_REPORT
                        : REFUSED_NONE;
  else
    refused_state = r < 0 && err == ECONNREFUSED ? REFUSED_READ
                                                 : REFUSED_NONE;
}

/* Counts an error-queue read; makes it fail once with inject_errno when a
 * case asked for that. Returns 1 when the read is to fail.
 */
static int errqueue_read_fails(int flags) {
  if (!(flags & MSG_ERRQUEUE))
    return 0;
  errqueue_reads++;
  if (inject_errno == 0)
    return 0;
  errno = inject_errno;
  inject_errno = 0;
  injected++;
  refused_state = REFUSED_NONE;
  return 1;
}

ssize_t recvmsg(int fd, struct msghdr* msg, int flags) {
  ssize_t r;
  int err;

  if (errqueue_read_fails(flags))
    return -1;
  r = libc_recvmsg(fd, msg, flags);
  err = errno;
  note_read(flags, (long) r, err);
  errno = err;
  return r;
}

int recvmmsg(int fd,
             struct mmsghdr* msgs,
             unsigned int n,
             int flags,
             struct timespec* timeout) {
  int err;
  int r;

  if (errqueue_read_fails(flags))
    return -1;
  r = libc_recvmmsg(fd, msgs, n, flags, timeout);
  err = errno;
  note_read(flags, r, err);
  if (r > 0) {
    batch_size = r;
    batch_seen = 0;
  }
  errno = err;
  return r;
}

#endif  /* __linux__ */
