/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * What arming the high-resolution timer costs per poll.
 */

#include "timer_model.h"

#ifdef _WIN32

static void noop_async_cb(uv_async_t* handle) {
  (void) handle;
}


static void noop_timer_cb(uv_timer_t* handle) {
  (void) handle;
}


/* arming_cost: calls per blocking poll, one uv_run(UV_RUN_ONCE) a round.
 * The 1 ms timer's rounds end when it fires; the others' on an
 * uv_async_send() sent before.
 */


static const char* arming_names[ARMING_MODES] = {
  "1ms", "16ms", "100ms", "1s", "none"
};
static const uint64_t arming_timeouts[ARMING_MODES] = { 1, 16, 100, 1000, 0 };


static double armed_calls_1ms;  /* Per armed poll, 1 ms timer. */


int measure_arming(double* calls) {
  uv_loop_t loop;
  uv_timer_t timer;
  uv_async_t async;
  long polls;
  int rounds;
  int mode;
  int i;

  rounds = 20;
  for (mode = 0; mode < ARMING_MODES; mode++) {
    CHECK_UV(uv_loop_init(&loop));
    CHECK_UV(uv_timer_init(&loop, &timer));
    CHECK_UV(uv_async_init(&loop, &async, noop_async_cb));
    memset(&counts, 0, sizeof(counts));
    for (i = 0; i < rounds; i++) {
      uv_update_time(&loop);
      if (arming_timeouts[mode] != 0)
        CHECK_UV(uv_timer_start(&timer, noop_timer_cb,
                                arming_timeouts[mode], 0));
      if (mode != 0)
        CHECK_UV(uv_async_send(&async));
      uv_run(&loop, UV_RUN_ONCE);
      uv_timer_stop(&timer);
    }
    polls = counts.blocking;
    calls[mode] = polls ? (double) arming_calls() / polls : 0;
    if (mode == 0)
      armed_calls_1ms = counts.armed ?
                        (double) arming_calls() / counts.armed : 0;
    printf("{\"bench\": \"timer_model_arming\", \"timer\": \"%s\", "
           "\"calls_per_poll\": %.2f, \"cancel\": %ld, \"set_timer\": %ld, "
           "\"associate\": %ld, \"rounds\": %d, \"blocking_waits\": %ld, "
           "\"armed_polls\": %ld, "
           "\"stand_ins\": %s, \"model\": %s}\n",
           arming_names[mode], calls[mode], counts.cancel, counts.set_timer,
           counts.associate, rounds, polls, counts.armed,
           have_stand_ins() ? "true" : "false",
           real_mode ? "false" : "true");
    fflush(stdout);
    uv_close((uv_handle_t*) &timer, NULL);
    uv_close((uv_handle_t*) &async, NULL);
    CHECK_UV(uv_run(&loop, UV_RUN_DEFAULT));
    CHECK_UV(uv_loop_close(&loop));
  }
  fprintf(stderr,
          "timer_model/arming_cost (%s): Nt*WaitCompletionPacket + "
          "SetWaitableTimer calls per blocking poll (one uv_run(UV_RUN_ONCE) "
          "each): 1 ms timer %.2f, 16 ms %.2f, 100 ms %.2f, 1 s %.2f, no "
          "timer %.2f; 1 ms timer, per armed poll %.2f%s\n",
          note(), calls[0], calls[1], calls[2], calls[3], calls[4],
          armed_calls_1ms, have_stand_ins() ? "" : " (base: nothing to arm)");
  return CASE_OK;
}

#endif  /* _WIN32 */


int arming_cost(void) {
#ifndef _WIN32
  SKIP(WINDOWS_ONLY);
#else
  double calls[ARMING_MODES];
  int r;

  SETUP();
  r = measure_arming(calls);
  if (r != CASE_OK)
    return r;
  if (calls[4] != 0)
    FAIL("%s: %.2f arming calls per poll with no timer", MODEL_NOTE,
         calls[4]);
  if (have_stand_ins() && (calls[0] == 0 || calls[1] == 0))
    FAIL("%s: the high-resolution timer was not armed", MODEL_NOTE);
  if (armed_calls_1ms > 3.5)
    FAIL("%s: %.2f extra calls per armed poll (bound 3.5)",
         MODEL_NOTE, armed_calls_1ms);
  if (calls[2] != 0 || calls[3] != 0)
    FAIL("%s: %.2f and %.2f arming calls per poll with a 100 ms and a 1 s "
         "timer, where the tick is harmless", MODEL_NOTE, calls[2],
         calls[3]);
  return CASE_OK;
#endif
}
