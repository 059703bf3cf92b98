/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * Timer lateness benchmark for "win: use a high-resolution timer in
 * uv__poll". Prints one JSON object per line on stdout:
 *
 *   {"bench":"timer_oneshot","label":...,"delay_ms":1,"samples":N,
 *    "min_us":...,"p50_us":...,"p99_us":...,"max_us":...}
 *     N one-shot timers, each started right after uv_update_time(); the
 *     time from uv_timer_start() to the callback, in microseconds of
 *     uv_hrtime(). p50 is element N/2 of the sorted samples, p99 element
 *     99N/100.
 *
 *     With --raw the line also holds "samples_us":[...], every sample.
 *     With --delays 1,5 one line is printed per delay (default: 1).
 *
 *   {"bench":"timer_periodic","label":...,"repeat_ms":16,"samples":N,
 *    "min_us":...,"p50_us":...,"p99_us":...,"max_us":...}
 *     Only with --period MS: a repeating timer of that period; the
 *     lateness of each tick (time since the previous tick minus the
 *     period, 0 if early), N = --ticks (default 100) samples; p99 is
 *     element ceil(99N/100) - 1 of the sorted samples.
 *
 *   {"bench":"timer_repeat","label":...,"repeat_ms":1,"ms":...,
 *    "iterations":...,"iter_per_sec":...,"cpu_us_per_iter":...}
 *     A loop whose only work is a 1 ms repeating timer, run for --ms
 *     milliseconds: loop iterations (counted with a uv_check_t) per second
 *     and process CPU time (uv_getrusage(), user + system) per iteration,
 *     which includes what it costs to arm the wake-up each iteration.
 *
 *   {"bench":"armed_poll","label":...,"ms":...,"iterations":...,
 *    "iter_per_sec":...,"cpu_us_per_iter":...}
 *     A loop that never sleeps although it polls with a finite timeout: an
 *     async handle re-sends itself from its callback while a 10 s timer is
 *     pending, so every iteration arms the wake-up for that timer (on
 *     Windows with the patch: cancel, set, associate) and then finds the
 *     async completion already queued. Iterations per second compare the
 *     cost of arming, base against patched.
 *
 * Usage: timer_lateness [--samples N] [--ms N] [--label TEXT]
 *                       [--delays MS,MS...] [--period MS [--ticks N]]
 *                       [--raw]
 *   --samples  one-shot samples (default 200)
 *   --ms       duration of each loop benchmark (default 2000)
 *   --label    copied into each line (default "")
 *   --delays   one-shot delays in ms (default 1)
 *   --period   also measure a repeating timer of this period
 *   --ticks    samples of the repeating timer (default 100)
 *   --raw      print every one-shot sample too
 *
 * Build against a static libuv, e.g.:
 *   cc -O2 -I TREE/include -I ../common timer_lateness.c BUILD/libuv.a \
 *     -lpthread -ldl
 *   x86_64-w64-mingw32-gcc -O2 -I TREE/include -I ../common timer_lateness.c \
 *     BUILD/libuv.a -lws2_32 -liphlpapi -luserenv -ldbghelp -lole32 \
 *     -lshell32 -lpsapi -static
 */

#include "uv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

static uv_loop_t* loop;
static uint64_t fired_at;
static uint64_t iterations;
static uint64_t bench_end;
static int raw;
static uint64_t* tick_lags;
static uint64_t last_tick;
static int nticks;
static int want_ticks;
static uint64_t period_ns;


static double cpu_us(void) {
  uv_rusage_t ru;

  if (uv_getrusage(&ru) != 0)
    return -1;
  return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
         ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}


static void oneshot_cb(uv_timer_t* handle) {
  fired_at = uv_hrtime();
}


static void bench_oneshot(const char* label, int samples, uint64_t delay) {
  uv_timer_t timer;
  uint64_t* s;
  uint64_t start;
  int i;

  s = calloc(samples, sizeof(*s));
  if (s == NULL)
    abort();

  uv_timer_init(loop, &timer);
  for (i = 0; i < samples; i++) {
    uv_update_time(loop);
    start = uv_hrtime();
    uv_timer_start(&timer, oneshot_cb, delay, 0);
    uv_run(loop, UV_RUN_DEFAULT);
    s[i] = fired_at - start;
  }
  uv_close((uv_handle_t*) &timer, NULL);
  uv_run(loop, UV_RUN_DEFAULT);

  sort_u64(s, (size_t) samples);
  printf("{\"bench\":\"timer_oneshot\",\"label\":\"%s\",\"delay_ms\":%d,"
         "\"samples\":%d,\"min_us\":%.1f,\"p50_us\":%.1f,\"p99_us\":%.1f,"
         "\"max_us\":%.1f",
         label, (int) delay, samples, s[0] / 1e3, s[samples / 2] / 1e3,
         s[samples * 99 / 100] / 1e3, s[samples - 1] / 1e3);
  if (raw) {
    printf(",\"samples_us\":[");
    for (i = 0; i < samples; i++)
      printf(i == 0 ? "%.1f" : ",%.1f", s[i] / 1e3);
    printf("]");
  }
  printf("}\n");
  fflush(stdout);
  free(s);
}


static void periodic_cb(uv_timer_t* handle) {
  uint64_t now;

  now = uv_hrtime();
  if (last_tick != 0) {
    if (now - last_tick > period_ns)
      tick_lags[nticks++] = now - last_tick - period_ns;
    else
      tick_lags[nticks++] = 0;
  }
  last_tick = now;
  if (nticks >= want_ticks)
    uv_timer_stop(handle);
}


/* Lateness of each tick of a repeating timer: libuv re-arms it from the
 * loop time of the callback, so each tick is measured from the one before.
 */
static void bench_periodic(const char* label, int ticks, uint64_t period) {
  uv_timer_t timer;
  int n;

  tick_lags = calloc(ticks, sizeof(*tick_lags));
  if (tick_lags == NULL)
    abort();
  want_ticks = ticks;
  nticks = 0;
  last_tick = 0;
  period_ns = period * 1000000;
  uv_timer_init(loop, &timer);
  uv_timer_start(&timer, periodic_cb, period, period);
  uv_run(loop, UV_RUN_DEFAULT);
  uv_close((uv_handle_t*) &timer, NULL);
  uv_run(loop, UV_RUN_DEFAULT);

  n = nticks;
  sort_u64(tick_lags, (size_t) n);
  /* p99 by nearest rank (element ceil(0.99 N) - 1), so that it is not
   * simply the maximum of 100 samples. */
  printf("{\"bench\":\"timer_periodic\",\"label\":\"%s\","
         "\"repeat_ms\":%d,\"samples\":%d,\"min_us\":%.1f,"
         "\"p50_us\":%.1f,\"p99_us\":%.1f,\"max_us\":%.1f}\n",
         label, (int) period, n, tick_lags[0] / 1e3,
         tick_lags[n / 2] / 1e3, tick_lags[(n * 99 + 99) / 100 - 1] / 1e3,
         tick_lags[n - 1] / 1e3);
  fflush(stdout);
  free(tick_lags);
}


static void count_cb(uv_check_t* handle) {
  iterations++;
}


static void repeat_cb(uv_timer_t* handle) {
  if (uv_hrtime() >= bench_end)
    uv_stop(loop);
}


static void print_rate(const char* bench, const char* label, int ms,
                       uint64_t t0, uint64_t t1, double c0, double c1) {
  double seconds;

  seconds = (t1 - t0) / 1e9;
  printf("{\"bench\":\"%s\",\"label\":\"%s\",%s\"ms\":%d,"
         "\"iterations\":%llu,\"iter_per_sec\":%.0f,"
         "\"cpu_us_per_iter\":%.2f}\n",
         bench, label,
         strcmp(bench, "timer_repeat") == 0 ? "\"repeat_ms\":1," : "",
         ms, (unsigned long long) iterations, iterations / seconds,
         c0 < 0 || iterations == 0 ? -1.0 : (c1 - c0) / iterations);
  fflush(stdout);
}


static void bench_repeat(const char* label, int ms) {
  uv_timer_t timer;
  uv_check_t check;
  uint64_t t0;
  uint64_t t1;
  double c0;
  double c1;

  uv_timer_init(loop, &timer);
  uv_check_init(loop, &check);
  uv_check_start(&check, count_cb);
  uv_unref((uv_handle_t*) &check);

  iterations = 0;
  uv_update_time(loop);
  t0 = uv_hrtime();
  c0 = cpu_us();
  bench_end = t0 + (uint64_t) ms * 1000000;
  uv_timer_start(&timer, repeat_cb, 1, 1);
  uv_run(loop, UV_RUN_DEFAULT);
  t1 = uv_hrtime();
  c1 = cpu_us();

  uv_close((uv_handle_t*) &timer, NULL);
  uv_close((uv_handle_t*) &check, NULL);
  uv_run(loop, UV_RUN_DEFAULT);
  print_rate("timer_repeat", label, ms, t0, t1, c0, c1);
}


static void spin_cb(uv_async_t* handle) {
  iterations++;
  if (uv_hrtime() >= bench_end)
    uv_close((uv_handle_t*) handle, NULL);
  else
    uv_async_send(handle);
}


static void never_cb(uv_timer_t* handle) {
}


static void bench_armed_poll(const char* label, int ms) {
  uv_async_t async;
  uv_timer_t timer;
  uint64_t t0;
  uint64_t t1;
  double c0;
  double c1;

  uv_async_init(loop, &async, spin_cb);
  uv_timer_init(loop, &timer);
  uv_timer_start(&timer, never_cb, 10000, 0);
  uv_unref((uv_handle_t*) &timer);

  iterations = 0;
  t0 = uv_hrtime();
  c0 = cpu_us();
  bench_end = t0 + (uint64_t) ms * 1000000;
  uv_async_send(&async);
  uv_run(loop, UV_RUN_DEFAULT);
  t1 = uv_hrtime();
  c1 = cpu_us();

  uv_close((uv_handle_t*) &timer, NULL);
  uv_run(loop, UV_RUN_DEFAULT);
  print_rate("armed_poll", label, ms, t0, t1, c0, c1);
}


int main(int argc, char** argv) {
  const char* label;
  const char* delays;
  const char* p;
  char* end;
  long delay;
  int samples;
  int period;
  int ticks;
  int ms;
  int i;

  label = "";
  delays = "1";
  samples = 200;
  period = 0;
  ticks = 100;
  ms = 2000;
  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--samples") == 0 && i + 1 < argc)
      samples = atoi(argv[++i]);
    else if (strcmp(argv[i], "--ms") == 0 && i + 1 < argc)
      ms = atoi(argv[++i]);
    else if (strcmp(argv[i], "--label") == 0 && i + 1 < argc)
      label = argv[++i];
    else if (strcmp(argv[i], "--delays") == 0 && i + 1 < argc)
      delays = argv[++i];
    else if (strcmp(argv[i], "--period") == 0 && i + 1 < argc)
      period = atoi(argv[++i]);
    else if (strcmp(argv[i], "--ticks") == 0 && i + 1 < argc)
      ticks = atoi(argv[++i]);
    else if (strcmp(argv[i], "--raw") == 0)
      raw = 1;
    else {
      fprintf(stderr,
              "usage: %s [--samples N] [--ms N] [--label TEXT] "
              "[--delays MS,MS...] [--period MS [--ticks N]] [--raw]\n",
              argv[0]);
      return 2;
    }
  }
  if (samples < 1 || ms < 1 || period < 0 || ticks < 1) {
    fprintf(stderr, "--samples, --ms and --ticks must be positive\n");
    return 2;
  }
  /* Check the whole list before measuring anything. */
  for (p = delays; *p != '\0'; p = *end == ',' ? end + 1 : end) {
    delay = strtol(p, &end, 10);
    if (end == p || delay < 0 || delay > 10000 || (*end != ',' && *end))
      break;
  }
  if (*p != '\0' || *delays == '\0') {
    fprintf(stderr, "--delays wants milliseconds separated by commas\n");
    return 2;
  }

  loop = uv_default_loop();
  for (p = delays; *p != '\0'; p = *end == ',' ? end + 1 : end) {
    delay = strtol(p, &end, 10);
    bench_oneshot(label, samples, (uint64_t) delay);
  }
  if (period > 0)
    bench_periodic(label, ticks, (uint64_t) period);
  bench_repeat(label, ms);
  bench_armed_poll(label, ms);
  return 0;
}
