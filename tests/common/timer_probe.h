/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * A timer probe, shared by the timer regression programs: one timer whose
 * callbacks are timed with uv_hrtime(), and an unreferenced watchdog timer
 * that stops the loop after WATCHDOG_MS. The including program defines
 * SAMPLES (how many samples a probe holds) and WATCHDOG_MS first. Also
 * one_cycle(), one loop's life, and count_handles(), the open handles or
 * descriptors of the process, to find what a loop leaks.
 *
 * "Early": libuv runs a timer when the loop time has reached start +
 * timeout, where start is uv_now() when the timer was started, so a
 * callback before uv_hrtime() reaches that loop time in nanoseconds is
 * early. "Short": a callback before `timeout` ms of uv_hrtime() since the
 * start; allowed, as the loop time is floored to milliseconds.
 */

#ifndef UVPATCH_TIMER_PROBE_H_
#define UVPATCH_TIMER_PROBE_H_

#include <stdint.h>
#include <string.h>

#include "uv.h"

#ifdef _WIN32
# include <windows.h>
#endif

#ifdef __linux__
# include <dirent.h>
#endif

#if !defined(SAMPLES) || !defined(WATCHDOG_MS)
# error "define SAMPLES and WATCHDOG_MS before including timer_probe.h"
#endif

struct probe {
  uv_loop_t* loop;
  uv_timer_t timer;
  uv_timer_t watchdog;
  uint64_t samples[SAMPLES];
  int count;          /* Samples taken. */
  int early;          /* Callbacks before the deadline, see above. */
  int shorter;        /* Callbacks before `timeout` ms of uv_hrtime(). */
  int timed_out;      /* The watchdog fired. */
  uint64_t timeout;   /* Of the timer, in ms. */
  uint64_t due;       /* Loop time (ms) at which the timer is due. */
  uint64_t start;     /* uv_hrtime() at uv_timer_start() or last callback. */
};

/* Prints a probe's statistics line; returns the median of its samples. */
typedef uint64_t (*probe_report_fn)(const char* name, struct probe* p);


static double ms(uint64_t ns) {
  return (double) ns / 1e6;
}


/* Records one callback at uv_hrtime() `now`; a sample past SAMPLES is
 * counted as early or short but not kept.
 */
static void probe_record(struct probe* p, uint64_t now) {
  uint64_t elapsed;

  elapsed = now - p->start;
  if (now < p->due * 1000000)
    p->early++;
  if (elapsed < p->timeout * 1000000)
    p->shorter++;
  if (p->count < SAMPLES)
    p->samples[p->count++] = elapsed;
}


static void probe_oneshot_cb(uv_timer_t* handle) {
  probe_record(handle->data, uv_hrtime());
}


static void probe_watchdog_cb(uv_timer_t* handle) {
  struct probe* p;

  p = handle->data;
  p->timed_out = 1;
  uv_stop(p->loop);
}


static int probe_init(struct probe* p, uv_loop_t* loop) {
  memset(p, 0, sizeof(*p));
  p->loop = loop;
  if (uv_timer_init(loop, &p->timer) != 0)
    return -1;
  if (uv_timer_init(loop, &p->watchdog) != 0)
    return -1;
  p->timer.data = p;
  p->watchdog.data = p;
  if (uv_timer_start(&p->watchdog, probe_watchdog_cb, WATCHDOG_MS, 0) != 0)
    return -1;
  uv_unref((uv_handle_t*) &p->watchdog);
  return 0;
}


static void probe_close(struct probe* p) {
  uv_close((uv_handle_t*) &p->timer, NULL);
  uv_close((uv_handle_t*) &p->watchdog, NULL);
  uv_run(p->loop, UV_RUN_DEFAULT);
}


/* Starts the probe's one-shot timer for `timeout` ms from a fresh loop
 * time.
 */
static int probe_start(struct probe* p, uint64_t timeout) {
  uv_update_time(p->loop);
  p->timeout = timeout;
  p->due = uv_now(p->loop) + timeout;
  p->start = uv_hrtime();
  return uv_timer_start(&p->timer, probe_oneshot_cb, timeout, 0);
}


/* Runs `n` one-shot timers of `timeout` ms on a new loop, one at a time,
 * and reports them with `report`. Returns 0, or -1 if a call failed, the
 * watchdog fired or fewer than `n` timers ran.
 */
static int probe_run_oneshots(const char* name, int n, uint64_t timeout,
                              probe_report_fn report, uint64_t* median,
                              int* early) {
  struct probe p;
  uv_loop_t loop;
  int i;

  if (uv_loop_init(&loop) != 0)
    return -1;
  if (probe_init(&p, &loop) != 0)
    return -1;

  for (i = 0; i < n && !p.timed_out; i++) {
    if (probe_start(&p, timeout) != 0)
      return -1;
    uv_run(&loop, UV_RUN_DEFAULT);
  }

  *median = report(name, &p);
  *early = p.early;
  probe_close(&p);
  if (uv_loop_close(&loop) != 0)
    return -1;
  return p.timed_out || p.count != n ? -1 : 0;
}


static void cycle_cb(uv_timer_t* handle) {
  (*(int*) handle->data)++;
}


/* One loop's life: init, a 1 ms timer that must fire, close. */
static int one_cycle(int* fired) {
  uv_loop_t loop;
  uv_timer_t timer;

  if (uv_loop_init(&loop) != 0)
    return -1;
  if (uv_timer_init(&loop, &timer) != 0)
    return -1;
  timer.data = fired;
  if (uv_timer_start(&timer, cycle_cb, 1, 0) != 0)
    return -1;
  if (uv_run(&loop, UV_RUN_DEFAULT) != 0)
    return -1;
  uv_close((uv_handle_t*) &timer, NULL);
  if (uv_run(&loop, UV_RUN_DEFAULT) != 0)
    return -1;
  return uv_loop_close(&loop) == 0 ? 0 : -1;
}


/* Open handles (Windows) or file descriptors (Linux) of the process, or -1
 * where this program cannot count them; `*how` says how they were counted.
 * Wine's GetProcessHandleCount() reports 0, so where it does, count the
 * handle values below 65536 that GetHandleInformation() accepts instead
 * (handle values are multiples of 4 on Windows and Wine alike).
 */
static long count_handles(const char** how) {
#if defined(_WIN32)
  DWORD flags;
  DWORD n;
  ULONG_PTR v;

  if (GetProcessHandleCount(GetCurrentProcess(), &n) && n != 0) {
    *how = "GetProcessHandleCount";
    return (long) n;
  }

  *how = "GetHandleInformation scan";
  n = 0;
  for (v = 4; v < 65536; v += 4)
    if (GetHandleInformation((HANDLE) v, &flags))
      n++;
  return (long) n;
#elif defined(__linux__)
  DIR* dir;
  long n;

  *how = "/proc/self/fd";
  dir = opendir("/proc/self/fd");
  if (dir == NULL)
    return -1;
  n = 0;
  while (readdir(dir) != NULL)
    n++;
  closedir(dir);
  return n;
#else
  *how = "not counted on this platform";
  return -1;
#endif
}

#endif  /* UVPATCH_TIMER_PROBE_H_ */
