/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * Regression program for "win: use a high-resolution timer in uv__poll".
 *
 * On Windows, libuv 1.50 sleeps in GetQueuedCompletionStatusEx(), whose
 * timeout counts in ticks of the system timer (15.625 ms by default), so a
 * 1 ms timer fires after about 15.6 ms. The patch wakes the loop with a
 * high-resolution waitable timer where the system has one.
 *
 * Cases:
 *
 *   timer_1ms_median         50 one-shot 1 ms timers; the median time from
 *                            uv_timer_start() to the callback is < 8 ms.
 *                            Fails on the unpatched base on real Windows
 *                            (unless another process raised the system
 *                            timer resolution); passes on Linux, macOS,
 *                            and under Wine (whose waits are precise).
 *   timer_5ms_not_early      50 one-shot 5 ms timers; none fires early.
 *   timer_16ms_repeat_not_early
 *                            a 16 ms repeating timer, 50 intervals; none
 *                            fires early.
 *   timer_1ms_async_wakeups  as timer_1ms_median while another thread
 *                            wakes the loop with uv_async_send() every
 *                            ASYNC_GAP_US: early wake-ups must neither
 *                            lose nor delay the timer (on Windows they
 *                            interrupt the wait on the waitable timer).
 *                            None fires early; the median stays < 8 ms.
 *   loop_init_close_clean    100 cycles of uv_loop_init(), a 1 ms timer,
 *                            uv_loop_close(): every call returns 0, every
 *                            timer fires, and the process holds as many
 *                            handles (Windows) or file descriptors (Linux)
 *                            afterwards as before, within HANDLE_SLACK.
 *
 * "Early", precisely: libuv runs a timer when the loop time, the loop's
 * clock in whole milliseconds (uv_now()), has reached start + timeout,
 * where start is uv_now() when the timer was started. So the timer must
 * not run before uv_hrtime() reaches (start + timeout) * 1e6 ns. The loop
 * clock is the uv_hrtime() clock floored to milliseconds (on Windows both
 * read QueryPerformanceCounter; on Linux the loop may read the coarse
 * monotonic clock, which never runs ahead of the precise one), so this
 * bound is exact, with no tolerance. A timer may well run less than
 * `timeout` ms after uv_timer_start() when the loop time had been floored
 * (started at 10.9 ms loop clock 10, due at 11): that is allowed and
 * reported as "short", not asserted.
 *
 * Every case prints one line of statistics on stderr, in milliseconds of
 * uv_hrtime() from uv_timer_start() to the callback (for the repeating
 * timer: between successive callbacks): min, median (upper, element n/2
 * of the sorted samples), p90 (element 9n/10), max, and the early and
 * short counts. Each case is bounded by an unreferenced watchdog timer.
 */

#include "uv.h"
#include "harness.h"
#include "stats.h"

#define SAMPLES 50
#define CYCLES 100
#define WATCHDOG_MS 5000

/* Handles or descriptors that may appear during the cycles without being
 * a leak: system libraries can open one or two objects lazily on first
 * use (a registry key, an event), after the warm-up cycle. A leak per loop
 * would show as CYCLES or more.
 */
#define HANDLE_SLACK 4

/* Microseconds between two uv_async_send() calls of the waking thread. */
#define ASYNC_GAP_US 300

#include "timer_probe.h"


/* Sorts the samples and prints the statistics line; returns the median. */
static uint64_t report(const char* name, struct probe* p) {
  uint64_t* s;
  int n;

  s = p->samples;
  n = p->count;
  if (n == 0) {
    fprintf(stderr, "%s: no samples\n", name);
    return 0;
  }

  sort_u64(s, (size_t) n);
  fprintf(stderr,
          "%s: n=%d min=%.3f median=%.3f p90=%.3f max=%.3f ms "
          "early=%d short=%d\n",
          name, n, ms(s[0]), ms(s[n / 2]), ms(s[n * 9 / 10]), ms(s[n - 1]),
          p->early, p->shorter);
  return s[n / 2];
}


/* Runs SAMPLES one-shot timers of `timeout` ms, each started right after a
 * fresh uv_update_time(). Returns 0, or -1 if the watchdog fired.
 */
static int run_oneshots(const char* name, uint64_t timeout, uint64_t* median,
                        int* early) {
  return probe_run_oneshots(name, SAMPLES, timeout, report, median, early);
}


static int timer_1ms_median(void) {
  uint64_t median;
  int early;

  if (run_oneshots("timer_1ms", 1, &median, &early) != 0)
    FAIL("no %d samples within %d ms", SAMPLES, WATCHDOG_MS);
  CHECK_EQ(early, 0);
  if (median >= 8 * 1000000)
    FAIL("median of %d one-shot 1 ms timers is %.3f ms (bound 8 ms)",
         SAMPLES, ms(median));
  return CASE_OK;
}


struct waker {
  uv_async_t async;
  uv_mutex_t lock;
  uv_cond_t cond;     /* Signalled when done is set. */
  int done;           /* Set by the loop thread when it has finished. */
  unsigned long sent;
  unsigned long seen;
};


/* Sends uv_async_send() every ASYNC_GAP_US until the loop thread sets
 * w->done. It blocks between sends rather than spinning: under valgrind,
 * which runs one thread at a time, a spinning thread would starve the
 * loop.
 */
static void waker_thread(void* arg) {
  struct waker* w;

  w = arg;
  uv_mutex_lock(&w->lock);
  while (!w->done) {
    uv_async_send(&w->async);
    w->sent++;
    uv_cond_timedwait(&w->cond, &w->lock, (uint64_t) ASYNC_GAP_US * 1000);
  }
  uv_mutex_unlock(&w->lock);
}


static void waker_cb(uv_async_t* handle) {
  ((struct waker*) handle->data)->seen++;
}


static int timer_1ms_async_wakeups(void) {
  struct probe p;
  struct waker w;
  uv_loop_t loop;
  uv_thread_t tid;
  uint64_t median;
  int i;

  memset(&w, 0, sizeof(w));
  CHECK_UV(uv_loop_init(&loop));
  CHECK_EQ(probe_init(&p, &loop), 0);
  CHECK_UV(uv_async_init(&loop, &w.async, waker_cb));
  w.async.data = &w;
  /* The timer alone decides when uv_run() returns. */
  uv_unref((uv_handle_t*) &w.async);
  CHECK_UV(uv_mutex_init(&w.lock));
  CHECK_UV(uv_cond_init(&w.cond));
  CHECK_UV(uv_thread_create(&tid, waker_thread, &w));

  for (i = 0; i < SAMPLES && !p.timed_out; i++) {
    if (probe_start(&p, 1) != 0)
      break;
    uv_run(&loop, UV_RUN_DEFAULT);
  }

  uv_mutex_lock(&w.lock);
  w.done = 1;
  uv_cond_signal(&w.cond);
  uv_mutex_unlock(&w.lock);
  CHECK_UV(uv_thread_join(&tid));
  uv_cond_destroy(&w.cond);
  uv_mutex_destroy(&w.lock);
  median = report("timer_1ms_async", &p);
  fprintf(stderr, "timer_1ms_async: %lu wake-ups sent, %lu callbacks\n",
          w.sent, w.seen);
  uv_close((uv_handle_t*) &w.async, NULL);
  probe_close(&p);
  CHECK_UV(uv_loop_close(&loop));
  if (p.timed_out || p.count != SAMPLES)
    FAIL("%d of %d samples within %d ms", p.count, SAMPLES, WATCHDOG_MS);
  if (p.early != 0)
    FAIL("%d of %d 1 ms timers ran before they were due", p.early,
         SAMPLES);
  if (w.seen == 0)
    FAIL("no uv_async_send() callback ran (%lu sent)", w.sent);
  if (median >= 8 * 1000000)
    FAIL("median of %d one-shot 1 ms timers is %.3f ms (bound 8 ms)",
         SAMPLES, ms(median));
  return CASE_OK;
}


static int timer_5ms_not_early(void) {
  uint64_t median;
  int early;

  if (run_oneshots("timer_5ms", 5, &median, &early) != 0)
    FAIL("no %d samples within %d ms", SAMPLES, WATCHDOG_MS);
  if (early != 0)
    FAIL("%d of %d 5 ms timers ran before they were due", early, SAMPLES);
  return CASE_OK;
}


static void repeat_cb(uv_timer_t* handle) {
  struct probe* p;
  uint64_t now;

  p = handle->data;
  now = uv_hrtime();
  probe_record(p, now);
  /* libuv re-armed the timer for the loop time of this pass plus the
   * repeat interval before calling us; uv_now() is that loop time.
   */
  p->due = uv_now(p->loop) + p->timeout;
  p->start = now;
  if (p->count == SAMPLES)
    uv_timer_stop(handle);
}


static int timer_16ms_repeat_not_early(void) {
  struct probe p;
  uv_loop_t loop;

  CHECK_UV(uv_loop_init(&loop));
  CHECK_EQ(probe_init(&p, &loop), 0);

  uv_update_time(&loop);
  p.timeout = 16;
  p.due = uv_now(&loop) + 16;
  p.start = uv_hrtime();
  CHECK_UV(uv_timer_start(&p.timer, repeat_cb, 16, 16));
  uv_run(&loop, UV_RUN_DEFAULT);

  report("timer_16ms_repeat", &p);
  probe_close(&p);
  CHECK_UV(uv_loop_close(&loop));
  if (p.timed_out || p.count != SAMPLES)
    FAIL("%d of %d intervals within %d ms", p.count, SAMPLES, WATCHDOG_MS);
  if (p.early != 0)
    FAIL("%d of %d repeats ran before they were due", p.early, SAMPLES);
  return CASE_OK;
}


static int loop_init_close_clean(void) {
  uint64_t deadline;
  const char* how;
  long before;
  long after;
  int fired;
  int i;

  /* Warm-up: libuv's one-time initialisation opens handles of its own. */
  fired = 0;
  CHECK_EQ(one_cycle(&fired), 0);
  CHECK_EQ(fired, 1);
  before = count_handles(&how);

  fired = 0;
  deadline = uv_hrtime() + (uint64_t) WATCHDOG_MS * 1000000;
  for (i = 0; i < CYCLES; i++) {
    if (one_cycle(&fired) != 0)
      FAIL("cycle %d: a loop call did not return 0", i);
    if (uv_hrtime() > deadline)
      FAIL("only %d cycles within %d ms", i + 1, WATCHDOG_MS);
  }
  CHECK_EQ(fired, CYCLES);

  after = count_handles(&how);
  fprintf(stderr,
          "loop_init_close: cycles=%d handles before=%ld after=%ld "
          "(slack %d, %s)\n",
          CYCLES, before, after, HANDLE_SLACK, how);
  if (before >= 0 && after > before + HANDLE_SLACK)
    FAIL("%ld handles before %d loop init/close cycles, %ld after",
         before, CYCLES, after);
  return CASE_OK;
}


static const test_case cases[] = {
  { "timer_1ms_median", timer_1ms_median },
  { "timer_5ms_not_early", timer_5ms_not_early },
  { "timer_16ms_repeat_not_early", timer_16ms_repeat_not_early },
  { "timer_1ms_async_wakeups", timer_1ms_async_wakeups, CASE_THREADS },
  { "loop_init_close_clean", loop_init_close_clean },
  { NULL, NULL }
};


int main(int argc, char** argv) {
  return harness_main(cases, argc, argv);
}
