/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The program's reads of the socket, a case's loop and callbacks, and
 * the prober.
 */

#include "udp_paths.h"

#ifdef __linux__

#include "libc_recv.h"
#include "socket_calls.h"

/* On watch_fd: error-queue reads (recvmmsg() among them), messages read. */
long errq_calls;
long errq_mmsg_calls;
long msgs_read;

ssize_t recvmsg(int fd, struct msghdr* msg, int flags) {
  ssize_t r;

  r = libc_recvmsg(fd, msg, flags);
  if (fd == watch_fd) {
    errq_calls += (flags & MSG_ERRQUEUE) != 0;
    msgs_read += r >= 0;
    socket_calls++;
  }
  return r;
}

int recvmmsg(int fd, struct mmsghdr* msgs, unsigned int n, int flags,
             struct timespec* timeout) {
  int r;

  r = libc_recvmmsg(fd, msgs, n, flags, timeout);
  if (fd == watch_fd) {
    errq_calls += (flags & MSG_ERRQUEUE) != 0;
    errq_mmsg_calls += (flags & MSG_ERRQUEUE) != 0;
    msgs_read += r > 0 ? r : 0;
    socket_calls++;
  }
  return r;
}

pctx P;

/* A fresh buffer each call, the first SCAN bytes of each chunk zeroed. */
static void on_alloc(uv_handle_t* handle, size_t suggested, uv_buf_t* buf) {
  size_t len;
  size_t k;

  (void) handle;
  (void) suggested;
  P.allocs++;
  P.calls_stopped += P.stopped;
  P.calls_closed += P.closed;
  len = P.mmsg ? (size_t) MMSG_CHUNKS * DGRAM_MAX : DGRAM_MAX;
  buf->base = malloc(len);
  buf->len = buf->base == NULL ? 0 : len;
  for (k = 0; k < buf->len; k += DGRAM_MAX)
    memset(buf->base + k, 0, SCAN);
  P.lent += buf->base != NULL;
  P.faults += buf->base == NULL;
}

static void give_back(char* p) {
  P.lent -= p != NULL;
  free(p);
}

void on_end(uv_timer_t* timer) {
  (void) timer;
  watch_fd = -1;
  close_handles(&P.loop);
}

static void on_recv(uv_udp_t* handle, ssize_t nread, const uv_buf_t* buf,
                    const struct sockaddr* addr, unsigned flags);

static void on_resume(uv_timer_t* timer) {
  (void) timer;
  P.stopped = 0;
  P.faults += uv_udp_recv_start(&P.udp, on_alloc, on_recv) != 0;
}

/* Stop, restart or close, at the first report or datagram. */
static void act(uv_udp_t* handle) {
  P.acted = 1;
  if (P.act == ACT_CLOSE) {
    P.closed = 1;
    uv_close((uv_handle_t*) handle, NULL);
    return;
  }
  P.faults += uv_udp_recv_stop(handle) != 0;
  if (P.act == ACT_RESTART) {
    P.faults += uv_udp_recv_start(handle, on_alloc, on_recv) != 0;
  } else {
    P.stopped = 1;
    uv_timer_start(&P.timer, on_resume, RESUME_MS, 0);
  }
}

/* A report: the number after MAGIC in its payload tells which send. */
static void on_report(const char* p) {
  long seq;
  int i;

  seq = -1;
  for (i = 0; i + 8 <= SCAN && seq < 0; i++)
    if (memcmp(p + i, MAGIC, 4) == 0)
      seq = (long) get_seq(p + i + 4);
  if (P.backlog) {
    P.in_drain += !P.drained;
    if (seq >= 0 && seq < P.probe->sent && P.nlat < MAX_PROBES) {
      P.lag[P.nlat] = (uint64_t) (P.probe->delivered -
                                  P.probe->sent_at[seq]);
      P.lat[P.nlat++] = uv_hrtime() - P.probe->sent_ns[seq];
    }
  }
  if (seq >= 0 && seq < FLOOD) {
    P.dups += P.seen[seq];
    P.seen[seq] = 1;
  }
  if (P.reports == FLOOD)
    uv_timer_start(&P.end, on_end, 20, 0);
}

/* The backlog's work on a datagram: SPEND_NS of busy waiting. */
static void on_datagram(void) {
  uint64_t until;

  if (P.probe != NULL)
    P.probe->delivered++;
  until = uv_hrtime() + SPEND_NS;
  while (P.backlog && uv_hrtime() < until)
    ;
  if (P.backlog && P.datagrams == BACKLOG) {
    P.drained = 1;
    P.probe->stop = 1;
    uv_timer_start(&P.end, on_end, 30, 0);
  }
}

static void on_recv(uv_udp_t* handle, ssize_t nread, const uv_buf_t* buf,
                    const struct sockaddr* addr, unsigned flags) {
  (void) addr;
  if (flags & UV_UDP_MMSG_FREE) {
    P.frees_stopped += P.stopped;
    give_back(buf->base);
    return;
  }
  P.calls_stopped += P.stopped;
  if (P.closed && (flags & UV_UDP_MMSG_CHUNK))
    P.chunks_closed++;
  else
    P.calls_closed += P.closed;
  if (flags & UV_UDP_LINUX_RECVERR) {
    /* Told by its flag: upstream gives a report a positive nread. */
    P.reports++;
    P.report_nread = (long) nread;
    on_report(buf->base);
  } else if (nread > 0) {
    P.datagrams++;
    on_datagram();
  } else if (nread < 0) {
    if (P.plain++ == 0)
      P.first_plain = (long) nread;
  } else {
    P.empty++;
  }
  if (!(flags & UV_UDP_MMSG_CHUNK))
    give_back(buf->base);
  if (P.act != ACT_NONE && !P.acted &&
      ((flags & UV_UDP_LINUX_RECVERR) || nread > 0))
    act(handle);
}

/* Starts receiving on the case's handle, with the callbacks above. */
int recv_start(void) {
  return uv_udp_recv_start(&P.udp, on_alloc, on_recv);
}

/* The mixed cases end once all is read (msgs_read), or at the close. */
static void on_check(uv_check_t* check) {
  (void) check;
  if (P.acted && !uv_is_active((uv_handle_t*) &P.timer) &&
      (P.closed || msgs_read >= MIXED_DATAGRAMS + MIXED_REPORTS))
    uv_timer_start(&P.timer, on_end, 10, 0);
}

/* A private network namespace, a loop, a handle bound to addr:0 with a
 * receive buffer of rcvbuf bytes, and the timers.
 */
int setup(const char* addr, unsigned init, unsigned bind, int rcvbuf) {
  struct sockaddr_storage ss;
  int r;

  memset(&P, 0, sizeof(P));
  P.mmsg = (init & UV_UDP_RECVMMSG) != 0;
  if ((r = private_netns()) != 0)
    SKIP("no private network namespace (root or user namespaces): %s",
         strerror(r));
  memset(&ss, 0, sizeof(ss));
  if (strchr(addr, ':') != NULL)
    CHECK_UV(uv_ip6_addr(addr, 0, (struct sockaddr_in6*) &ss));
  else
    CHECK_UV(uv_ip4_addr(addr, 0, (struct sockaddr_in*) &ss));
  CHECK_UV(uv_loop_init(&P.loop));
  CHECK_UV(uv_udp_init_ex(&P.loop, &P.udp, (unsigned) ss.ss_family | init));
  CHECK_UV(uv_udp_bind(&P.udp, (const struct sockaddr*) &ss, bind));
  CHECK_UV(uv_fileno((uv_handle_t*) &P.udp, &P.fd));
  if (P.mmsg && !uv_udp_using_recvmmsg(&P.udp))
    SKIP("recvmmsg is not supported here (uv_udp_using_recvmmsg)");
  if (setsockopt(P.fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(int)))
    CHECK_UV(uv_recv_buffer_size((uv_handle_t*) &P.udp, &rcvbuf));
  CHECK_UV(uv_timer_init(&P.loop, &P.end));
  CHECK_UV(uv_timer_init(&P.loop, &P.timer));
  CHECK_UV(uv_check_init(&P.loop, &P.check));
  CHECK_UV(uv_check_start(&P.check, on_check));
  P.icmp = snmp_counter("Icmp:", "InDestUnreachs");
  return CASE_OK;
}

/* Runs the loop until the case ends it or SAFETY_MS passed; prints the
 * figures of every case, the JSON line left open for the case's own.
 */
int run(void) {
  struct timespec t0;
  struct timespec t1;
  int r;

  watch_fd = P.fd;
  uv_timer_start(&P.end, on_end, SAFETY_MS, 0);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
  uv_run(&P.loop, UV_RUN_DEFAULT);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
  watch_fd = -1;
  r = uv_loop_close(&P.loop);
  P.icmp = snmp_counter("Icmp:", "InDestUnreachs") - P.icmp;
  FIGURE("{\"paths\": \"%s\", \"icmp_errors\": %ld, \"reports\": %ld, "
         "\"report_nread\": %ld, \"datagrams\": %ld, \"plain_errors\": %ld, "
         "\"first_plain\": \"%s\", \"empty_reads\": %ld, "
         "\"errqueue_reads\": %ld, \"allocs\": %ld, \"unreturned\": %ld, "
         "\"cpu_ms\": %.2f",
         case_name, P.icmp, P.reports, P.report_nread, P.datagrams, P.plain,
         P.plain ? uv_err_name((int) P.first_plain) : "-", P.empty,
         errq_calls, P.allocs, P.lent,
         (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
  return r;
}

/* Sends MAGIC and seq from fd to dst (NULL: connected), the time in *ns;
 * again when a pending socket error failed the send. Returns 0 or -1.
 */
static int send_numbered(int fd, const struct sockaddr_in* dst, long seq,
                         volatile uint64_t* ns) {
  char payload[8];
  int tries;

  memcpy(payload, MAGIC, 4);
  put_seq(payload + 4, (unsigned long) seq);
  for (tries = 0; tries < 10; tries++) {
    *ns = uv_hrtime();
    if (sendto(fd, payload, 8, 0, (const struct sockaddr*) dst,
               dst != NULL ? sizeof(*dst) : 0) == 8)
      return 0;
    if (errno != ECONNREFUSED && errno != EINTR)
      return -1;
  }
  return -1;
}

/* Queues n datagrams from a socket of their own to the handle, then m
 * reports: sends from the handle to a closed port. Returns 0 or -1.
 */
int queue(long n, long m) {
  struct sockaddr_storage me;
  struct sockaddr_in dst;
  uint64_t ns;
  int len;
  int fd;
  long i;

  len = sizeof(me);
  if (uv_udp_getsockname(&P.udp, (struct sockaddr*) &me, &len) != 0 ||
      closed_port(AF_INET, &dst) != 0 ||
      (fd = socket(AF_INET, SOCK_DGRAM, 0)) < 0)
    return -1;
  for (i = 0; i < n; i++)
    if (sendto(fd, "datagram", 8, 0, (struct sockaddr*) &me, len) != 8)
      break;
  close(fd);
  while (i == n && m-- > 0)
    if (send_numbered(P.fd, &dst, m, &ns) != 0)
      return -1;
  usleep(20000);
  return i == n ? 0 : -1;
}

/* The prober's life: a send every period_ms until told to stop. */
static void prober(void* arg) {
  probe_t* p;

  p = arg;
  while (!p->stop && p->sent < p->max) {
    if (send_numbered(p->fd, p->connected ? NULL : &p->dst, p->sent,
                      &p->sent_ns[p->sent]) != 0)
      _exit(1);
    p->sent_at[p->sent] = p->delivered;
    p->sent++;
    usleep(p->period_ms * 1000);
  }
}

/* Starts the prober on the handle's socket; returns its pid or -1. */
pid_t start_prober(unsigned period_ms, long max, int connected) {
  P.probe = mmap(NULL, sizeof(*P.probe), PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (P.probe == MAP_FAILED || closed_port(AF_INET, &P.probe->dst) != 0)
    return -1;
  P.probe->fd = P.fd;
  P.probe->connected = connected;
  P.probe->period_ms = period_ms;
  P.probe->max = max;
  return spawn(prober, P.probe, 5);
}

#endif  /* __linux__ */
