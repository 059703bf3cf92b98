/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * Flooding children: the cases that flood a socket do it from a forked
 * process, as a peer would, that shares the socket where it must (ICMP
 * errors go to the socket that sent). A child must never outlive its
 * case, nor make it wait for ever. Linux only (prctl()).
 */

#ifndef UVPATCH_CHILD_H_
#define UVPATCH_CHILD_H_

#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dgram.h"

/* Forks a child that runs fn(arg) and exits. The child dies with its
 * parent and, as a backstop, after limit_s seconds. Returns the pid or -1.
 */
static pid_t spawn(void (*fn)(void*), void* arg, unsigned limit_s) {
  pid_t pid;

  fflush(stdout);
  fflush(stderr);
  pid = fork();
  if (pid != 0)
    return pid;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  alarm(limit_s);
  fn(arg);
  _exit(0);
  return 0;
}


/* Waits up to wait_ms for the child to end by itself, then kills it.
 * Returns 1 if it ended by itself with status 0, else 0.
 */
static int reap(pid_t pid, unsigned wait_ms) {
  uint64_t deadline;
  pid_t r;
  int status;

  if (pid <= 0)
    return 0;
  deadline = now_ms() + wait_ms;
  for (;;) {
    r = waitpid(pid, &status, WNOHANG);
    if (r == pid)
      return WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (r < 0 || now_ms() >= deadline)
      break;
    usleep(10000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return 0;
}

#endif  /* UVPATCH_CHILD_H_ */
