/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The table of cases of timer_model.
 */

#define HARNESS_MAIN
#include "timer_model.h"


static const test_case cases[] = {
  { "tick_1ms_median", tick_1ms_median },
  { "stale_completion", stale_completion, CASE_THREADS },
  { "stale_wakeup", stale_wakeup, CASE_THREADS },
  { "io_heavy", io_heavy, CASE_THREADS },
  { "cancel_pending", cancel_pending },
  { "stand_ins_missing", stand_ins_missing },
  { "loop_cycles_close", loop_cycles_close },
  { "arming_cost", arming_cost },
  { "tick_lateness", tick_lateness },
  { "cancel_fails", cancel_fails },
  { "zero_timeout_drain", zero_timeout_drain },
  { "early_completion", early_completion },
  { "stale_infinite", stale_infinite, CASE_THREADS },
  { "early_repeats", early_repeats },
  { "wakeup_burst", wakeup_burst, CASE_THREADS },
  { "real_windows", real_windows, CASE_THREADS },
  { NULL, NULL }
};


int main(int argc, char** argv) {
  return harness_main(cases, argc, argv);
}
