/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The loop of a case, its handle and callbacks.
 */

#include "udp_matrix.h"

#ifdef __linux__

mctx mc;

/* The namespace a case ran in, and its ICMP limits. */
int in_netns;
const char* ratelimit = "unknown";

/* Moves into a private network namespace (netns.h, which lifts the ICMP
 * rate limits), and puts the kernel's default limits back unless lift.
 * Outside one (no privilege), the case runs with the machine's limits.
 */
void enter_netns(int lift) {
  in_netns = private_netns() == 0;
  if (in_netns && !lift)
    default_icmp_limits();
  ratelimit = icmp_ratelimit();
}

/* The namespace's count of ICMP destination unreachables received, from
 * /proc/net/snmp (IPv4) or /proc/net/snmp6 (IPv6); -1 if unknown.
 */
long icmp_received(int family) {
  char line[2048];
  FILE* f;
  long r;

  if (family != AF_INET6)
    return snmp_counter("Icmp:", "InDestUnreachs");
  f = fopen("/proc/net/snmp6", "r");
  if (f == NULL)
    return -1;
  r = -1;
  while (fgets(line, sizeof(line), f) != NULL)
    if (sscanf(line, "Icmp6InDestUnreachs %ld", &r) == 1)
      break;
  fclose(f);
  return r;
}

/* The peer: sends n numbered datagrams from port P to the handle, closes
 * P, and has the handle send `errors` datagrams to P. Returns 0 or -1.
 */
int peer_act(int n, int errors) {
  char payload[4];
  int fd;
  int i;

  for (i = 0; i < n; i++) {
    put_seq(payload, (unsigned long) i);
    if (sendto(mc.peer, payload, sizeof(payload), 0,
               (struct sockaddr*) &mc.me, addr_len(&mc.me)) !=
        (ssize_t) sizeof(payload))
      return -1;
    mc.datagrams_sent++;
  }
  close(mc.peer);
  mc.peer = -1;
  fd = udp_fd(&mc.udp);
  mc.icmp_before = icmp_received(mc.family);
  for (i = 0; i < errors; i++)
    if (send_for_report(fd, &mc.peer_addr) != 0)
      return -1;
  return 0;
}

/* Notes the first thing that failed inside the loop. */
static void loop_error(const char* fmt, ...) {
  va_list ap;

  va_start(ap, fmt);
  harness_note_first(mc.loop_err, sizeof(mc.loop_err), fmt, ap);
  va_end(ap);
}

static void give_back(char* p) {
  if (p == NULL)
    return;
  mc.lent--;
  if (p == mc.slab)
    mc.slab = NULL;
  if (mc.spare == NULL)
    mc.spare = p;
  else
    free(p);
}

static void on_alloc(uv_handle_t* handle, size_t suggested, uv_buf_t* buf) {
  size_t len;

  (void) suggested;
  mc.alloc_calls++;
  if (mc.watch.closed)
    mc.allocs_after_close++;
  if (mc.stopped)
    mc.calls_while_stopped++;
  len = uv_udp_using_recvmmsg((uv_udp_t*) handle)
            ? (size_t) MMSG_CHUNKS * DGRAM_MAX
            : DGRAM_MAX;
  if (mc.spare != NULL) {
    buf->base = mc.spare;
    mc.spare = NULL;
  } else {
    buf->base = malloc(len);
  }
  buf->len = buf->base == NULL ? 0 : len;
  if (buf->base == NULL)
    return;
  mc.lent++;
  if (uv_udp_using_recvmmsg((uv_udp_t*) handle))
    mc.slab = buf->base;
}

static void close_all(void) {
  if (!uv_is_closing((uv_handle_t*) &mc.udp))
    close_watched((uv_handle_t*) &mc.udp, &mc.watch);
  close_handles(&mc.loop);
}

/* Takes off and counts what is still queued on the socket: reports on the
 * error queue, datagrams on the receive queue.
 */
static void count_left(void) {
  char payload[64];
  int fd;
  int n;

  if (mc.watch.closed || (fd = udp_fd(&mc.udp)) < 0)
    return;
  mc.left_reports += take_errqueue(fd, 1000000);
  /* A pending socket error fails one read without taking a datagram. */
  for (n = 0; n < 1000000; n++)
    if (recv(fd, payload, sizeof(payload), MSG_DONTWAIT) >= 0)
      mc.left_datagrams++;
    else if (errno != ECONNREFUSED && errno != EINTR)
      break;
}

static void on_end(uv_timer_t* timer) {
  int busy;

  /* Under load the end may come before libuv read what the case sent, or
   * before a stopped handle's restart: then wait for it. The send-only
   * handle never reads, and the flood judges its tail by time.
   */
  busy = !mc.watch.closed && mc.cell->kind != KIND_SEND_ONLY &&
         mc.cell->kind != KIND_FLOOD &&
         (mc.stopped ||
          fd_pending_read(udp_fd(&mc.udp),
                          mc.reports + mc.datagrams + mc.plain_errors,
                          &mc.settle));
  if (settle_more(timer, on_end, &mc.waits, busy))
    return;
  /* What libuv did, before our own reads. */
  mc.reads_of_errqueue = errqueue_reads;
  mc.injected = injected;
  inject_errno = 0;
  count_left();
  close_all();
}

static void on_check(uv_check_t* check) {
  (void) check;
  mc.iterations++;
  if (mc.this_iter_any == 0)
    mc.idle_iterations++;
  if (mc.this_iter > mc.max_per_iter)
    mc.max_per_iter = mc.this_iter;
  if (mc.this_iter_reports > mc.max_reports_per_iter)
    mc.max_reports_per_iter = mc.this_iter_reports;
  if (mc.this_iter > 0 && mc.nlisted < MAX_LISTED)
    mc.listed[mc.nlisted++] = mc.this_iter;
  if (mc.flood != NULL && !mc.tail && mc.flood->done)
    mc.tail = 1;
  else if (mc.tail) {
    mc.tail_iterations++;
    if (mc.this_iter_any == 0)
      mc.tail_idle++;
  }
  mc.this_iter = 0;
  mc.this_iter_reports = 0;
  mc.this_iter_any = 0;
  /* recvmmsg: a batch cut short by uv_udp_recv_stop() gives no
   * UV_UDP_MMSG_FREE; its buffer is ours again.
   */
  if (mc.stopped && mc.slab != NULL)
    give_back(mc.slab);
}

static void on_recv(uv_udp_t* handle,
                    ssize_t nread,
                    const uv_buf_t* buf,
                    const struct sockaddr* addr,
                    unsigned flags);

static void on_resume(uv_timer_t* timer) {
  int r;

  (void) timer;
  mc.stopped = 0;
  r = uv_udp_recv_start(&mc.udp, on_alloc, on_recv);
  if (r != 0)
    loop_error("uv_udp_recv_start: %s", uv_strerror(r));
}

/* The stop and close cases act on the first callback that hands
 * something over.
 */
static void act(uv_udp_t* handle, int report) {
  int r;

  mc.acted = 1;
  mc.first_was_report = report;
  if (mc.cell->kind == KIND_STOP) {
    r = uv_udp_recv_stop(handle);
    if (r != 0)
      loop_error("uv_udp_recv_stop: %s", uv_strerror(r));
    mc.stopped = 1;
    if (uv_udp_using_recvmmsg(handle) && batch_seen > 0)
      mc.batch_rest = batch_size - batch_seen;
    uv_timer_start(&mc.resume, on_resume, RESUME_MS, 0);
  } else {
    if (uv_udp_using_recvmmsg(handle) && batch_seen > 0)
      mc.batch_rest = batch_size - batch_seen;
    close_watched((uv_handle_t*) handle, &mc.watch);
  }
}

static void on_recv(uv_udp_t* handle,
                    ssize_t nread,
                    const uv_buf_t* buf,
                    const struct sockaddr* addr,
                    unsigned flags) {
  unsigned long seq;
  int was_closed;
  int report;

  (void) addr;
  was_closed = mc.watch.closed;
  if (mc.stopped && !(flags & UV_UDP_MMSG_FREE))
    mc.calls_while_stopped++;

  if (flags & UV_UDP_MMSG_FREE) {
    if (mc.stopped)
      mc.frees_while_stopped++;
    if (was_closed)
      mc.frees_after_close++;
    give_back(buf->base);
    return;
  }
  if (flags & UV_UDP_MMSG_CHUNK) {
    batch_seen++;
    if (was_closed)
      mc.chunks_after_close++;
  } else if (was_closed) {
    mc.others_after_close++;
  }

  report = 0;
  if (flags & UV_UDP_LINUX_RECVERR) {
    /* A report is told by its flag: upstream gives it a positive nread. */
    report = 1;
    if (mc.reports == 0)
      mc.first_report_nread = (long) nread;
    mc.reports++;
    if (nread != UV_ECONNREFUSED)
      mc.bad_nread++;
    mc.this_iter_reports++;
    mc.this_iter_any++;
  } else if (nread > 0) {
    mc.datagrams++;
    mc.this_iter++;
    mc.this_iter_any++;
    if (nread >= 4 && mc.seen != NULL) {
      seq = get_seq(buf->base);
      if (seq < (unsigned long) mc.seen_len) {
        if (mc.seen[seq])
          mc.dups++;
        mc.seen[seq] = 1;
      }
    }
  } else if (nread < 0) {
    if (mc.plain_errors == 0)
      mc.first_plain_error = (int) nread;
    mc.plain_errors++;
    if (nread == UV_ECONNREFUSED)
      mc.plain_refused++;
    if (nread == UV_ECONNREFUSED && refused_state == REFUSED_NO_REPORT)
      mc.plain_no_report++;
    else if (nread == UV_ENOMEM)
      mc.plain_enomem++;
    mc.this_iter_any++;
  } else {
    mc.empty_reads++;
  }

  if (!(flags & UV_UDP_MMSG_CHUNK) && buf != NULL)
    give_back(buf->base);

  /* A stop acts at the first report, so that every tree is cut at the same
   * place: the first callback may be a plain error, outside any batch. A
   * close acts at the first callback that hands something over.
   */
  if (!mc.acted && !was_closed &&
      ((mc.cell->kind == KIND_STOP && report) ||
       (mc.cell->kind == KIND_CLOSE && (report || nread != 0))))
    act(handle, report);
}

/* Starts receiving on the case's handle, with the callbacks above. */
int recv_start(void) {
  return uv_udp_recv_start(&mc.udp, on_alloc, on_recv);
}

/* 50 ms into the run: the peer sends and closes, the errors come back. */
void on_go(uv_timer_t* timer) {
  (void) timer;
  if (peer_act(mc.datagrams_to_send, mc.errors_to_send) != 0)
    loop_error("the peer's sends: %s", strerror(errno));
  if (mc.cell->kind == KIND_ENOMEM)
    inject_errno = ENOMEM;
}

/* The loop, the handle (bound or opened, connected to the peer or not),
 * the peer's socket at port P, the timers and the check handle.
 */
int setup(const cell_t* c) {
  struct sockaddr_storage ss;
  unsigned init_flags;
  socklen_t len;
  int namelen;
  int level;
  int name;
  int yes;
  int fd;

  memset(&mc, 0, sizeof(mc));
  mc.cell = c;
  mc.family = c->ipv6 ? AF_INET6 : AF_INET;
  mc.recverr = c->sock == MX_BOUND_FLAG || c->sock == MX_OPEN_RECVERR;
  mc.peer = -1;
  mc.icmp_before = -1;
  init_flags = c->mmsg ? UV_UDP_RECVMMSG : 0;
  loopback_addr(mc.family, &ss);
  CHECK_UV(uv_loop_init(&mc.loop));
  if (c->sock == MX_BOUND_FLAG || c->sock == MX_BOUND_NOFLAG) {
    CHECK_UV(uv_udp_init_ex(&mc.loop,
                            &mc.udp,
                            (unsigned) mc.family | init_flags));
    CHECK_UV(uv_udp_bind(&mc.udp,
                         (const struct sockaddr*) &ss,
                         c->sock == MX_BOUND_FLAG ? UV_UDP_LINUX_RECVERR
                                                  : 0));
  } else {
    /* The owner makes the socket, sets the option or not, binds it. */
    fd = socket(mc.family, SOCK_DGRAM, 0);
    CHECK_GE(fd, 0);
    if (c->sock == MX_OPEN_RECVERR) {
      level = c->ipv6 ? IPPROTO_IPV6 : IPPROTO_IP;
      name = c->ipv6 ? IPV6_RECVERR : IP_RECVERR;
      yes = 1;
      CHECK_EQ(setsockopt(fd, level, name, &yes, sizeof(yes)), 0);
    }
    CHECK_EQ(bind(fd, (struct sockaddr*) &ss, addr_len(&ss)), 0);
    CHECK_UV(uv_udp_init_ex(&mc.loop, &mc.udp, AF_UNSPEC | init_flags));
    CHECK_UV(uv_udp_open(&mc.udp, fd));
  }
  if (c->mmsg && !uv_udp_using_recvmmsg(&mc.udp))
    SKIP("recvmmsg is not supported here (uv_udp_using_recvmmsg)");
  namelen = sizeof(mc.me);
  CHECK_UV(uv_udp_getsockname(&mc.udp, (struct sockaddr*) &mc.me, &namelen));

  mc.peer = socket(mc.family, SOCK_DGRAM, 0);
  CHECK_GE(mc.peer, 0);
  loopback_addr(mc.family, &mc.peer_addr);
  CHECK(bind(mc.peer, (struct sockaddr*) &mc.peer_addr,
             addr_len(&mc.peer_addr)) == 0);
  len = sizeof(mc.peer_addr);
  CHECK_EQ(getsockname(mc.peer, (struct sockaddr*) &mc.peer_addr, &len), 0);
  if (c->connected)
    CHECK_UV(uv_udp_connect(&mc.udp,
                            (const struct sockaddr*) &mc.peer_addr));

  CHECK_UV(uv_timer_init(&mc.loop, &mc.end));
  CHECK_UV(uv_timer_init(&mc.loop, &mc.go));
  CHECK_UV(uv_timer_init(&mc.loop, &mc.resume));
  CHECK_UV(uv_check_init(&mc.loop, &mc.check));
  CHECK_UV(uv_check_start(&mc.check, on_check));
  return CASE_OK;
}

int make_seen(long n) {
  mc.seen_len = n;
  mc.seen = calloc((size_t) n, 1);
  return mc.seen == NULL ? -1 : 0;
}

/* Runs the loop for ms, until the end timer closes everything; returns
 * what uv_loop_close() returned.
 */
int run_for(uint64_t ms) {
  errqueue_reads = 0;
  injected = 0;
  uv_timer_start(&mc.end, on_end, ms, 0);
  uv_run(&mc.loop, UV_RUN_DEFAULT);
  /* The iterations of the end's waits are the machine's, not libuv's. */
  mc.iterations -= mc.waits;
  if (mc.peer >= 0)
    close(mc.peer);
  mc.peer = -1;
  if (mc.icmp_before >= 0 && in_netns) {
    mc.icmp_errors = icmp_received(mc.family) - mc.icmp_before;
    mc.icmp_counted = 1;
  }
  return uv_loop_close(&mc.loop);
}

#endif  /* __linux__ */
