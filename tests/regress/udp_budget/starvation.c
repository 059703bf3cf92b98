/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * A flood from another thread while a repeating timer runs.
 */

#include "udp_budget.h"

#ifndef _WIN32
typedef struct {
  struct sockaddr_storage to;
  int err;
  unsigned long sent;
} flood_arg;


/* Plain blocking sendto() from its own socket for FLOOD_MS. */
static void flood_thread(void* arg) {
  flood_arg* f;
  char payload[4];
  uint64_t end;
  socklen_t len;
  int fd;
  int i;

  f = arg;
  len = f->to.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                    : sizeof(struct sockaddr_in);
  fd = socket(f->to.ss_family, SOCK_DGRAM, 0);
  if (fd == -1) {
    f->err = 1;
    return;
  }
  end = uv_hrtime() + (uint64_t) FLOOD_MS * 1000000;
  while (uv_hrtime() < end) {
    for (i = 0; i < 64; i++) {
      put_seq(payload, (unsigned) f->sent);
      if (sendto(fd, payload, sizeof(payload), 0,
                 (struct sockaddr*) &f->to, len) == sizeof(payload))
        f->sent++;
    }
  }
  close(fd);
}


/* A sender thread floods the socket for FLOOD_MS while a TICK_MS repeating
 * timer runs: the timer must still get at least 80% of its ticks.
 */
static int starvation_case(int chunks, const char* name) {
  test_ctx c;
  receiver r;
  uv_thread_t tid;
  flood_arg f;
  int want;

  if (ctx_init(&c) != CASE_OK)
    return CASE_FAIL;
  CHECK_UV(receiver_init(&c, &r, AF_INET, chunks, (unsigned) -1));
  if (skip_mmsg(&r)) {
    ctx_close(&c, NULL);
    SKIP("recvmmsg is not supported here (uv_udp_using_recvmmsg)");
  }
  r.check_seq = 0;  /* The flood overruns the socket buffer. */
  c.use_tick = 1;
  c.safety_ms = FLOOD_MS;
  CHECK_UV(uv_timer_init(&c.loop, &c.tick));
  c.tick.data = &c;
  CHECK_UV(uv_timer_start(&c.tick, on_tick, TICK_MS, TICK_MS));
  CHECK_UV(receiver_start(&r));

  memset(&f, 0, sizeof(f));
  memcpy(&f.to, &r.addr, sizeof(f.to));
  CHECK_UV(uv_thread_create(&tid, flood_thread, &f));
  if (run_and_close(&c, NULL) != CASE_OK) {
    uv_thread_join(&tid);
    return CASE_FAIL;
  }
  CHECK_UV(uv_thread_join(&tid));

  want = FLOOD_MS / TICK_MS;
  fprintf(stderr,
          "%s: %d of %d timer ticks in %d ms; %lu datagrams sent, %u "
          "received, at most %d per iteration\n",
          name, c.ticks, want, FLOOD_MS, f.sent, r.received, r.max_iter);
  if (f.err)
    FAIL("the sender thread could not open a socket");
  if (r.received == 0)
    FAIL("nothing received from the flood");
  CHECK_TIMING(c.ticks * 5 >= want * 4,
               "timer ticked %d times in %d ms, want >= %d (80%% of %d)",
               c.ticks, FLOOD_MS, (want * 4 + 4) / 5, want);
  return CASE_OK;
}
#endif


int starvation_recvmsg(void) {
#ifdef _WIN32
  SKIP(UNIX_ONLY_REASON);
#else
  return starvation_case(0, "starvation_recvmsg");
#endif
}


int starvation_recvmmsg_20_chunks(void) {
#ifdef _WIN32
  SKIP(UNIX_ONLY_REASON);
#else
  return starvation_case(20, "starvation_recvmmsg_20_chunks");
#endif
}
