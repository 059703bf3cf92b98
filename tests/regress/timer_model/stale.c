/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * Stale completions: a timer completion no longer wanted must neither
 * run a timer early nor wake a wait for nothing.
 */

#include "timer_model.h"

#ifdef _WIN32

struct stale {
  struct probe* p;
  uv_async_t async;
  int restart;       /* The async callback sleeps and restarts the timer. */
  int seen;
};


static void stale_async_cb(uv_async_t* handle) {
  struct stale* s;

  s = handle->data;
  s->seen++;
  /* Under load the timer may have run already: then there is nothing to
   * restart, and the round has its one sample.
   */
  if (!s->restart || !uv_is_active((uv_handle_t*) &s->p->timer))
    return;
  /* The armed high-resolution timer (3 ms) fires while this callback
   * sleeps; its completion is queued. The timer moves to 10 ms from the
   * loop time, so the next wait must not end on that completion.
   */
  Sleep(5);
  s->p->due = uv_now(s->p->loop) + 10;
  uv_timer_start(&s->p->timer, probe_oneshot_cb, 10, 0);
}


static void send_later(void* arg) {
  Sleep(1);
  uv_async_send(arg);
}


/* stale_wakeup: a 20 ms timer's wait is woken after ~1 ms; the callback
 * stops the timer, so the loop waits with no timeout until the second
 * send, ~40 ms later, which ends the round.
 */
struct wakeup {
  uv_loop_t* loop;
  uv_async_t async;
  uv_timer_t timer;
  int seen;          /* Async callbacks this round. */
  int fired;         /* Timer callbacks (should be none). */
};


static void wakeup_async_cb(uv_async_t* handle) {
  struct wakeup* w;

  w = handle->data;
  w->seen++;
  uv_timer_stop(&w->timer);
  if (w->seen >= 2)
    uv_stop(w->loop);
}


static void wakeup_timer_cb(uv_timer_t* handle) {
  ((struct wakeup*) handle->data)->fired++;
}


static void wakeup_sender(void* arg) {
  Sleep(1);
  uv_async_send(arg);
  Sleep(40);
  uv_async_send(arg);
}

int measure_stale_wakeup(int rounds, struct figures* f) {
  struct wakeup w;
  uv_check_t check;
  uv_thread_t tid;
  uv_loop_t loop;
  uint64_t start;
  int i;

  memset(&w, 0, sizeof(w));
  CHECK_UV(uv_loop_init(&loop));
  w.loop = &loop;
  CHECK_UV(uv_async_init(&loop, &w.async, wakeup_async_cb));
  CHECK_UV(uv_timer_init(&loop, &w.timer));
  w.async.data = &w;
  w.timer.data = &w;
  CHECK_UV(watch(&loop, &check, NULL));
  start = qpc_ns();
  for (i = 0; i < rounds; i++) {
    w.seen = 0;
    uv_update_time(&loop);
    CHECK_UV(uv_timer_start(&w.timer, wakeup_timer_cb, 20, 0));
    CHECK_UV(uv_thread_create(&tid, wakeup_sender, &w.async));
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK_UV(uv_thread_join(&tid));
  }
  f->seconds = (double) (qpc_ns() - start) / 1e9;
  unwatch(&check);
  uv_close((uv_handle_t*) &w.async, NULL);
  uv_close((uv_handle_t*) &w.timer, NULL);
  CHECK_UV(uv_run(&loop, UV_RUN_DEFAULT));
  CHECK_UV(uv_loop_close(&loop));
  take_figures(f);
  printf("{\"bench\": \"timer_model_stale\", \"rounds\": %d, "
         "\"spurious\": %ld, \"timer_wakeups\": %ld, \"wakeups\": %ld, "
         "\"timers_fired\": %d, \"calls\": %ld, \"blocking_waits\": %ld, "
         "\"stand_ins\": %s, \"model\": %s}\n",
         rounds, counts.spurious, counts.timer_wakeups, counts.wakeups,
         w.fired, f->calls, counts.blocking,
         have_stand_ins() ? "true" : "false", real_mode ? "false" : "true");
  fflush(stdout);
  fprintf(stderr,
          "timer_model/stale_wakeup (%s): %d rounds (a 20 ms timer, its "
          "wait woken after ~1 ms and the timer stopped, then a wait with "
          "no timeout): spurious wake-ups=%ld, wake-ups by timer "
          "completions only=%ld, timers that ran before the wake-up=%d, "
          "extra calls=%ld\n",
          note(), rounds, counts.spurious, counts.timer_wakeups, w.fired,
          f->calls);
  return CASE_OK;
}


/* stale_infinite: a completion with the loop's key, as one the cancel
 * could not withdraw, reaches a wait with no timeout. uv__poll() must wait
 * again, not return with nothing done; with UV_METRICS_IDLE_TIME that wait
 * is the poll's second.
 */
static int stale_seen;


static void stale_seen_cb(uv_async_t* handle) {
  (void) handle;
  stale_seen++;
}


static void stale_sender(void* arg) {
  Sleep(50);
  uv_async_send(arg);
}

#endif  /* _WIN32 */


/* The worst case: the stand-in cannot withdraw a queued completion. */
int stale_completion(void) {
#ifndef _WIN32
  SKIP(WINDOWS_ONLY);
#else
  struct probe p;
  struct stale s;
  uv_check_t check;
  uv_thread_t tid;
  uv_loop_t loop;
  int rounds;
  int i;

  NEEDS_STAND_INS();
  SETUP();
  withdraw = 0;
  rounds = 20;
  memset(&s, 0, sizeof(s));
  CHECK_UV(uv_loop_init(&loop));
  CHECK_EQ(probe_init(&p, &loop), 0);
  CHECK_UV(watch(&loop, &check, &p.due));
  s.p = &p;
  CHECK_UV(uv_async_init(&loop, &s.async, stale_async_cb));
  s.async.data = &s;
  uv_unref((uv_handle_t*) &s.async);

  /* Stale completions: the wait ends at once on the async's wake-up, the
   * callback outlasts the 3 ms timer and restarts it for 10 ms.
   */
  s.restart = 1;
  for (i = 0; i < rounds && !p.timed_out; i++) {
    CHECK_UV(probe_start(&p, 3));
    CHECK_UV(uv_async_send(&s.async));
    uv_run(&loop, UV_RUN_DEFAULT);
  }

  /* A wake-up from another thread 1 ms into a 3 ms timer's wait. */
  s.restart = 0;
  for (i = 0; i < rounds && !p.timed_out; i++) {
    CHECK_UV(probe_start(&p, 3));
    CHECK_UV(uv_thread_create(&tid, send_later, &s.async));
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK_UV(uv_thread_join(&tid));
  }

  report("stale_completion", &p);
  fprintf(stderr,
          "timer_model/stale_completion (%s): worst case, a queued "
          "completion cannot be withdrawn: stale completions left "
          "queued=%ld dequeued=%ld, spurious wake-ups=%ld, async "
          "wake-ups=%d\n",
          MODEL_NOTE, counts.stale_left, counts.stale_dequeued,
          counts.spurious, s.seen);
  unwatch(&check);
  uv_close((uv_handle_t*) &s.async, NULL);
  probe_close(&p);
  CHECK_UV(uv_loop_close(&loop));
  if (p.timed_out || p.count != 2 * rounds)
    FAIL("%s: %d of %d timers ran", MODEL_NOTE, p.count, 2 * rounds);
  if (p.early != 0)
    FAIL("%s: %d of %d timers ran early", MODEL_NOTE, p.early, 2 * rounds);
  if (s.seen < rounds)
    FAIL("%s: %d of %d wake-ups seen", MODEL_NOTE, s.seen, 2 * rounds);
  return CASE_OK;
#endif
}


int stale_wakeup(void) {
#ifndef _WIN32
  SKIP(WINDOWS_ONLY);
#else
  struct figures f;
  int r;

  SETUP();
  r = measure_stale_wakeup(20, &f);
  if (r != CASE_OK)
    return r;
  if (f.spurious != 0)
    FAIL("%s: %ld spurious wake-ups in 20 rounds: a stale timer "
         "completion woke a wait with no timeout", MODEL_NOTE, f.spurious);
  return CASE_OK;
#endif
}


int stale_infinite(void) {
#ifndef _WIN32
  SKIP(WINDOWS_ONLY);
#else
  uv_async_t async;
  uv_thread_t tid;
  uv_loop_t loop;
  int metrics;
  int missed;
  int i;

  NEEDS_STAND_INS();
  SETUP();
  missed = 0;
  for (i = 0; i < 2 * STALE_ROUNDS; i++) {
    metrics = i % 2;
    CHECK_UV(uv_loop_init(&loop));
    if (metrics)
      CHECK_UV(uv_loop_configure(&loop, UV_METRICS_IDLE_TIME));
    CHECK_UV(uv_async_init(&loop, &async, stale_seen_cb));
    stale_seen = 0;
    stale_key = (ULONG_PTR) loop.internal_fields;
    CHECK_UV(uv_thread_create(&tid, stale_sender, &async));
    uv_run(&loop, UV_RUN_ONCE);
    missed += stale_seen == 0;
    CHECK_UV(uv_thread_join(&tid));
    stale_key = 0;
    uv_close((uv_handle_t*) &async, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK_UV(uv_loop_close(&loop));
  }
  fprintf(stderr,
          "timer_model/stale_infinite (%s): %d of %d UV_RUN_ONCE runs "
          "without the timer returned before the uv_async_send()\n",
          MODEL_NOTE, missed, 2 * STALE_ROUNDS);
  if (missed != 0)
    FAIL("%s: %d of %d UV_RUN_ONCE runs returned with nothing done after "
         "a stale timer completion", MODEL_NOTE, missed, 2 * STALE_ROUNDS);
  return CASE_OK;
#endif
}
