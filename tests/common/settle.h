/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The end of a run that waits for what it needs, not for a timer to beat
 * the machine's load. A case's end timer asks whether the socket of its
 * receiving handle still holds something that libuv is to read (a
 * datagram, an error-queue report or a pending socket error), or whether
 * the case still has a step to take (a paced send, a resume); while so,
 * it looks again a little later, up to a generous bound, and counts the
 * loop iterations it added so that a bound on iterations leaves them out.
 * A loaded machine then delays a case but does not change its counts.
 * A socket that stays readable while libuv hands nothing over is not
 * waited for to the bound: each look follows a poll of the loop, and a
 * loop that read nothing of it over SETTLE_STALL_LOOKS polls in a row
 * will not read it (a defect the case judges).
 * POSIX (poll()); the including file guards it where that is missing.
 */

#ifndef UVPATCH_SETTLE_H_
#define UVPATCH_SETTLE_H_

#include <poll.h>

#include "uv.h"

/* How often the end looks again, and for how long at most. */
#define SETTLE_STEP_MS 20
#define SETTLE_MAX_MS 5000
#define SETTLE_STALL_LOOKS 10

/* What the end saw at its last look: the callbacks that handed something
 * over, and the looks in a row that found no new one.
 */
typedef struct {
  long delivered;
  int stalls;
} settle_state;

/* Nonzero when fd holds a datagram, a report or a socket error: what a
 * receiving handle reads in its next readable event.
 */
static int fd_pending(int fd) {
  struct pollfd p;

  if (fd < 0)
    return 0;
  p.fd = fd;
  p.events = POLLIN;
  p.revents = 0;
  return poll(&p, 1, 0) == 1 && (p.revents & (POLLIN | POLLERR)) != 0;
}

/* Nonzero while fd holds something libuv is to read and libuv handed
 * something over since a recent look: `delivered` counts the recv_cb
 * calls other than empty reads.
 */
static int fd_pending_read(int fd, long delivered, settle_state* s) {
  if (!fd_pending(fd))
    return 0;
  if (delivered != s->delivered) {
    s->delivered = delivered;
    s->stalls = 0;
    return 1;
  }
  return ++s->stalls < SETTLE_STALL_LOOKS;
}

/* Called first thing by an end timer: when busy (the case has more to
 * read or do), re-arms the timer with cb and returns 1, at most
 * SETTLE_MAX_MS / SETTLE_STEP_MS times (*waits counts them); else returns
 * 0 and the run ends.
 */
static int settle_more(uv_timer_t* end, uv_timer_cb cb, long* waits,
                       int busy) {
  if (!busy || *waits >= SETTLE_MAX_MS / SETTLE_STEP_MS)
    return 0;
  (*waits)++;
  uv_timer_start(end, cb, SETTLE_STEP_MS, 0);
  return 1;
}

#endif  /* UVPATCH_SETTLE_H_ */
