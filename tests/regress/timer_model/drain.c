/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * An embedder that drains the loop's completion port itself.
 */

#include "timer_model.h"

#ifdef _WIN32

/* zero_timeout_drain: an armed wait for a 10 ms timer is ended at once by
 * uv_async_send(), a uv_run(UV_RUN_NOWAIT) polls with timeout 0, and then,
 * in a prepare callback (after the loop time was read, before the poll),
 * an embedder waits past the deadline and drains loop->iocp itself,
 * taking the timer's completion if one is queued. The next wait must still
 * end at once: the timer is due by then.
 */
struct drain {
  struct probe* p;
  uv_prepare_t prepare;
  uv_async_t async;
  int active;
  uint64_t drained_at;   /* uv_hrtime() when the embedder was done. */
  long taken;            /* Timer completions the embedder took. */
  uint64_t late[SAMPLES];
  int n;
};


static void drain_async_cb(uv_async_t* handle) {
  (void) handle;
}


/* Whether a timer completion is queued and not withdrawn. */
static int timer_queued(void) {
  int found;
  int i;

  found = 0;
  EnterCriticalSection(&model_lock);
  for (i = 0; i < MAX_POSTED; i++)
    if (posted[i].used && !posted[i].withdrawn)
      found = 1;
  LeaveCriticalSection(&model_lock);
  return found;
}


static void drain_prepare_cb(uv_prepare_t* handle) {
  OVERLAPPED_ENTRY entries[16];
  struct drain* d;
  uint64_t until;
  ULONG count;
  ULONG i;
  int timer_only;
  int stale_only;

  d = handle->data;
  if (!d->active)
    return;
  d->active = 0;
  while (uv_hrtime() < d->p->due * 1000000 + 2000000)
    SwitchToThread();
  /* Under load the stand-in's thread can post late: give it 30 ms. */
  until = uv_hrtime() + 30000000;
  while (!timer_queued() && uv_hrtime() < until)
    SwitchToThread();
  count = 0;
  if (real_gqcs(handle->loop->iocp, entries, ARRAY_SIZE(entries), &count, 0,
                FALSE)) {
    count = account(entries, count, &timer_only, &stale_only);
    /* Put back what is not the timer's (none expected). */
    for (i = 0; i < count; i++) {
      if (entries[i].lpOverlapped == NULL)
        d->taken++;
      else
        PostQueuedCompletionStatus(handle->loop->iocp,
                                   entries[i].dwNumberOfBytesTransferred,
                                   entries[i].lpCompletionKey,
                                   entries[i].lpOverlapped);
    }
  }
  d->drained_at = uv_hrtime();
  drained = 1;
}


static void drain_timer_cb(uv_timer_t* handle) {
  struct drain* d;
  uint64_t now;

  d = ((struct probe*) handle->data)->loop->data;
  now = uv_hrtime();
  probe_record(handle->data, now);
  if (d->drained_at != 0 && d->n < SAMPLES)
    d->late[d->n++] = now - d->drained_at;
}

#endif  /* _WIN32 */


int zero_timeout_drain(void) {
#ifndef _WIN32
  SKIP(WINDOWS_ONLY);
#else
  struct drain d;
  struct probe p;
  uv_loop_t loop;
  int rounds;
  int ran;
  int i;

  NEEDS_STAND_INS();
  SETUP();
  rounds = 20;
  memset(&d, 0, sizeof(d));
  CHECK_UV(uv_loop_init(&loop));
  loop.data = &d;
  CHECK_EQ(probe_init(&p, &loop), 0);
  d.p = &p;
  CHECK_UV(uv_prepare_init(&loop, &d.prepare));
  CHECK_UV(uv_prepare_start(&d.prepare, drain_prepare_cb));
  uv_unref((uv_handle_t*) &d.prepare);
  d.prepare.data = &d;
  CHECK_UV(uv_async_init(&loop, &d.async, drain_async_cb));
  uv_unref((uv_handle_t*) &d.async);
  for (i = 0; i < rounds && !p.timed_out; i++) {
    uv_update_time(&loop);
    p.timeout = 10;
    p.due = uv_now(&loop) + 10;
    p.start = uv_hrtime();
    d.drained_at = 0;
    CHECK_UV(uv_timer_start(&p.timer, drain_timer_cb, 10, 0));
    CHECK_UV(uv_async_send(&d.async));
    ran = p.count;
    uv_run(&loop, UV_RUN_ONCE);     /* An armed wait, ended at once. */
    uv_run(&loop, UV_RUN_NOWAIT);   /* A poll with timeout 0. */
    /* The embedder drains, then the loop waits; unless, under load, the
     * timer ran already.
     */
    d.active = p.count == ran;
    uv_run(&loop, UV_RUN_DEFAULT);
    d.active = 0;
  }
  sort_u64(d.late, (size_t) d.n);
  fprintf(stderr,
          "timer_model/zero_timeout_drain (%s): %d rounds, timer "
          "completions the embedder took=%ld; from the drain to the "
          "callback: median %.3f ms, max %.3f ms; early=%d; waits after "
          "the drain, past the deadline, that blocked=%ld of %d\n",
          MODEL_NOTE, rounds, d.taken, d.n ? ms(d.late[d.n / 2]) : 0.0,
          d.n ? ms(d.late[d.n - 1]) : 0.0, p.early, counts.drained_blocked,
          d.n);
  uv_close((uv_handle_t*) &d.prepare, NULL);
  uv_close((uv_handle_t*) &d.async, NULL);
  probe_close(&p);
  CHECK_UV(uv_loop_close(&loop));
  /* Under load a round's timer can run before the drain: not counted. */
  if (p.timed_out || p.count != rounds || d.n < rounds / 4)
    FAIL("%s: %d of %d timers ran, %d after the drain", MODEL_NOTE,
         p.count, rounds, d.n);
  if (p.early != 0)
    FAIL("%s: %d timers ran early", MODEL_NOTE, p.early);
  /* Exact, not timed: the drain ends past the deadline, so the next wait
   * must not block (the lateness above is the machine's).
   */
  if (counts.drained_blocked != 0)
    FAIL("%s: %ld of %d waits after the drain blocked with the timer due "
         "(median %.3f ms from the drain to the callback): the wait "
         "trusted an association whose completion was gone", MODEL_NOTE,
         counts.drained_blocked, d.n, ms(d.late[d.n / 2]));
  return CASE_OK;
#endif
}
