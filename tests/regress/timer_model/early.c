/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * A timer that expires before its due time.
 */

#include "timer_model.h"

#ifdef _WIN32

/* early_completion: the timer expires 1 ms before its due time. Each
 * uv_run(UV_RUN_ONCE) with a 5 ms timer must still run it, and not early:
 * uv__poll() takes the timer's completion as a timeout and checks it.
 */
static uint64_t early_ran_at;


static void early_cb(uv_timer_t* handle) {
  (void) handle;
  early_ran_at = uv_hrtime();
}

#endif  /* _WIN32 */


int early_completion(void) {
#ifndef _WIN32
  SKIP(WINDOWS_ONLY);
#else
  uv_timer_t timer;
  uv_loop_t loop;
  uint64_t start;
  int missed;
  int early;
  int i;

  NEEDS_STAND_INS();
  SETUP();
  CHECK_UV(uv_loop_init(&loop));
  CHECK_UV(uv_timer_init(&loop, &timer));
  early_ns = 1000000;
  missed = 0;
  early = 0;
  for (i = 0; i < SAMPLES / 2; i++) {
    early_ran_at = 0;
    start = uv_hrtime();
    uv_update_time(&loop);
    CHECK_UV(uv_timer_start(&timer, early_cb, 5, 0));
    uv_run(&loop, UV_RUN_ONCE);
    if (early_ran_at == 0) {
      missed++;
      uv_run(&loop, UV_RUN_DEFAULT);
    }
    if (early_ran_at < start + 4 * 1000000)
      early++;
  }
  early_ns = 0;
  fprintf(stderr,
          "timer_model/early_completion (%s): %d of %d UV_RUN_ONCE runs "
          "without the timer, %d early, %ld timer completions\n",
          MODEL_NOTE, missed, SAMPLES / 2, early, counts.posted);
  uv_close((uv_handle_t*) &timer, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK_UV(uv_loop_close(&loop));
  if (counts.posted == 0)
    FAIL("%s: the timer never expired early (no completion)", MODEL_NOTE);
  if (missed != 0 || early != 0)
    FAIL("%s: %d UV_RUN_ONCE runs of %d ended before the 5 ms timer, "
         "%d ran it early", MODEL_NOTE, missed, SAMPLES / 2, early);
  return CASE_OK;
#endif
}


/* early_repeats: see the list of cases above. */
int early_repeats(void) {
#ifndef _WIN32
  SKIP(WINDOWS_ONLY);
#else
  uint64_t late[SAMPLES / 2];
  uv_timer_t timer;
  uv_loop_t loop;
  uint64_t due;
  int early;
  int i;

  NEEDS_STAND_INS();
  SETUP();
  CHECK_UV(uv_loop_init(&loop));
  CHECK_UV(uv_timer_init(&loop, &timer));
  early_ns = 2000000;
  early = 0;
  for (i = 0; i < SAMPLES / 2; i++) {
    uv_update_time(&loop);
    due = (uv_now(&loop) + 10) * 1000000;
    early_ran_at = 0;
    CHECK_UV(uv_timer_start(&timer, early_cb, 10, 0));
    uv_run(&loop, UV_RUN_DEFAULT);
    early += early_ran_at < due;
    late[i] = early_ran_at > due ? early_ran_at - due : 0;
  }
  early_ns = 0;
  sort_u64(late, SAMPLES / 2);
  fprintf(stderr,
          "timer_model/early_repeats (%s): %d 10 ms timers, %d early, "
          "lateness median=%.3f max=%.3f ms, longest wait %lu ms, "
          "timer sets=%ld\n", MODEL_NOTE, SAMPLES / 2, early,
          ms(late[SAMPLES / 4]), ms(late[SAMPLES / 2 - 1]),
          (unsigned long) counts.max_wait, counts.set_timer);
  uv_close((uv_handle_t*) &timer, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK_UV(uv_loop_close(&loop));
  if (early != 0)
    FAIL("%s: %d timers ran early", MODEL_NOTE, early);
  CHECK_LE(counts.max_wait, 10);
  return CASE_OK;
#endif
}
