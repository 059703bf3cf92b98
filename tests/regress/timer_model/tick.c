/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The tick: one-shot timers end on the 15.625 ms grid unless the
 * high-resolution timer is armed.
 */

#include "timer_model.h"

int tick_1ms_median(void) {
#ifndef _WIN32
  SKIP(WINDOWS_ONLY);
#else
  uint64_t median;
  int early;

  SETUP();
  if (run_oneshots("tick_1ms_median", SAMPLES, 1, &median, &early) != 0)
    FAIL("%s: no %d samples within %d ms", MODEL_NOTE, SAMPLES,
         WATCHDOG_MS);
  printf("{\"bench\": \"timer_model_median\", \"timeout_ms\": 1, "
         "\"median_ms\": %.3f, \"samples\": %d, \"early\": %d, "
         "\"stand_ins\": %s, \"model\": true}\n",
         ms(median), SAMPLES, early, have_stand_ins() ? "true" : "false");
  fflush(stdout);
  if (early != 0)
    FAIL("%s: %d of %d 1 ms timers ran early", MODEL_NOTE, early, SAMPLES);
  if (!have_stand_ins()) {
    /* The base: the wait ends on the model's tick. */
    if (median >= 14 * 1000000)
      FAIL("%s: median of %d one-shot 1 ms timers %.3f ms >= 14 ms, the "
           "wait ends on the 15.625 ms tick (base)", MODEL_NOTE, SAMPLES,
           ms(median));
    SKIP("%s: median %.3f ms on the base, neither >= 14 ms nor a pass: "
         "the model's tick did not work", MODEL_NOTE, ms(median));
  }
  if (median >= 8 * 1000000)
    FAIL("%s: median of %d one-shot 1 ms timers %.3f ms (bound 8 ms)",
         MODEL_NOTE, SAMPLES, ms(median));
  return CASE_OK;
#endif
}


/* tick_lateness: one-shot timers of each length, a few each. */
int tick_lateness(void) {
#ifndef _WIN32
  SKIP(WINDOWS_ONLY);
#else
  static const uint64_t lengths[] = { 1, 8, 15, 16, 17, 20, 24, 31, 32, 33,
                                      48, 100 };
  struct probe p;
  uv_loop_t loop;
  uint64_t late;
  long calls;
  int n;
  int i;
  int k;

  SETUP();
  n = 3;
  CHECK_UV(uv_loop_init(&loop));
  CHECK_EQ(probe_init(&p, &loop), 0);
  for (k = 0; k < (int) ARRAY_SIZE(lengths); k++) {
    p.count = 0;
    calls = arming_calls();
    for (i = 0; i < n && !p.timed_out; i++) {
      CHECK_UV(probe_start(&p, lengths[k]));
      uv_run(&loop, UV_RUN_DEFAULT);
    }
    if (p.timed_out || p.count != n)
      FAIL("%s: %d of %d %d ms timers ran", note(), p.count, n,
           (int) lengths[k]);
    sort_u64(p.samples, (size_t) n);
    late = p.samples[n / 2] > lengths[k] * 1000000 ?
           p.samples[n / 2] - lengths[k] * 1000000 : 0;
    printf("{\"bench\": \"timer_model_lateness\", \"timeout_ms\": %d, "
           "\"median_late_ms\": %.3f, \"calls_per_timer\": %.2f, "
           "\"samples\": %d, \"stand_ins\": %s, \"model\": true}\n",
           (int) lengths[k], ms(late), (double) (arming_calls() - calls) / n,
           n, have_stand_ins() ? "true" : "false");
    fprintf(stderr, "timer_model/tick_lateness (%s): %3d ms timer: median "
            "%.3f ms late, %.2f extra calls per timer\n", MODEL_NOTE,
            (int) lengths[k], ms(late),
            (double) (arming_calls() - calls) / n);
  }
  fflush(stdout);
  probe_close(&p);
  CHECK_UV(uv_loop_close(&loop));
  if (p.early != 0)
    FAIL("%s: %d timers ran early", note(), p.early);
  return CASE_OK;
#endif
}
