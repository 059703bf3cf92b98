/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The loop a flood comes to, what it counts, and the flooding children.
 */

#include "udp_hostile.h"

#ifdef __linux__

hctx hc;
static char recv_slab[DGRAM_MAX];


/* The resident set of this process in bytes, from /proc/self/statm. */
static long rss_bytes(void) {
  unsigned long size;
  unsigned long resident;
  FILE* f;
  int n;

  f = fopen("/proc/self/statm", "r");
  if (f == NULL)
    return -1;
  n = fscanf(f, "%lu %lu", &size, &resident);
  fclose(f);
  if (n != 2)
    return -1;
  return (long) resident * sysconf(_SC_PAGESIZE);
}


flood_arg* shared_arg(void) {
  void* p;

  p = mmap(NULL, sizeof(flood_arg), PROT_READ | PROT_WRITE,
           MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return NULL;
  memset(p, 0, sizeof(flood_arg));
  return p;
}


/* Sends numbered datagrams to f->to as fast as it can, or in bursts, until
 * f->ms have passed or f->max were sent. A pending socket error (left by
 * an ICMP report on a shared socket) fails one send: that is counted.
 */
void flood_child(void* arg) {
  flood_arg* f;
  char payload[FLOOD_PAYLOAD];
  uint64_t end;
  unsigned long seq;
  unsigned i;
  int fd;

  f = arg;
  memset(payload, 'x', sizeof(payload));
  fd = f->fd;
  if (fd < 0)
    fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) {
    f->failed = errno;
    return;
  }
  end = uv_hrtime() + (uint64_t) f->ms * 1000000;
  seq = 0;
  while (seq < f->max && uv_hrtime() < end) {
    for (i = 0; i < 64 && seq < f->max; i++) {
      put_seq(payload, seq);
      if (sendto(fd, payload, sizeof(payload), 0,
                 (struct sockaddr*) &f->to, sizeof(f->to)) ==
          (ssize_t) sizeof(payload)) {
        seq++;
        f->sent = seq;
      } else if (errno == ECONNREFUSED) {
        f->refused++;
      } else if (errno != ENOBUFS && errno != EAGAIN && errno != EINTR) {
        f->failed = errno;
        return;
      }
      if (f->burst != 0 && seq % f->burst == 0) {
        usleep(f->pause_us);
        break;
      }
    }
  }
}

static void hc_close_all(void) {
  hc.closed = 1;
  close_handles(&hc.loop);
}


static void hc_alloc(uv_handle_t* handle, size_t suggested, uv_buf_t* buf) {
  (void) handle;
  (void) suggested;
  if (hc.closed)
    hc.cbs_after_close++;
  if (hc.chunks == 0) {
    *buf = uv_buf_init(recv_slab, sizeof(recv_slab));
    return;
  }
  if (hc.spare != NULL) {
    buf->base = hc.spare;
    hc.spare = NULL;
  } else {
    buf->base = malloc((size_t) hc.chunks * DGRAM_MAX);
  }
  buf->len = buf->base == NULL ? 0 : (size_t) hc.chunks * DGRAM_MAX;
  if (buf->base == NULL)
    return;
  hc.allocs++;
  hc.lent++;
  if (hc.lent > hc.max_lent)
    hc.max_lent = hc.lent;
}


static void hc_give_back(const uv_buf_t* buf) {
  if (hc.chunks == 0 || buf->base == NULL)
    return;
  if (hc.spare == NULL)
    hc.spare = buf->base;
  else
    free(buf->base);
  hc.frees++;
  hc.lent--;
}


static void hc_recv(uv_udp_t* handle,
                    ssize_t nread,
                    const uv_buf_t* buf,
                    const struct sockaddr* addr,
                    unsigned flags) {
  uint64_t t;
  long seq;
  long w;

  (void) handle;
  if (hc.closed)
    hc.cbs_after_close++;

  if (flags & UV_UDP_MMSG_FREE) {
    hc_give_back(buf);
    return;
  }
  if (!(flags & UV_UDP_MMSG_CHUNK))
    hc_give_back(buf);  /* A whole buffer back: EAGAIN, error or recvmsg. */

  /* A report is told by its flag: upstream's v1.52.0 hands reports over
   * with a positive nread.
   */
  if (flags & UV_UDP_LINUX_RECVERR) {
    hc.reports++;
    hc.reports_this_iter++;
    if (nread != UV_ECONNREFUSED) {
      if (hc.bad_reports == 0)
        hc.first_bad_report = (long) nread;
      hc.bad_reports++;
    }
    return;
  }
  if (nread < 0) {
    if (hc.plain_errors == 0)
      hc.first_plain_error = (long) nread;
    hc.plain_errors++;
    return;
  }
  if (addr == NULL)
    return;  /* Nothing (more) to read. */
  seq = flood_seq(buf, nread, FLOOD_PAYLOAD, hc.max_seq);
  if (seq < 0) {
    hc.bad++;
    return;
  }
  hc.dups += seen_twice(hc.seen, (unsigned long) seq);
  hc.datagrams++;
  hc.this_iter++;
  t = now_ms() - hc.start;
  w = (long) (t / WINDOW_MS);
  if (w < MAX_WINDOWS)
    hc.windows[w]++;
}


static void hc_on_check(uv_check_t* handle) {
  (void) handle;
  hc.iterations++;
  if (hc.this_iter > hc.max_iter)
    hc.max_iter = hc.this_iter;
  if (hc.reports_this_iter > hc.max_reports_iter)
    hc.max_reports_iter = hc.reports_this_iter;
  hc.this_iter = 0;
  hc.reports_this_iter = 0;
}


static void hc_on_tick(uv_timer_t* handle) {
  unsigned long sent;
  uint64_t t;
  long w;

  (void) handle;
  hc.ticks++;
  t = now_ms() - hc.start;
  w = (long) (t / WINDOW_MS);
  if (hc.peer_sent != NULL && w < MAX_WINDOWS) {
    sent = *hc.peer_sent;
    if (hc.window_ticks[w]++ == 0)
      hc.window_sent_lo[w] = sent;
    hc.window_sent_hi[w] = sent;
  }
  if (hc.rss_1s == 0 && t >= 1000)
    hc.rss_1s = rss_bytes();
}


static void hc_on_end(uv_timer_t* handle) {
  (void) handle;
  hc.run_ms = now_ms() - hc.start;
  hc.rss_end = rss_bytes();
  hc_close_all();
}


/* Sets up the loop, a handle bound to 127.0.0.1 and the timers. */
int hc_setup(int chunks, unsigned bind_flags, unsigned long max_seq) {
  struct sockaddr_in a4;
  int value;

  memset(&hc, 0, sizeof(hc));
  hc.chunks = chunks;
  hc.max_seq = max_seq;
  /* Touch every page of the bitmap now, so that it does not count as
   * growth between the two RSS samples.
   */
  hc.seen = malloc(max_seq / 8);
  CHECK(hc.seen != NULL);
  memset(hc.seen, 0, max_seq / 8);
  CHECK_UV(uv_loop_init(&hc.loop));
  CHECK_UV(uv_udp_init_ex(&hc.loop,
                          &hc.udp,
                          AF_INET | (chunks ? UV_UDP_RECVMMSG : 0)));
  CHECK_UV(uv_ip4_addr("127.0.0.1", 0, &a4));
  CHECK_UV(uv_udp_bind(&hc.udp, (const struct sockaddr*) &a4, bind_flags));
  value = 1 << 20;
  CHECK_UV(uv_recv_buffer_size((uv_handle_t*) &hc.udp, &value));
  CHECK_UV(uv_timer_init(&hc.loop, &hc.tick));
  CHECK_UV(uv_timer_init(&hc.loop, &hc.end));
  CHECK_UV(uv_check_init(&hc.loop, &hc.check));
  return CASE_OK;
}


int hc_addr(struct sockaddr_in* out) {
  int namelen;

  namelen = sizeof(*out);
  return uv_udp_getsockname(&hc.udp, (struct sockaddr*) out, &namelen);
}


/* Runs the loop for run_ms with the tick timer and the check handle. */
int hc_run(uint64_t run_ms) {
  int r;

  hc.start = now_ms();
  CHECK_UV(uv_check_start(&hc.check, hc_on_check));
  CHECK_UV(uv_timer_start(&hc.tick, hc_on_tick, TICK_MS, TICK_MS));
  CHECK_UV(uv_timer_start(&hc.end, hc_on_end, run_ms, 0));
  CHECK_UV(uv_udp_recv_start(&hc.udp, hc_alloc, hc_recv));
  uv_run(&hc.loop, UV_RUN_DEFAULT);
  r = uv_loop_close(&hc.loop);
  free(hc.seen);
  hc.seen = NULL;
  free(hc.spare);
  hc.spare = NULL;
  if (r != 0)
    FAIL("uv_loop_close: %s", uv_strerror(r));
  return CASE_OK;
}


/* At least 80% of the ticks a 20 ms timer should get in the run. */
int ticks_ok(void) {
  long expected;

  expected = (long) (hc.run_ms / TICK_MS);
  return hc.ticks * 5 >= expected * 4;
}

#endif  /* __linux__ */
