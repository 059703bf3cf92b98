/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * Cancels that answer STATUS_PENDING, or fail.
 */

#include "timer_model.h"

int cancel_pending(void) {
#ifndef _WIN32
  SKIP(WINDOWS_ONLY);
#else
  uint64_t median;
  int early;
  int r;

  NEEDS_STAND_INS();
  SETUP();
  /* Each round's first wait ends at once, so the cancel after it finds
   * the association waiting: every third answers STATUS_PENDING.
   */
  pending_every = 3;
  kick_rounds = 1;
  r = run_oneshots("cancel_pending", SAMPLES, 1, &median, &early);
  kick_rounds = 0;
  if (r != 0)
    FAIL("%s: not every timer ran within %d ms (a timer lost?)", MODEL_NOTE,
         WATCHDOG_MS);
  fprintf(stderr,
          "timer_model/cancel_pending (%s): STATUS_PENDING answers=%ld, "
          "then a wait in ms=%ld, another wait=%ld; stale completions "
          "dequeued=%ld, spurious wake-ups=%ld\n",
          MODEL_NOTE, counts.pending, counts.pending_ms,
          counts.pending_other, counts.stale_dequeued, counts.spurious);
  if (early != 0)
    FAIL("%s: %d of %d timers ran early", MODEL_NOTE, early, SAMPLES);
  if (counts.pending == 0)
    FAIL("%s: the stand-in never answered STATUS_PENDING", MODEL_NOTE);
  /* The last answer may come from uv_loop_close(), with no wait after. */
  if (counts.pending_ms == 0 || counts.pending_other != 0)
    FAIL("%s: after STATUS_PENDING, %ld waits in ms and %ld others",
         MODEL_NOTE, counts.pending_ms, counts.pending_other);
  return CASE_OK;
#endif
}


/* cancel_fails: every cancel fails (the association stays as it is), for
 * 50 one-shot 1 ms timers. Each poll
 * under two ticks must still try the timer again: an association that
 * expired and was dequeued is over, so the next one is accepted, and the
 * timers stay precise. A loop that stops arming after a failed cancel
 * waits in ticks from then on.
 */
int cancel_fails(void) {
#ifndef _WIN32
  SKIP(WINDOWS_ONLY);
#else
  uint64_t median;
  int early;
  int r;

  NEEDS_STAND_INS();
  SETUP();
  fail_cancels = 1000000;
  r = run_oneshots("cancel_fails", SAMPLES, 1, &median, &early);
  fprintf(stderr,
          "timer_model/cancel_fails (%s): %ld cancels failed, armed "
          "blocking polls=%ld of %ld\n",
          MODEL_NOTE, counts.cancel_failed, counts.armed, counts.blocking);
  fail_cancels = 0;
  if (r != 0)
    FAIL("%s: not every timer ran within %d ms", MODEL_NOTE, WATCHDOG_MS);
  if (early != 0)
    FAIL("%s: %d timers ran early", MODEL_NOTE, early);
  if (counts.cancel_failed == 0)
    FAIL("%s: no cancel was made", MODEL_NOTE);
  if (median >= 8 * 1000000)
    FAIL("%s: median of %d 1 ms timers %.3f ms (bound 8 ms): the "
         "high-resolution timer was lost after a failed cancel",
         MODEL_NOTE, SAMPLES, ms(median));
  return CASE_OK;
#endif
}
