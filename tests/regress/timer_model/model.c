/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The model's hook of GetQueuedCompletionStatusEx(), with the tick and
 * what it counts, and of the waitable timers and CloseHandle().
 */

#include "timer_model.h"

#ifdef _WIN32

gqcs_fn real_gqcs;
set_timer_fn real_set_timer;
create_timer_fn real_create_timer;
close_fn real_close;

/* The kernel's own calls, for real_windows: what libuv found in ntdll. */
create_fn kernel_create;
associate_fn kernel_associate;
cancel_fn kernel_cancel;

CRITICAL_SECTION model_lock;
struct packet packets[MAX_PACKETS];
struct posted posted[MAX_POSTED];
struct counts counts;
HANDLE timers[MAX_PACKETS];
uint64_t timer_due[MAX_PACKETS]; /* QPC ns a timer is set for. */
ULONG_PTR real_keys[MAX_KEYS]; /* Keys libuv associated (real). */
int real_nkeys;
int real_mode;         /* Count the kernel's calls, replace none. */
int tick_model;        /* Round finite timeouts up to the grid. */
int withdraw;          /* Cancels withdraw queued completions. */
int pending_every;     /* Answer STATUS_PENDING every Nth cancel. */
int pending_round;     /* Last cancel answered STATUS_PENDING. */
int fail_cancels;      /* Cancels still to fail (cancel_fails). */
uint64_t early_ns;     /* Timers expire this early (ns). */
ULONG_PTR stale_key;   /* stale_infinite: post a completion with this
                               * key to the next blocking wait. */
int associated;        /* SetWaitableTimer() was called since the
                               * last GetQueuedCompletionStatusEx() call. */
uv_loop_t* watched;    /* The loop a check handle watches. */
int drained;           /* The embedder drained the port. */
int installed;


uint64_t qpc_ns(void) {
  LARGE_INTEGER now;
  LARGE_INTEGER freq;

  QueryPerformanceCounter(&now);
  QueryPerformanceFrequency(&freq);
  return (uint64_t) ((double) now.QuadPart / freq.QuadPart * 1e9);
}


struct packet* find_packet(HANDLE h) {
  int i;

  for (i = 0; i < MAX_PACKETS; i++)
    if (packets[i].handle != NULL && packets[i].handle == h)
      return &packets[i];
  return NULL;
}


/* The queued completion of `p`'s association, or NULL. */
struct posted* queued_of(struct packet* p) {
  int i;

  for (i = 0; i < MAX_POSTED; i++)
    if (posted[i].used && posted[i].p == p && posted[i].key == p->key &&
        !posted[i].withdrawn) {
      return &posted[i];
    }
  return NULL;
}


int real_key(ULONG_PTR key) {
  int i;

  for (i = 0; i < real_nkeys; i++)
    if (real_keys[i] == key)
      return 1;
  return 0;
}


/* Notes what one call dequeued and drops withdrawn completions; returns
 * how many entries are left. Sets *timer_only (nothing but timer
 * completions) and *stale_only (nothing but stale ones).
 */
ULONG account(LPOVERLAPPED_ENTRY entries, ULONG n, int* timer_only,
              int* stale_only) {
  struct posted* c;
  ULONG kept;
  ULONG timer;
  ULONG stale;
  ULONG i;
  int j;

  kept = 0;
  timer = 0;
  stale = 0;
  EnterCriticalSection(&model_lock);
  for (i = 0; i < n; i++) {
    c = NULL;
    for (j = 0; j < MAX_POSTED && c == NULL; j++) {
      if (posted[j].used && posted[j].key == entries[i].lpCompletionKey &&
          posted[j].p->apc == (void*) entries[i].lpOverlapped) {
        c = &posted[j];
      }
    }
    if (c != NULL) {
      c->used = 0;
      if (c->withdrawn)
        continue;
      timer++;
      if (c->stale) {
        stale++;
        counts.stale_dequeued++;
      }
    } else if (real_mode && entries[i].lpOverlapped == NULL &&
               real_key(entries[i].lpCompletionKey)) {
      timer++;
    }
    entries[kept++] = entries[i];
  }
  LeaveCriticalSection(&model_lock);
  *timer_only = kept > 0 && timer == kept;
  *stale_only = kept > 0 && stale == kept;
  return kept;
}


/* Whether a blocking wait of the watched loop that timer completions alone
 * ended had a timer due: the loop's earliest timer, in loop time, has been
 * reached by the precise clock (within 50 us for rounding). If not, the
 * completion woke the thread for nothing: a spurious wake-up, whatever
 * libuv does next. The loop is inside uv__poll(), so its pending queue is
 * empty and uv_backend_timeout() is that of its timers (-1: none).
 */
static int timer_was_due(HANDLE port) {
  int t;

  if (watched == NULL || watched->iocp != port)
    return 1;
  t = uv_backend_timeout(watched);
  if (t < 0)
    return 0;
  return uv_hrtime() + 50000 >= (uv_now(watched) + (uint64_t) t) * 1000000;
}


BOOL WINAPI model_gqcs(HANDLE port, LPOVERLAPPED_ENTRY entries,
                       ULONG n, PULONG count, DWORD timeout,
                       BOOL alertable) {
  uint64_t end;
  uint64_t now;
  DWORD ms;
  BOOL r;
  int timer_only;
  int stale_only;

  (void) stale_only;
  counts.gqcs++;
  if (timeout != 0)
    counts.blocking++;
  if (timeout != 0 && timeout != INFINITE)
    counts.ms_waits++;
  if (timeout != INFINITE && timeout > counts.max_wait)
    counts.max_wait = timeout;
  /* The next blocking wait after STATUS_PENDING: in milliseconds. */
  if (pending_round && timeout != 0) {
    pending_round = 0;
    if (timeout != INFINITE)
      counts.pending_ms++;
    else
      counts.pending_other++;
  }
  if (associated)
    counts.armed++;
  if (drained) {
    drained = 0;
    if (timeout != 0)
      counts.drained_blocked++;
  }
  associated = 0;
  if (stale_key != 0 && timeout != 0) {
    PostQueuedCompletionStatus(port, 0, stale_key, NULL);
    stale_key = 0;
  }

  /* A finite timeout ends on the first point of the grid at or after it
   * (or, without the tick model, after it).
   */
  end = 0;
  if (timeout != 0 && timeout != INFINITE) {
    end = qpc_ns() + (uint64_t) timeout * 1000000;
    if (tick_model)
      end = (end + TICK_NS - 1) / TICK_NS * TICK_NS;
  }

  for (;;) {
    if (timeout == 0 || timeout == INFINITE) {
      ms = timeout;
    } else {
      /* In DWORD milliseconds, short of INFINITE. */
      now = qpc_ns();
      ms = 0;
      if (now < end)
        ms = (DWORD) ((end - now + 999999) / 1000000);
      if (now < end && (end - now + 999999) / 1000000 >= INFINITE)
        ms = INFINITE - 1;
    }
    r = real_gqcs(port, entries, n, count, ms, alertable);
    if (r) {
      *count = account(entries, *count, &timer_only, &stale_only);
      if (*count > 0) {
        if (timeout != 0) {
          counts.wakeups++;
          if (timer_only)
            counts.timer_wakeups++;
          if (timer_only && !timer_was_due(port))
            counts.spurious++;
        }
        return r;
      }
      /* Withdrawn completions only: as if they had never been queued. */
      if (timeout == 0) {
        SetLastError(WAIT_TIMEOUT);
        return FALSE;
      }
      if (timeout == INFINITE)
        continue;
      if (qpc_ns() >= end) {
        SetLastError(WAIT_TIMEOUT);
        return FALSE;
      }
      continue;
    }
    if (GetLastError() != WAIT_TIMEOUT || ms == 0 || timeout == INFINITE)
      return r;
    if (qpc_ns() >= end) {
      SetLastError(WAIT_TIMEOUT);
      return FALSE;
    }
  }
}


static void watch_cb(uv_check_t* handle) {
  (void) handle;
  counts.iterations++;
}


/* Counts spurious wake-ups on `loop` until unwatch(); `due`, if not NULL,
 * is the loop time the waits are for.
 */
int watch(uv_loop_t* loop, uv_check_t* check, uint64_t* due) {
  int r;

  r = uv_check_init(loop, check);
  check->data = due;
  if (r == 0)
    r = uv_check_start(check, watch_cb);
  if (r != 0)
    return r;
  uv_unref((uv_handle_t*) check);
  watched = loop;
  return 0;
}


void unwatch(uv_check_t* check) {
  watched = NULL;
  uv_close((uv_handle_t*) check, NULL);
}


BOOL WINAPI model_set_timer(HANDLE timer, const LARGE_INTEGER* due,
                            LONG period, PTIMERAPCROUTINE fn,
                            LPVOID arg, BOOL resume) {
  LARGE_INTEGER when;
  int i;

  counts.set_timer++;
  associated = 1;
  if (pending_round)
    counts.pending_armed++;
  /* Windows sets the timer to the not-signalled state (KeSetTimer); Wine
   * 8 does so for manual-reset timers only, so a synchronization timer
   * that expired with no waiter would satisfy the next association at
   * once. Consume that signal, as Windows would have reset it.
   */
  if (!real_mode)
    WaitForSingleObject(timer, 0);
  /* early_completion: a relative due time early_ns shorter. */
  when = *due;
  if (!real_mode && early_ns != 0 && when.QuadPart < 0) {
    when.QuadPart += (LONGLONG) (early_ns / 100);
    if (when.QuadPart >= 0)
      when.QuadPart = -1;
  }
  for (i = 0; i < MAX_PACKETS; i++)
    if (timers[i] == timer && when.QuadPart < 0)
      timer_due[i] = qpc_ns() + (uint64_t) -when.QuadPart * 100;
  return real_set_timer(timer, &when, period, fn, arg, resume);
}


HANDLE WINAPI model_create_timer(LPSECURITY_ATTRIBUTES sa,
                                 LPCWSTR name, DWORD flags,
                                 DWORD access) {
  HANDLE h;
  int i;

  h = real_create_timer(sa, name, flags, access);
  if (h == NULL && (flags & 2) && !real_mode)
    h = real_create_timer(sa, name, flags & ~2, access);
  if (h == NULL)
    return NULL;
  counts.timers_created++;
  for (i = 0; i < MAX_PACKETS; i++) {
    if (timers[i] == NULL) {
      timers[i] = h;
      break;
    }
  }
  return h;
}


BOOL WINAPI model_close(HANDLE h) {
  struct packet* p;
  int i;

  p = real_mode ? NULL : find_packet(h);
  if (p != NULL) {
    counts.packets_closed++;
    if (p->active)
      counts.closed_associated++;
    end_association(p);
    p->handle = NULL;
  }
  if (real_mode) {
    for (i = 0; i < MAX_PACKETS; i++) {
      if (h != NULL && packets[i].handle == h) {
        counts.packets_closed++;
        packets[i].handle = NULL;
      }
    }
  }
  for (i = 0; i < MAX_PACKETS; i++) {
    if (h != NULL && timers[i] == h) {
      counts.timers_closed++;
      timers[i] = NULL;
    }
  }
  return real_close(h);
}

#endif  /* _WIN32 */
