/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The hostile-peer case for "win: use a high-resolution timer in
 * uv__poll": a second process floods a UDP socket of the loop for
 * FLOOD_MS at the fastest rate it can send, so completions pour into the
 * loop while a TICK_MS repeating timer runs. The timer must keep firing
 * (the patch re-arms its waitable timer on every uv__poll), no datagram
 * may be delivered twice, and the resident set must stay flat.
 *
 * Portable: the sender is this program again, started with uv_spawn() as
 * `timer_flood --send PORT MS`, so the case runs the same way on Windows
 * (and under Wine), Linux and macOS. It sends to 127.0.0.1 only, stops by
 * itself after MS milliseconds or FLOOD_MAX_SEQ datagrams, and is killed
 * if it has not ended shortly after that.
 */

#include "uv.h"
#include "harness.h"
#include "dgram.h"
#include "handles.h"

#define TICK_MS 20
#define FLOOD_MS 5000
/* How long the parent waits for the sender beyond FLOOD_MS. */
#define GRACE_MS 3000
/* Bound on what the flood sends: 2^24 sequence numbers, a 2 MiB bitmap. */
#define FLOOD_MAX_SEQ (1UL << 24)
#define PAYLOAD 32
/* The resident set may grow by less than this from 1 s to the end. */
#define RSS_SLACK (2UL * 1024 * 1024)

typedef struct {
  uv_loop_t loop;
  uv_udp_t udp;
  uv_timer_t tick;
  uv_timer_t end;
  uv_process_t sender;
  int sender_running;
  int64_t sender_status;
  int sender_signal;
  uint64_t start;
  uint64_t run_ms;
  unsigned char* seen;
  unsigned long datagrams;
  unsigned long dups;
  unsigned long bad;
  long recv_errors;
  long ticks;
  size_t rss_1s;
  size_t rss_end;
  int rss_err;
} flood_ctx;

static flood_ctx fc;
static char recv_slab[64 * 1024];


/* The sender: numbered datagrams to 127.0.0.1:port as fast as
 * uv_udp_try_send() takes them, for ms milliseconds. Returns the exit
 * status: 0, or 1 if the socket could not be set up or a send failed with
 * anything but a full buffer.
 */
static int send_flood(int port, unsigned ms) {
  struct sockaddr_in to;
  uv_loop_t loop;
  uv_udp_t udp;
  uv_buf_t buf;
  char payload[PAYLOAD];
  unsigned long seq;
  uint64_t end;
  int r;
  int i;

  if (uv_loop_init(&loop) != 0 ||
      uv_ip4_addr("127.0.0.1", port, &to) != 0 ||
      uv_udp_init(&loop, &udp) != 0)
    return 1;
  memset(payload, 'x', sizeof(payload));
  buf = uv_buf_init(payload, sizeof(payload));
  end = uv_hrtime() + (uint64_t) ms * 1000000;
  seq = 0;
  r = 0;
  while (seq < FLOOD_MAX_SEQ && uv_hrtime() < end) {
    for (i = 0; i < 64 && seq < FLOOD_MAX_SEQ; i++) {
      put_seq(payload, seq);
      r = uv_udp_try_send(&udp, &buf, 1, (const struct sockaddr*) &to);
      if (r == PAYLOAD)
        seq++;
      else if (r != UV_EAGAIN && r != UV_ENOBUFS)
        break;
    }
    if (r < 0 && r != UV_EAGAIN && r != UV_ENOBUFS) {
      fprintf(stderr, "sender: uv_udp_try_send: %s\n", uv_strerror(r));
      return 1;
    }
  }
  fprintf(stderr, "sender: %lu datagrams in %u ms\n", seq, ms);
  uv_close((uv_handle_t*) &udp, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  return uv_loop_close(&loop) == 0 ? 0 : 1;
}


static void on_alloc(uv_handle_t* handle, size_t suggested, uv_buf_t* buf) {
  (void) handle;
  (void) suggested;
  *buf = uv_buf_init(recv_slab, sizeof(recv_slab));
}


static void on_recv(uv_udp_t* handle,
                    ssize_t nread,
                    const uv_buf_t* buf,
                    const struct sockaddr* addr,
                    unsigned flags) {
  long seq;

  (void) handle;
  (void) flags;
  if (nread < 0) {
    fc.recv_errors++;
    return;
  }
  if (addr == NULL)
    return;  /* Nothing (more) to read. */
  seq = flood_seq(buf, nread, PAYLOAD, FLOOD_MAX_SEQ);
  if (seq < 0) {
    fc.bad++;
    return;
  }
  fc.dups += seen_twice(fc.seen, (unsigned long) seq);
  fc.datagrams++;
}


static void on_tick(uv_timer_t* handle) {
  (void) handle;
  fc.ticks++;
  if (fc.rss_1s == 0 && now_ms() - fc.start >= 1000)
    fc.rss_err |= uv_resident_set_memory(&fc.rss_1s);
}


static void on_sender_exit(uv_process_t* process,
                           int64_t status,
                           int term_signal) {
  fc.sender_running = 0;
  fc.sender_status = status;
  fc.sender_signal = term_signal;
  uv_close((uv_handle_t*) process, NULL);
}


/* FLOOD_MS and a little more have passed: stop receiving and counting. */
static void on_end(uv_timer_t* handle) {
  if (fc.run_ms == 0) {
    fc.run_ms = now_ms() - fc.start;
    fc.rss_err |= uv_resident_set_memory(&fc.rss_end);
    close_once(&fc.udp, NULL);
    close_once(&fc.tick, NULL);
  }
  if (fc.sender_running && now_ms() - fc.start < FLOOD_MS + GRACE_MS) {
    uv_timer_start(handle, on_end, 50, 0);
    return;
  }
  if (fc.sender_running)
    uv_process_kill(&fc.sender, SIGKILL);
  close_once(handle, NULL);
}


static int start_sender(int port) {
  uv_process_options_t options;
  uv_stdio_container_t stdio[3];
  char exe[1024];
  char port_arg[16];
  char ms_arg[16];
  char* args[5];
  size_t size;

  size = sizeof(exe);
  CHECK_UV(uv_exepath(exe, &size));
  snprintf(port_arg, sizeof(port_arg), "%d", port);
  snprintf(ms_arg, sizeof(ms_arg), "%d", FLOOD_MS);
  args[0] = exe;
  args[1] = "--send";
  args[2] = port_arg;
  args[3] = ms_arg;
  args[4] = NULL;

  memset(&options, 0, sizeof(options));
  memset(stdio, 0, sizeof(stdio));
  stdio[0].flags = UV_IGNORE;
  stdio[1].flags = UV_INHERIT_FD;
  stdio[1].data.fd = 2;  /* Its report goes to our stderr. */
  stdio[2].flags = UV_INHERIT_FD;
  stdio[2].data.fd = 2;
  options.file = exe;
  options.args = args;
  options.exit_cb = on_sender_exit;
  options.stdio = stdio;
  options.stdio_count = 3;
  CHECK_UV(uv_spawn(&fc.loop, &fc.sender, &options));
  fc.sender_running = 1;
  return CASE_OK;
}


static int udp_flood_5s_timer_20ms(void) {
  struct sockaddr_in addr;
  int namelen;
  int value;
  long want;

  memset(&fc, 0, sizeof(fc));
  /* Every page of the bitmap is touched now, before the first RSS
   * sample, so it does not count as growth.
   */
  fc.seen = malloc(FLOOD_MAX_SEQ / 8);
  CHECK(fc.seen != NULL);
  memset(fc.seen, 0, FLOOD_MAX_SEQ / 8);

  CHECK_UV(uv_loop_init(&fc.loop));
  CHECK_UV(uv_udp_init(&fc.loop, &fc.udp));
  CHECK_UV(uv_ip4_addr("127.0.0.1", 0, &addr));
  CHECK_UV(uv_udp_bind(&fc.udp, (const struct sockaddr*) &addr, 0));
  value = 1 << 20;
  CHECK_UV(uv_recv_buffer_size((uv_handle_t*) &fc.udp, &value));
  namelen = sizeof(addr);
  CHECK_UV(uv_udp_getsockname(&fc.udp, (struct sockaddr*) &addr, &namelen));
  CHECK_UV(uv_udp_recv_start(&fc.udp, on_alloc, on_recv));
  CHECK_UV(uv_timer_init(&fc.loop, &fc.tick));
  CHECK_UV(uv_timer_init(&fc.loop, &fc.end));

  fc.start = now_ms();
  CHECK_UV(uv_timer_start(&fc.tick, on_tick, TICK_MS, TICK_MS));
  CHECK_UV(uv_timer_start(&fc.end, on_end, FLOOD_MS + 300, 0));
  if (start_sender(ntohs(addr.sin_port)) != CASE_OK) {
    uv_close((uv_handle_t*) &fc.udp, NULL);
    uv_close((uv_handle_t*) &fc.tick, NULL);
    uv_close((uv_handle_t*) &fc.end, NULL);
    uv_run(&fc.loop, UV_RUN_DEFAULT);
    uv_loop_close(&fc.loop);
    return CASE_FAIL;
  }
  CHECK_EQ(uv_run(&fc.loop, UV_RUN_DEFAULT), 0);
  CHECK_UV(uv_loop_close(&fc.loop));
  free(fc.seen);

  want = (long) (fc.run_ms / TICK_MS);
  fprintf(stderr,
          "# udp_flood_5s_timer_20ms: ticks=%ld (expected %ld) "
          "datagrams=%lu dups=%lu bad=%lu recv_errors=%ld rss_1s=%luKiB "
          "rss_end=%luKiB run=%lums\n",
          fc.ticks, want, fc.datagrams, fc.dups, fc.bad, fc.recv_errors,
          (unsigned long) (fc.rss_1s / 1024),
          (unsigned long) (fc.rss_end / 1024), (unsigned long) fc.run_ms);

  if (fc.sender_running || fc.sender_status != 0 || fc.sender_signal != 0)
    FAIL("the sender did not end cleanly by itself (status %d, signal %d)",
         (int) fc.sender_status, fc.sender_signal);
  CHECK_TIMING(fc.ticks * 5 >= want * 4,
               "the 20 ms timer fired %ld times in %lu ms, want >= 80%% of "
               "%ld", fc.ticks, (unsigned long) fc.run_ms, want);
  if (fc.datagrams == 0)
    FAIL("no datagram delivered");
  if (fc.dups != 0 || fc.bad != 0)
    FAIL("%lu datagrams delivered twice, %lu malformed", fc.dups, fc.bad);
  if (fc.rss_err != 0 || fc.rss_1s == 0 || fc.rss_end == 0)
    FAIL("uv_resident_set_memory() failed");
  CHECK_RSS(fc.rss_end <= fc.rss_1s || fc.rss_end - fc.rss_1s < RSS_SLACK,
            "the resident set grew from %lu KiB at 1 s to %lu KiB at the end",
            (unsigned long) (fc.rss_1s / 1024),
            (unsigned long) (fc.rss_end / 1024));
  return CASE_OK;
}


static const test_case cases[] = {
  { "udp_flood_5s_timer_20ms", udp_flood_5s_timer_20ms },
  { NULL, NULL }
};


int main(int argc, char** argv) {
  if (argc == 4 && strcmp(argv[1], "--send") == 0)
    return send_flood(atoi(argv[2]), (unsigned) atoi(argv[3]));
  return harness_main(cases, argc, argv);
}
