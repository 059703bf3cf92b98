/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The loop every case of udp_errqueue runs, and what it counts.
 */

#include "udp_errqueue.h"

#ifdef __linux__

/* Reads of the error queue made in this process, libuv's included: the
 * program defines recvmsg() and recvmmsg(), which the static libuv it is
 * linked with calls, counts the calls with MSG_ERRQUEUE and passes every
 * call on to the C library. The plain reads of fail_fd are counted too,
 * and fail with fail_errno while it is set: an error that every read
 * returns, as a security module's EACCES would.
 */
static long errqueue_reads;
int fail_fd = -1;
int fail_errno;
long plain_reads;

/* Counts a read; returns 1 when it is to fail with fail_errno. */
static int read_fails(int fd, int flags) {
  if (flags & MSG_ERRQUEUE) {
    errqueue_reads++;
    return 0;
  }
  if (fd != fail_fd)
    return 0;
  plain_reads++;
  if (fail_errno == 0)
    return 0;
  errno = fail_errno;
  return 1;
}

ssize_t recvmsg(int fd, struct msghdr* msg, int flags) {
  if (read_fails(fd, flags))
    return -1;
  return libc_recvmsg(fd, msg, flags);
}

int recvmmsg(int fd,
             struct mmsghdr* msgs,
             unsigned int n,
             int flags,
             struct timespec* timeout) {
  if (read_fails(fd, flags))
    return -1;
  return libc_recvmmsg(fd, msgs, n, flags, timeout);
}

ctx_t ctx;

static void on_alloc(uv_handle_t* handle, size_t size, uv_buf_t* buf) {
  ctx.alloc_calls++;
  if (ctx.stopped)
    ctx.calls_after_stop++;
  /* In recvmmsg mode, room for several datagrams per call. */
  if (uv_udp_using_recvmmsg((uv_udp_t*) handle))
    size *= 8;
  buf->base = malloc(size);
  buf->len = buf->base == NULL ? 0 : size;
  ctx.alloc_base = buf->base;
  ctx.alloc_len = buf->len;
}

static void on_udp_close(uv_handle_t* handle) {
  (void) handle;
  ctx.udp_closed = 1;
}

static void close_all(void) {
  close_once(&ctx.udp, on_udp_close);
  close_handles(&ctx.loop);
}

void format_list(char* out, size_t size, const long* v, int n) {
  size_t used;
  int i;

  used = 0;
  out[0] = '\0';
  for (i = 0; i < n && used + 12 < size; i++)
    used += (size_t) snprintf(out + used, size - used, "%s%ld",
                              i ? " " : "", v[i]);
}

/* Counts (and takes off) the reports still on the error queue. */
static long count_queued_reports(void) {
  int fd;

  fd = udp_fd(&ctx.udp);
  return fd < 0 ? -1 : take_errqueue(fd, 100000);
}

static void on_timer(uv_timer_t* timer) {
  int busy;

  /* Under load the end may come before libuv read what the case queued,
   * or before the last paced send: then wait for it (settle.h).
   */
  busy = uv_is_active((uv_handle_t*) &ctx.pace) ||
         (ctx.receiving && !ctx.stopped &&
          fd_pending_read(udp_fd(&ctx.udp),
                          ctx.recv_calls - ctx.empty_reads,
                          &ctx.settle));
  if (settle_more(timer, on_timer, &ctx.waits, busy))
    return;
  ctx.errqueue_reads = errqueue_reads;
  ctx.left_queued = count_queued_reports();
  close_all();
}

/* One diagnostic line on stderr per case: what the loop did. */
void note(const char* name) {
  char data[256];
  char reps[256];

  format_list(data, sizeof(data), ctx.data_per_iter, ctx.data_iters);
  format_list(reps, sizeof(reps), ctx.reports_per_iter, ctx.report_iters);
  fprintf(stderr,
          "# %s: iterations=%ld recv_calls=%ld empty=%ld datagrams=%ld "
          "reports=%ld (first nread %ld) plain_errors=%ld alloc=%ld "
          "sends=%ld (ok %ld, refused %ld) errqueue_reads=%ld "
          "left_queued=%ld data/iter=[%s] reports/iter=[%s] waits=%ld "
          "unflagged=%ld (first nread %ld)\n",
          name, ctx.iterations, ctx.recv_calls, ctx.empty_reads,
          ctx.datagrams, ctx.reports, (long) ctx.report_nread,
          ctx.plain_errors, ctx.alloc_calls, ctx.sends.cbs, ctx.sends.ok,
          ctx.sends.refused, ctx.errqueue_reads, ctx.left_queued, data, reps,
          ctx.waits, ctx.unflagged, ctx.unflagged_nread);
}

static void on_check(uv_check_t* check) {
  (void) check;
  ctx.iterations++;
  if (ctx.data_this_iter > 0 && ctx.data_iters < MAX_ITER)
    ctx.data_per_iter[ctx.data_iters++] = ctx.data_this_iter;
  if (ctx.reports_this_iter > 0 && ctx.report_iters < MAX_ITER)
    ctx.reports_per_iter[ctx.report_iters++] = ctx.reports_this_iter;
  ctx.data_this_iter = 0;
  ctx.reports_this_iter = 0;
}

/* A report's nread for a closed port, in either form: the sign is
 * negative_nread's to judge (upstream hands over 4294967185).
 */
int is_refused(ssize_t nread) {
  return nread == UV_ECONNREFUSED ||
         nread == (ssize_t) (unsigned) UV_ECONNREFUSED;
}

/* Report offenders are 127.0.1.x: x - 1 is the report's index. */
static int offender_index(const struct sockaddr* addr) {
  const struct sockaddr_in* sin;
  unsigned long a;

  if (addr == NULL || addr->sa_family != AF_INET)
    return -1;
  sin = (const struct sockaddr_in*) addr;
  a = ntohl(sin->sin_addr.s_addr);
  if ((a & 0xffffff00UL) != 0x7f000100UL)
    return -1;
  return (int) (a & 0xff) - 1;
}

static void on_report(ssize_t nread,
                      const uv_buf_t* buf,
                      const struct sockaddr* addr,
                      unsigned flags) {
  int i;

  if (ctx.reports == 0) {
    ctx.report_nread = nread;
    ctx.report_flags = flags;
    ctx.report_allocs = ctx.alloc_calls;
    ctx.report_buf_null = buf == NULL || buf->base == NULL;
    ctx.report_buf_in_alloc =
        !ctx.report_buf_null && ctx.alloc_base != NULL &&
        buf->base >= ctx.alloc_base &&
        buf->base + buf->len <= ctx.alloc_base + ctx.alloc_len &&
        buf->len > 0;
    ctx.report_has_addr = addr != NULL;
    if (addr != NULL)
      memcpy(&ctx.report_addr,
             addr,
             addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                         : sizeof(struct sockaddr_in));
  }
  ctx.reports++;
  ctx.reports_this_iter++;
  if (ctx.report_seen != NULL) {
    i = offender_index(addr);
    if (i < 0 || i >= ctx.report_expected || !is_refused(nread))
      ctx.report_bad++;
    else if (ctx.report_seen[i])
      ctx.report_dup++;
    else
      ctx.report_seen[i] = 1;
  }
}

static void on_recv(uv_udp_t* handle,
                    ssize_t nread,
                    const uv_buf_t* buf,
                    const struct sockaddr* addr,
                    unsigned flags) {
  unsigned seq;

  ctx.recv_calls++;
  if (ctx.stopped)
    ctx.calls_after_stop++;
  if (ctx.udp_closed || uv_is_closing((uv_handle_t*) handle))
    ctx.calls_after_close++;

  if (flags & UV_UDP_MMSG_FREE) {
    free(buf->base);
    return;
  }

  /* A report is told by its flag, whatever nread says: upstream hands
   * reports over with a positive nread.
   */
  if (flags & UV_UDP_LINUX_RECVERR) {
    on_report(nread, buf, addr, flags);
  } else if (nread > 0 && nread != (ssize_t) sizeof(seq)) {
    /* Not one of the cases' datagrams, which are 4 bytes: in recvmmsg
     * mode, a TX timestamp whose IP_RECVERR control message did not fit
     * libuv's 64 bytes a message, so that it comes without the flag.
     */
    if (ctx.unflagged++ == 0)
      ctx.unflagged_nread = (long) nread;
  } else if (nread > 0) {
    ctx.datagrams++;
    ctx.data_this_iter++;
    if (ctx.data_seen != NULL && nread >= 4) {
      memcpy(&seq, buf->base, sizeof(seq));
      if (seq < (unsigned) ctx.data_expected) {
        if (ctx.data_seen[seq])
          ctx.data_dup++;
        ctx.data_seen[seq] = 1;
      }
    }
  } else if (nread == 0) {
    ctx.empty_reads++;
  } else {
    if (ctx.plain_errors == 0)
      ctx.plain_err = (long) nread;
    ctx.plain_errors++;
    ctx.plain_other +=
        nread != (ctx.plain_code != 0 ? ctx.plain_code : UV_ECONNREFUSED);
  }

  if (buf != NULL && buf->base != NULL && !(flags & UV_UDP_MMSG_CHUNK))
    free(buf->base);

  if ((nread < 0 || (flags & UV_UDP_LINUX_RECVERR)) &&
      ctx.close_on_first_error && !uv_is_closing((uv_handle_t*) handle))
    close_all();
}

/* Starts receiving on the case's handle, with the callbacks above. */
int recv_start(void) {
  ctx.receiving = 1;
  return uv_udp_recv_start(&ctx.udp, on_alloc, on_recv);
}

/* The run's timers and the check handle that counts iterations. */
int setup_timers(void) {
  int r;

  r = uv_timer_init(&ctx.loop, &ctx.timer);
  if (r == 0)
    r = uv_timer_init(&ctx.loop, &ctx.pace);
  if (r == 0)
    r = uv_check_init(&ctx.loop, &ctx.check);
  if (r == 0)
    r = uv_check_start(&ctx.check, on_check);
  return r;
}

int setup_ex(int family, unsigned bind_flags, unsigned init_flags) {
  struct sockaddr_storage ss;
  int r;

  /* The ICMP rate limit of a namespace of its own; without one, the case
   * goes on in the machine's.
   */
  private_netns_once();
  memset(&ctx, 0, sizeof(ctx));
  memset(&ss, 0, sizeof(ss));
  /* From here: a case may run loop iterations before run_and_close(). */
  errqueue_reads = 0;
  if (family == AF_INET6)
    r = uv_ip6_addr("::1", 0, (struct sockaddr_in6*) &ss);
  else
    r = uv_ip4_addr("127.0.0.1", 0, (struct sockaddr_in*) &ss);
  if (r != 0)
    return r;
  r = uv_loop_init(&ctx.loop);
  if (r != 0)
    return r;
  r = uv_udp_init_ex(&ctx.loop, &ctx.udp, (unsigned) family | init_flags);
  if (r == 0)
    r = uv_udp_bind(&ctx.udp, (const struct sockaddr*) &ss, bind_flags);
  if (r == 0)
    r = setup_timers();
  return r;
}

int setup(int family, unsigned bind_flags) {
  return setup_ex(family, bind_flags, 0);
}

/* Runs the loop until the timer closes everything, then closes the loop.
 * Returns what uv_loop_close() returned.
 */
int run_and_close(void) {
  uv_timer_start(&ctx.timer, on_timer, RUN_MS, 0);
  uv_run(&ctx.loop, UV_RUN_DEFAULT);
  /* The iterations of the end's waits are the machine's, not libuv's. */
  ctx.iterations -= ctx.waits;
  return uv_loop_close(&ctx.loop);
}

/* Sends PACED_SENDS datagrams through libuv, PACE_MS apart, so that each
 * ICMP error arrives in a loop iteration of its own.
 */
static void on_pace(uv_timer_t* timer) {
  uv_buf_t buf;
  int r;

  buf = uv_buf_init("paced", 5);
  r = uv_udp_try_send(&ctx.udp,
                      &buf,
                      1,
                      ctx.pace_connected
                          ? NULL
                          : (const struct sockaddr*) &ctx.pace_dst);
  if (r == UV_ECONNREFUSED) {
    /* A socket error still pending: the send consumed it. */
    ctx.sends.refused++;
    r = uv_udp_try_send(&ctx.udp,
                        &buf,
                        1,
                        ctx.pace_connected
                            ? NULL
                            : (const struct sockaddr*) &ctx.pace_dst);
  }
  if (r != 5)
    ctx.pace_failed = r;
  if (++ctx.paced == PACED_SENDS)
    uv_timer_stop(timer);
}

int start_paced_sends(int connected) {
  int r;

  r = closed_port(AF_INET, &ctx.pace_dst);
  if (r != 0)
    return UV_EADDRNOTAVAIL;
  ctx.pace_connected = connected;
  if (connected) {
    r = uv_udp_connect(&ctx.udp, (const struct sockaddr*) &ctx.pace_dst);
    if (r != 0)
      return r;
  }
  return uv_timer_start(&ctx.pace, on_pace, PACE_MS / 2, PACE_MS);
}

/* One report queued on a receiving RECVERR handle of the family, then the
 * loop runs for RUN_MS.
 */
int run_one_report(int family, const char* name) {
  struct sockaddr_storage dst;
  int r;

  CHECK_UV(setup(family, UV_UDP_LINUX_RECVERR));
  CHECK_UV(recv_start());
  CHECK_EQ(closed_port(family, &dst), 0);
  CHECK_EQ(send_for_report(udp_fd(&ctx.udp), &dst), 0);
  r = run_and_close();
  note(name);
  if (r != 0)
    FAIL("uv_loop_close: %s", uv_strerror(r));
  return CASE_OK;
}

#endif  /* __linux__ */
