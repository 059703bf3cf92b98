/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * Timers and packets: none made without the calls, every one closed with
 * its loop.
 */

#include "timer_model.h"

int stand_ins_missing(void) {
#ifndef _WIN32
  SKIP(WINDOWS_ONLY);
#else
  uint64_t median;
  int early;
  int which;

  NEEDS_STAND_INS();
  for (which = 0; which < 2; which++) {
    SETUP();
    stand_ins(0);
#ifdef UVPATCH_HAVE_WAIT_PACKETS
    /* Second round: only the cancel call is missing. */
    if (which == 1) {
      pNtCreateWaitCompletionPacket = model_create;
      pNtAssociateWaitCompletionPacket = model_associate;
    }
#endif
    if (run_oneshots(which == 0 ? "stand_ins_missing(all)" :
                                  "stand_ins_missing(cancel)",
                     10, 1, &median, &early) != 0) {
      stand_ins(1);
      FAIL("%s: not every timer ran", MODEL_NOTE);
    }
    stand_ins(1);
    fprintf(stderr,
            "timer_model/stand_ins_missing (%s): %s: timers created=%ld "
            "packets created=%ld, waits in ms=%ld\n",
            MODEL_NOTE, which == 0 ? "all missing" : "cancel missing",
            counts.timers_created, counts.packets_created,
            counts.ms_waits);
    if (early != 0)
      FAIL("%s: %d timers ran early", MODEL_NOTE, early);
    if (counts.timers_created != 0 || counts.packets_created != 0)
      FAIL("%s: %ld timers and %ld packets created without the calls",
           MODEL_NOTE, counts.timers_created, counts.packets_created);
    if (counts.ms_waits == 0 || counts.set_timer != 0)
      FAIL("%s: no fallback: %ld waits in ms, %ld timers set", MODEL_NOTE,
           counts.ms_waits, counts.set_timer);
  }
  return CASE_OK;
#endif
}


int loop_cycles_close(void) {
#ifndef _WIN32
  SKIP(WINDOWS_ONLY);
#else
  const char* how;
  long before;
  long after;
  int fired;
  int i;

  NEEDS_STAND_INS();
  SETUP();
  fired = 0;
  CHECK_EQ(one_cycle(&fired), 0);
  before = count_handles(&how);
  memset(&counts, 0, sizeof(counts));
  fired = 0;
  for (i = 0; i < CYCLES; i++)
    if (one_cycle(&fired) != 0)
      FAIL("%s: cycle %d: a loop call did not return 0", MODEL_NOTE, i);
  after = count_handles(&how);
  fprintf(stderr,
          "timer_model/loop_cycles_close (%s): cycles=%d timers "
          "created=%ld closed=%ld packets created=%ld closed=%ld closed "
          "while associated=%ld handles before=%ld after=%ld\n",
          MODEL_NOTE, CYCLES, counts.timers_created, counts.timers_closed,
          counts.packets_created, counts.packets_closed,
          counts.closed_associated, before, after);
  CHECK_EQ(fired, CYCLES);
  if (counts.packets_created != CYCLES || counts.timers_created != CYCLES)
    FAIL("%s: %ld packets and %ld timers for %d loops", MODEL_NOTE,
         counts.packets_created, counts.timers_created, CYCLES);
  if (counts.packets_closed != counts.packets_created ||
      counts.timers_closed != counts.timers_created) {
    FAIL("%s: %ld of %ld packets and %ld of %ld timers closed", MODEL_NOTE,
         counts.packets_closed, counts.packets_created,
         counts.timers_closed, counts.timers_created);
  }
  if (counts.closed_associated != 0)
    FAIL("%s: %ld packets closed while still associated", MODEL_NOTE,
         counts.closed_associated);
  if (after > before + HANDLE_SLACK)
    FAIL("%s: %ld handles before %d cycles, %ld after", MODEL_NOTE, before,
         CYCLES, after);
  return CASE_OK;
#endif
}
