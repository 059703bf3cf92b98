/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * An error that every plain read returns: a security module's EACCES, say,
 * or a program's own interposed read, on a socket that stays readable.
 * The patched libuv reads on past an error that an ICMP error sets, but
 * the read that returns the socket error clears it, so a second error in
 * a row is not a new ICMP error: it ends the event. Each loop iteration
 * then costs at most 2 reads (upstream makes 1), not the 32 of the
 * receive budget, every buffer that alloc_cb gave comes back once, and
 * the loop goes on running its other handles: a timer fires.
 *
 * The program's recvmsg() and recvmmsg() (loop.c) fail every plain read
 * of the handle with the case's errno, until the timer has fired
 * FIRES times and INJECTED_ITERS iterations have run; then the datagram
 * that kept the socket readable comes through.
 */

#include "udp_errqueue.h"

#ifdef __linux__

#include <poll.h>

/* The timer's period and the fires that the injection lasts for. */
#define TICK_MS 10
#define FIRES 3
/* Loop iterations the injection lasts for at least. */
#define INJECTED_ITERS 100
/* The fires after which the case gives up waiting for the datagram. */
#define GIVE_UP_FIRES 500
/* Reads a loop iteration may make: the error, and the one after it. */
#define READS_BOUND 2
/* Buffers alloc_cb may have out at once: one per read of an event. */
#define MAX_OUT 64

static struct {
  uv_check_t check;
  int uv_err;
  /* Buffers that alloc_cb gave and recv_cb did not give back yet. */
  char* out[MAX_OUT];
  int nout;
  long allocs;
  long given_back;
  long back_unknown;  /* Given back twice, or never given. */
  long out_overflow;
  /* What recv_cb saw. */
  long errors;
  long other_errors;
  long datagrams;
  /* Loop iterations whose reads all failed, and their reads. */
  long injected_iters;
  long last_reads;
  long min_reads;
  long max_reads;
  long reads_in_injection;
  long iters_at[3];  /* Iterations with 0, 1, 2 reads. */
  long fires;
  long fires_injecting;
} rp;

static void rp_alloc(uv_handle_t* handle, size_t size, uv_buf_t* buf) {
  /* In recvmmsg mode, room for several datagrams per call. */
  if (uv_udp_using_recvmmsg((uv_udp_t*) handle))
    size *= 8;
  buf->base = malloc(size);
  buf->len = buf->base == NULL ? 0 : size;
  rp.allocs++;
  if (buf->base == NULL)
    return;
  if (rp.nout == MAX_OUT)
    rp.out_overflow++;
  else
    rp.out[rp.nout++] = buf->base;
}


/* Takes base off the buffers out; counts one that was not out. */
static void give_back(char* base) {
  int i;

  for (i = 0; i < rp.nout; i++)
    if (rp.out[i] == base) {
      rp.out[i] = rp.out[--rp.nout];
      rp.given_back++;
      free(base);
      return;
    }
  rp.back_unknown++;
}


static void rp_recv(uv_udp_t* handle,
                    ssize_t nread,
                    const uv_buf_t* buf,
                    const struct sockaddr* addr,
                    unsigned flags) {
  (void) handle;
  (void) addr;
  if (nread > 0)
    rp.datagrams++;
  else if (nread == rp.uv_err)
    rp.errors++;
  else if (nread < 0)
    rp.other_errors++;
  /* A chunk lies in the batch's buffer, which comes back after it. */
  if (!(flags & UV_UDP_MMSG_CHUNK) && buf != NULL && buf->base != NULL)
    give_back(buf->base);
}


/* After each iteration's poll phase: the reads it made. fail_errno only
 * changes in the timer, which runs before the poll phase, so a set
 * fail_errno here means every plain read of this iteration failed.
 */
static void rp_check(uv_check_t* check) {
  long reads;

  (void) check;
  reads = plain_reads - rp.last_reads;
  rp.last_reads = plain_reads;
  if (fail_errno == 0)
    return;
  if (rp.injected_iters == 0 || reads < rp.min_reads)
    rp.min_reads = reads;
  if (reads > rp.max_reads)
    rp.max_reads = reads;
  if (reads < 3)
    rp.iters_at[reads]++;
  rp.reads_in_injection += reads;
  rp.injected_iters++;
}


static void rp_timer(uv_timer_t* timer) {
  rp.fires++;
  if (fail_errno != 0) {
    rp.fires_injecting++;
    if ((rp.fires_injecting >= FIRES &&
         rp.injected_iters >= INJECTED_ITERS) ||
        rp.fires >= GIVE_UP_FIRES)
      fail_errno = 0;
    return;
  }
  if (rp.datagrams > 0 || rp.fires >= GIVE_UP_FIRES) {
    uv_timer_stop(timer);
    close_handles(&ctx.loop);
  }
}


static int repeated_error(int err, int mmsg, const char* name) {
  struct sockaddr_storage pa;
  int peer;
  int fd;
  int r;

  CHECK_UV(setup_ex(AF_INET, 0, mmsg ? UV_UDP_RECVMMSG : 0));
  if (mmsg && !uv_udp_using_recvmmsg(&ctx.udp))
    SKIP("recvmmsg is not supported here (uv_udp_using_recvmmsg)");
  memset(&rp, 0, sizeof(rp));
  rp.uv_err = uv_translate_sys_error(err);
  CHECK_UV(uv_check_init(&ctx.loop, &rp.check));
  CHECK_UV(uv_check_start(&rp.check, rp_check));
  CHECK_UV(uv_udp_recv_start(&ctx.udp, rp_alloc, rp_recv));
  fd = udp_fd(&ctx.udp);
  peer = bound_socket(AF_INET, &pa);
  CHECK_GE(peer, 0);
  /* The datagram keeps the socket readable while the reads fail. */
  CHECK_EQ(send_numbered(peer, 0, 1), 0);
  close(peer);
  CHECK_EQ(wait_for(fd, POLLIN), 0);
  fail_fd = fd;
  fail_errno = err;
  plain_reads = 0;
  CHECK_UV(uv_timer_start(&ctx.timer, rp_timer, TICK_MS, TICK_MS));
  uv_run(&ctx.loop, UV_RUN_DEFAULT);
  fail_fd = -1;
  fail_errno = 0;
  r = uv_loop_close(&ctx.loop);
  fprintf(stderr, "# %s: %ld iterations with every read failing: reads per "
          "iteration min %ld max %ld (%ld in all; iterations with 0/1/2 "
          "reads: %ld/%ld/%ld); %ld %s errors, %ld others; timer fired %ld "
          "times meanwhile; alloc_cb %ld, given back %ld, unknown %ld, "
          "still out %d; datagrams %ld\n", name, rp.injected_iters,
          rp.min_reads, rp.max_reads, rp.reads_in_injection, rp.iters_at[0],
          rp.iters_at[1], rp.iters_at[2], rp.errors, uv_err_name(rp.uv_err),
          rp.other_errors, rp.fires_injecting, rp.allocs, rp.given_back,
          rp.back_unknown, rp.nout, rp.datagrams);

  CHECK_EQ(r, 0);
  if (rp.max_reads > READS_BOUND)
    FAIL("%ld reads in one loop iteration of an error that every read "
         "returns (%s): a repeated error is not a new ICMP error, at most "
         "%d", rp.max_reads, uv_err_name(rp.uv_err), READS_BOUND);
  if (rp.fires_injecting < FIRES || rp.injected_iters < INJECTED_ITERS)
    FAIL("the timer fired %ld times in %ld iterations with every read "
         "failing", rp.fires_injecting, rp.injected_iters);
  /* Every iteration handed over its error: the handle stays polled. */
  if (rp.errors < rp.injected_iters || rp.other_errors != 0)
    FAIL("%ld %s errors and %ld others in %ld iterations", rp.errors,
         uv_err_name(rp.uv_err), rp.other_errors, rp.injected_iters);
  if (rp.nout != 0 || rp.back_unknown != 0 || rp.out_overflow != 0 ||
      rp.given_back != rp.allocs)
    FAIL("alloc_cb gave %ld buffers: %ld given back, %d never, %ld not "
         "given or twice (%ld more than %d out at once)", rp.allocs,
         rp.given_back, rp.nout, rp.back_unknown, rp.out_overflow, MAX_OUT);
  if (rp.datagrams != 1)
    FAIL("%ld datagrams once the reads work again, not 1", rp.datagrams);
  return CASE_OK;
}

#endif  /* __linux__ */

#ifndef __linux__
# define REPEATED_ERROR_CASE(name, err, mmsg)                                 \
  int case_##name(void) {                                                     \
    SKIP(LINUX_ONLY);                                                         \
  }
#else
# define REPEATED_ERROR_CASE(name, err, mmsg)                                 \
  int case_##name(void) {                                                     \
    return repeated_error(err, mmsg, #name);                                  \
  }
#endif

REPEATED_ERROR_CASES(REPEATED_ERROR_CASE)
