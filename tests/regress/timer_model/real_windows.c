/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The same figures with the real kernel calls, counted.
 */

#include "timer_model.h"

/* real_windows: the same figures with the kernel's own calls. */
int real_windows(void) {
#ifndef _WIN32
  SKIP(WINDOWS_ONLY);
#else
  struct figures stale;
  struct figures steady;
  struct figures bursts;
  double calls[ARMING_MODES];
  uint64_t median;
  int early;
  int r;

  if (under_wine())
    SKIP("%s; needs real Windows: Wine has neither the tick nor the wait "
         "completion packet calls (the GitHub workflow runs it)", REAL_NOTE);
  real_mode = 1;
  SETUP();
  if (run_oneshots("real_windows", SAMPLES, 1, &median, &early) != 0)
    FAIL("%s: no %d samples within %d ms", REAL_NOTE, SAMPLES, WATCHDOG_MS);
  printf("{\"bench\": \"timer_model_median\", \"timeout_ms\": 1, "
         "\"median_ms\": %.3f, \"samples\": %d, \"early\": %d, "
         "\"stand_ins\": %s, \"model\": false}\n",
         ms(median), SAMPLES, early, have_stand_ins() ? "true" : "false");
  SETUP();
  r = measure_arming(calls);
  if (r == CASE_OK) {
    SETUP();
    r = measure_stale_wakeup(20, &stale);
  }
  if (r == CASE_OK) {
    SETUP();
    r = measure_io(0, &steady);
  }
  if (r == CASE_OK) {
    SETUP();
    r = measure_io(1, &bursts);
  }
  real_mode = 0;
  if (r != CASE_OK)
    return r;
  if (early != 0)
    FAIL("%s: %d of %d 1 ms timers ran early", REAL_NOTE, early, SAMPLES);
  return CASE_OK;
#endif
}
