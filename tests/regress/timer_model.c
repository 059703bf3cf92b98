/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * A model of the Windows timer tick, for "win: use a high-resolution timer
 * in uv__poll". Windows-only; elsewhere every case skips.
 *
 * Wine waits in whole milliseconds with no 15.625 ms tick, and its ntdll
 * has none of the wait completion packet calls that the patch needs. So
 * under Wine the base already looks fine and the patch's fast path never
 * runs. This program puts both back, as a model:
 *
 * - An import-table hook of GetQueuedCompletionStatusEx(): a finite,
 *   non-zero timeout ends on the next point of a 15.625 ms grid of the
 *   QueryPerformanceCounter clock, as on an idle Windows system, while a
 *   completion still returns at once. libuv is linked statically into
 *   this program, so its calls go through the program's import table.
 * - Stand-ins for NtCreateWaitCompletionPacket,
 *   NtAssociateWaitCompletionPacket and NtCancelWaitCompletionPacket,
 *   put in libuv's pNt*WaitCompletionPacket pointers (which only the
 *   patched tree has: tests/regress/CMakeLists.txt looks for them). A
 *   packet is an event handle; associating it registers a thread-pool wait
 *   (RegisterWaitForSingleObject) on the waitable timer that posts the
 *   completion with PostQueuedCompletionStatus(). As NT does: a packet
 *   takes one association at a time (refused while it waits or while its
 *   completion is queued; one that expired and was dequeued is over); a
 *   timer that has expired already answers AlreadySignaled, and its
 *   completion is queued at once; a cancel answers STATUS_SUCCESS while the association waits
 *   and STATUS_CANCELLED after expiry, and with RemoveSignaledPacket
 *   withdraws a completion that is queued and not yet dequeued (the hook
 *   drops it, so it never ends a wait). Harsher answers can be forced:
 *   STATUS_PENDING (the completion is being queued: the association stays
 *   and its completion arrives later), a cancel that fails (the
 *   association stays as it is), and, for the worst case, a queued
 *   completion that cannot be withdrawn (STATUS_CANCELLED, left queued).
 * - Hooks of CreateWaitableTimerExW(), SetWaitableTimer() and CloseHandle()
 *   that count what libuv creates, arms and closes. Two things Windows
 *   does and Wine 8 does not are put back too: SetWaitableTimer() resets
 *   a timer that expired with no waiter (KeSetTimer), and no timer
 *   completion is posted before its due time by the QueryPerformanceCounter
 *   clock (Wine's server can expire a timer a little early), unless a case
 *   asks for early expiry (early_completion).
 *
 * Two things are counted on every loop a case watches (a check handle,
 * which runs right after each poll):
 *
 * - calls per blocking poll: Nt*WaitCompletionPacket and SetWaitableTimer
 *   calls per GetQueuedCompletionStatusEx() call with a non-zero timeout;
 * - calls per armed poll: the same calls per GetQueuedCompletionStatusEx()
 *   call for which the timer was set (under load the timer can expire
 *   before the association, AlreadySignaled, and that poll not block);
 * - spurious wake-ups: a blocking GetQueuedCompletionStatusEx() of the
 *   watched loop that returned with nothing but timer completions while
 *   no timer of the loop was due: the completion woke the thread for
 *   nothing (a stale one, armed for a deadline no longer wanted), whether
 *   libuv then waits again or runs the loop.
 *
 * What the model does not prove: how the real Windows kernel behaves (its
 * tick, its timers, its packets). That runs on real Windows (the CI
 * workflow: timer_precision, and this program's real_windows case, which
 * counts the same figures with the real calls). Every line this program
 * prints says "model" or "real Windows".
 *
 * Cases:
 *
 *   tick_1ms_median    the proof: the median of 50 one-shot 1 ms timers is
 *                      >= 14 ms on the base (the wait ends on the tick)
 *                      and < 8 ms patched; no timer runs early.
 *   stale_completion   the worst case: a queued completion cannot be
 *                      withdrawn. A stale completion may wake a wait
 *                      (counted), but no timer runs early;
 *                      uv_async_send() waking a 3 ms timer's wait does
 *                      not fire it early.
 *   stale_wakeup       a 20 ms timer's wait is woken by uv_async_send()
 *                      after about 1 ms and the callback stops the timer,
 *                      so the loop then waits with no timeout: no timer
 *                      completion may wake that wait (no spurious
 *                      wake-up).
 *   io_heavy           10,000 uv_async_send() a second from another thread
 *                      for 1 s each: "steady", every 100 us, with a 1 ms
 *                      repeating timer; "bursts", 10 request/response
 *                      pairs 50 us apart, each request starting a 1 ms
 *                      timeout that its response stops, then 1 ms of
 *                      silence. Counts calls per blocking poll and
 *                      spurious wake-ups a second; none may occur.
 *   cancel_pending     each round's first wait is ended at once by
 *                      uv_async_send(), and every third cancel answers
 *                      STATUS_PENDING: the next wait is in milliseconds,
 *                      no timer is lost or early.
 *   cancel_fails       every cancel fails: 50 one-shot 1 ms timers still
 *                      have a median < 8 ms (the timer comes back on
 *                      the next poll, not lost for the loop's life).
 *   early_completion   the timer expires 1 ms before its due time: each
 *                      uv_run(UV_RUN_ONCE) with a 5 ms timer still runs
 *                      it, and not early (the completion alone is taken
 *                      as a timeout that may be early, and checked).
 *   early_repeats      the timer expires 2 ms early, every time: 25
 *                      one-shot 10 ms timers run, none early, and no
 *                      wait asks for more than 10 ms (the re-check's
 *                      slack, for early returns of a wait, must not
 *                      grow with each early completion).
 *   stale_infinite     a stale timer completion (the loop's key) reaches a
 *                      wait with no timeout, with and without
 *                      UV_METRICS_IDLE_TIME: uv_run(UV_RUN_ONCE) must
 *                      still wait for the uv_async_send() 50 ms later.
 *   zero_timeout_drain an armed wait ended at once, a poll with timeout
 *                      0, then an embedder that waits past the deadline
 *                      and drains loop->iocp (in a prepare callback):
 *                      the next wait, with the timer due, must not
 *                      block (counted in the rounds whose timer had not
 *                      run before the drain, at least 5 of 20).
 *   wakeup_burst       io_heavy's bursts: spurious wake-ups under 1% of
 *                      loop iterations, at most 3.5 extra calls per
 *                      armed poll.
 *   stand_ins_missing  with the pointers NULL (as under plain Wine), or
 *                      only the cancel call missing, the loop waits in
 *                      milliseconds and creates no timer or packet.
 *   loop_cycles_close  200 uv_loop_init()/uv_loop_close() cycles close
 *                      every timer and packet, none still associated.
 *   arming_cost        calls per blocking poll with a 1 ms, 16 ms, 100 ms
 *                      and 1 s timer and with none; timers of 100 ms and
 *                      more must cost none, an armed poll at most 3.5.
 *   tick_lateness      one-shot timers of 1 to 100 ms: median lateness
 *                      and calls per timer, the figures behind the
 *                      patch's arming threshold.
 *   real_windows       the figures of tick_1ms_median, arming_cost,
 *                      stale_wakeup and io_heavy with the real kernel
 *                      calls, counted but not replaced; no tick hook.
 *                      Skips under Wine. Asserts nothing but that timers
 *                      ran, none early.
 *
 * tick_1ms_median, arming_cost, stale_wakeup, io_heavy, tick_lateness and
 * real_windows also print their figures as JSON lines for `uvpatch bench`.
 * Those run on the base too, for its figures (nothing is armed there, so
 * stale_wakeup, io_heavy and arming_cost pass); the cases that need the
 * stand-ins skip on the base, saying so; the proof runs there and fails.
 */

#include "uv.h"
#include "harness.h"
#include "stats.h"

#define MODEL_NOTE "model: does not prove the real Windows kernel's behaviour"
#define REAL_NOTE "real Windows: the kernel's own calls, counted"

#ifdef _WIN32

#include <windows.h>

#define SAMPLES 50
#define CYCLES 200
#define WATCHDOG_MS 10000
#define TICK_NS 15625000ULL
#define HANDLE_SLACK 4
#define MAX_PACKETS 16
#define MAX_POSTED 64
#define MAX_KEYS 64
#define STALE_ROUNDS 10

#ifndef ARRAY_SIZE
# define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

#include "timer_probe.h"

#define MODEL_STATUS_SUCCESS ((LONG) 0x00000000L)
#define MODEL_STATUS_PENDING ((LONG) 0x00000103L)
#define MODEL_STATUS_INVALID_HANDLE ((LONG) 0xC0000008L)
#define MODEL_STATUS_INVALID_PARAMETER ((LONG) 0xC000000DL)
#define MODEL_STATUS_CANCELLED ((LONG) 0xC0000120L)
#define MODEL_STATUS_UNSUCCESSFUL ((LONG) 0xC0000001L)

typedef LONG (WINAPI *create_fn)(HANDLE*, ACCESS_MASK, void*);
typedef LONG (WINAPI *associate_fn)(HANDLE, HANDLE, HANDLE, void*, void*,
                                    LONG, ULONG_PTR, BOOLEAN*);
typedef LONG (WINAPI *cancel_fn)(HANDLE, BOOLEAN);

#ifdef UVPATCH_HAVE_WAIT_PACKETS
/* libuv's own pointers (src/win/winapi.c of the patched tree). */
extern create_fn pNtCreateWaitCompletionPacket;
extern associate_fn pNtAssociateWaitCompletionPacket;
extern cancel_fn pNtCancelWaitCompletionPacket;
#endif

typedef BOOL (WINAPI *gqcs_fn)(HANDLE, LPOVERLAPPED_ENTRY, ULONG, PULONG,
                               DWORD, BOOL);
typedef BOOL (WINAPI *set_timer_fn)(HANDLE, const LARGE_INTEGER*, LONG,
                                    PTIMERAPCROUTINE, LPVOID, BOOL);
typedef HANDLE (WINAPI *create_timer_fn)(LPSECURITY_ATTRIBUTES, LPCWSTR,
                                         DWORD, DWORD);
typedef BOOL (WINAPI *close_fn)(HANDLE);

static gqcs_fn real_gqcs;
static set_timer_fn real_set_timer;
static create_timer_fn real_create_timer;
static close_fn real_close;

/* The kernel's own calls, for real_windows: what libuv found in ntdll. */
static create_fn kernel_create;
static associate_fn kernel_associate;
static cancel_fn kernel_cancel;

/* One stand-in packet and its association. */
struct packet {
  HANDLE handle;      /* An event: the object CloseHandle() closes. */
  HANDLE wait;        /* The thread-pool wait of the association. */
  HANDLE iocp;
  HANDLE target;      /* The timer it waits on. */
  ULONG_PTR key;
  void* apc;
  LONG status;
  ULONG_PTR info;
  int active;         /* Associated, and not cancelled since. */
  int fired;          /* Its completion was posted. */
  int abandoned;      /* A cancel answered STATUS_PENDING: libuv gave it
                       * up, so its completion is stale. */
};

/* A completion the stand-ins posted that is not dequeued yet. */
struct posted {
  int used;
  ULONG_PTR key;
  struct packet* p;
  int stale;          /* Its association was cancelled before. */
  int withdrawn;      /* Removed by a cancel: never seen by libuv. */
};

/* What the model counts; reset by model_reset(). */
struct counts {
  long gqcs;              /* GetQueuedCompletionStatusEx() calls. */
  long blocking;          /* Of them, with a non-zero timeout. */
  long ms_waits;          /* Of them, finite and non-zero. */
  long create;            /* NtCreateWaitCompletionPacket() calls. */
  long associate;         /* NtAssociateWaitCompletionPacket() calls. */
  long cancel;            /* NtCancelWaitCompletionPacket() calls. */
  long set_timer;         /* SetWaitableTimer() calls. */
  long timers_created;    /* CreateWaitableTimerExW() handles. */
  long timers_closed;
  long packets_created;
  long packets_closed;
  long closed_associated; /* Packets closed while still associated. */
  long posted;            /* Completions the stand-ins posted. */
  long withdrawn;         /* Withdrawn by a cancel before dequeued. */
  long stale_left;        /* Cancelled, left queued (worst case). */
  long stale_dequeued;    /* Dequeued after their association ended. */
  long wakeups;           /* Blocking calls that returned completions. */
  long timer_wakeups;     /* Of them, with timer completions only. */
  long spurious;          /* Of those, followed by another wait, with no
                           * loop iteration between (watched loops). */
  long armed;             /* Calls after a SetWaitableTimer() since the
                           * last one: polls that armed the timer, or
                           * tried to. */
  long iterations;        /* Check callbacks of watched loops. */
  long pending;           /* STATUS_PENDING answers. */
  long pending_ms;        /* ... followed by a wait in milliseconds. */
  long pending_other;     /* ... followed by another wait (wrong). */
  long pending_armed;     /* ... then an association accepted while
                           * the old one lasted (wrong). */
  long cancel_failed;     /* Cancels made to fail (cancel_fails). */
  long drained_blocked;   /* zero_timeout_drain: the first wait after the
                           * drain, past the deadline, blocked. */
  DWORD max_wait;         /* The longest finite timeout asked for. */
};

static CRITICAL_SECTION model_lock;
static struct packet packets[MAX_PACKETS];
static struct posted posted[MAX_POSTED];
static struct counts counts;
static HANDLE timers[MAX_PACKETS];
static uint64_t timer_due[MAX_PACKETS]; /* QPC ns a timer is set for. */
static ULONG_PTR real_keys[MAX_KEYS]; /* Keys libuv associated (real). */
static int real_nkeys;
static int real_mode;         /* Count the kernel's calls, replace none. */
static int tick_model;        /* Round finite timeouts up to the grid. */
static int withdraw;          /* Cancels withdraw queued completions. */
static int pending_every;     /* Answer STATUS_PENDING every Nth cancel. */
static int pending_round;     /* Last cancel answered STATUS_PENDING. */
static int fail_cancels;      /* Cancels still to fail (cancel_fails). */
static uint64_t early_ns;     /* Timers expire this early (ns). */
static ULONG_PTR stale_key;   /* stale_infinite: post a completion with this
                               * key to the next blocking wait. */
static int associated;        /* SetWaitableTimer() was called since the
                               * last GetQueuedCompletionStatusEx() call. */
static uv_loop_t* watched;    /* The loop a check handle watches. */
static int drained;           /* The embedder drained the port. */
static int installed;


static uint64_t qpc_ns(void) {
  LARGE_INTEGER now;
  LARGE_INTEGER freq;

  QueryPerformanceCounter(&now);
  QueryPerformanceFrequency(&freq);
  return (uint64_t) ((double) now.QuadPart / freq.QuadPart * 1e9);
}


static struct packet* find_packet(HANDLE h) {
  int i;

  for (i = 0; i < MAX_PACKETS; i++)
    if (packets[i].handle != NULL && packets[i].handle == h)
      return &packets[i];
  return NULL;
}


/* The queued completion of `p`'s association, or NULL. */
static struct posted* queued_of(struct packet* p) {
  int i;

  for (i = 0; i < MAX_POSTED; i++)
    if (posted[i].used && posted[i].p == p && posted[i].key == p->key &&
        !posted[i].withdrawn) {
      return &posted[i];
    }
  return NULL;
}


static int real_key(ULONG_PTR key) {
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
static ULONG account(LPOVERLAPPED_ENTRY entries, ULONG n, int* timer_only,
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


static BOOL WINAPI model_gqcs(HANDLE port, LPOVERLAPPED_ENTRY entries,
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
static int watch(uv_loop_t* loop, uv_check_t* check, uint64_t* due) {
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


static void unwatch(uv_check_t* check) {
  watched = NULL;
  uv_close((uv_handle_t*) check, NULL);
}


static BOOL WINAPI model_set_timer(HANDLE timer, const LARGE_INTEGER* due,
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


static HANDLE WINAPI model_create_timer(LPSECURITY_ATTRIBUTES sa,
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


/* Ends the association of `p`: no completion is posted after this. */
static void end_association(struct packet* p) {
  HANDLE wait;

  EnterCriticalSection(&model_lock);
  wait = p->wait;
  p->wait = NULL;
  p->active = 0;
  LeaveCriticalSection(&model_lock);
  if (wait != NULL)
    UnregisterWaitEx(wait, INVALID_HANDLE_VALUE);
}


static BOOL WINAPI model_close(HANDLE h) {
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


static VOID CALLBACK packet_fired(PVOID arg, BOOLEAN timed_out) {
  struct packet* p;
  uint64_t due;
  int i;

  (void) timed_out;
  p = arg;
  /* Wine's server measures a relative due time from a clock it reads once
   * a round, so a timer can expire a little before its due time by the
   * QueryPerformanceCounter clock. A Windows timer never expires early:
   * hold the completion until then.
   */
  due = 0;
  for (i = 0; i < MAX_PACKETS; i++)
    if (timers[i] != NULL && timers[i] == p->target)
      due = timer_due[i];
  while (qpc_ns() < due)
    SwitchToThread();
  EnterCriticalSection(&model_lock);
  if (p->active && !p->fired) {
    p->fired = 1;
    for (i = 0; i < MAX_POSTED; i++) {
      if (!posted[i].used) {
        memset(&posted[i], 0, sizeof(posted[i]));
        posted[i].used = 1;
        posted[i].key = p->key;
        posted[i].p = p;
        posted[i].stale = p->abandoned;
        break;
      }
    }
    counts.posted++;
    PostQueuedCompletionStatus(p->iocp, (DWORD) p->info, p->key,
                               (LPOVERLAPPED) p->apc);
  }
  LeaveCriticalSection(&model_lock);
}


static LONG WINAPI model_create(HANDLE* out, ACCESS_MASK access,
                                void* attributes) {
  struct packet* p;
  LONG status;
  int i;

  counts.create++;
  p = NULL;
  for (i = 0; i < MAX_PACKETS && p == NULL; i++)
    if (packets[i].handle == NULL)
      p = &packets[i];
  if (p == NULL)
    return MODEL_STATUS_INVALID_PARAMETER;
  memset(p, 0, sizeof(*p));
  if (real_mode) {
    status = kernel_create(out, access, attributes);
    if (status >= 0) {
      p->handle = *out;
      counts.packets_created++;
    }
    return status;
  }
  p->handle = CreateEventW(NULL, TRUE, FALSE, NULL);
  if (p->handle == NULL)
    return MODEL_STATUS_INVALID_PARAMETER;
  counts.packets_created++;
  *out = p->handle;
  return MODEL_STATUS_SUCCESS;
}


static LONG WINAPI model_associate(HANDLE h, HANDLE iocp, HANDLE target,
                                   void* key, void* apc, LONG status,
                                   ULONG_PTR info, BOOLEAN* signaled) {
  struct packet* p;
  HANDLE wait;

  counts.associate++;
  if (real_mode) {
    LONG r;

    if (!real_key((ULONG_PTR) key) && real_nkeys < MAX_KEYS)
      real_keys[real_nkeys++] = (ULONG_PTR) key;
    r = kernel_associate(h, iocp, target, key, apc, status, info,
                         signaled);
    return r;
  }
  p = find_packet(h);
  if (p == NULL)
    return MODEL_STATUS_INVALID_HANDLE;
  /* One association at a time: refused while the last one waits, or its
   * completion is still queued. One that expired and was dequeued is over
   * (a cancel would answer STATUS_CANCELLED).
   */
  EnterCriticalSection(&model_lock);
  if ((p->active && !p->fired) || queued_of(p) != NULL) {
    LeaveCriticalSection(&model_lock);
    return MODEL_STATUS_INVALID_PARAMETER;
  }
  LeaveCriticalSection(&model_lock);
  end_association(p);
  if (pending_round)
    counts.pending_armed++;

  EnterCriticalSection(&model_lock);
  p->iocp = iocp;
  p->target = target;
  p->key = (ULONG_PTR) key;
  p->apc = apc;
  p->status = status;
  p->info = info;
  p->fired = 0;
  p->abandoned = 0;
  p->active = 1;
  LeaveCriticalSection(&model_lock);

  /* AlreadySignaled: the timer expired before the association, whose
   * completion is then queued at once.
   */
  if (WaitForSingleObject(target, 0) == WAIT_OBJECT_0) {
    packet_fired(p, FALSE);
    if (signaled != NULL)
      *signaled = TRUE;
    return MODEL_STATUS_SUCCESS;
  }

  if (!RegisterWaitForSingleObject(&wait, target, packet_fired, p, INFINITE,
                                   WT_EXECUTEONLYONCE)) {
    p->active = 0;
    return MODEL_STATUS_INVALID_PARAMETER;
  }
  EnterCriticalSection(&model_lock);
  p->wait = wait;
  LeaveCriticalSection(&model_lock);
  if (signaled != NULL)
    *signaled = FALSE;
  return MODEL_STATUS_SUCCESS;
}


static LONG WINAPI model_cancel(HANDLE h, BOOLEAN remove_signaled) {
  struct posted* c;
  struct packet* p;
  LONG status;

  counts.cancel++;
  if (real_mode)
    return kernel_cancel(h, remove_signaled);
  p = find_packet(h);
  if (p == NULL)
    return MODEL_STATUS_INVALID_HANDLE;

  /* A cancel made to fail: the association stays as it is. */
  if (fail_cancels > 0) {
    fail_cancels--;
    counts.cancel_failed++;
    return MODEL_STATUS_UNSUCCESSFUL;
  }

  /* A completion being queued cannot be cancelled yet: the association
   * stays, and its completion, stale now, arrives later. (Not once it is
   * dequeued: the association is over then.)
   */
  if (p->active && pending_every != 0 &&
      !(p->fired && queued_of(p) == NULL) &&
      counts.cancel % pending_every == 0) {
    counts.pending++;
    pending_round = 1;
    EnterCriticalSection(&model_lock);
    p->abandoned = 1;
    c = queued_of(p);
    if (c != NULL)
      c->stale = 1;
    LeaveCriticalSection(&model_lock);
    return MODEL_STATUS_PENDING;
  }

  status = MODEL_STATUS_SUCCESS;
  EnterCriticalSection(&model_lock);
  if (!p->active) {
    status = MODEL_STATUS_CANCELLED;  /* Never associated, or over. */
  } else if (p->fired) {
    c = queued_of(p);
    if (c == NULL) {
      status = MODEL_STATUS_CANCELLED;  /* Dequeued already. */
    } else if (remove_signaled && withdraw) {
      c->withdrawn = 1;
      counts.withdrawn++;
      status = MODEL_STATUS_CANCELLED;  /* Expired, and withdrawn. */
    } else {
      /* The worst case: it stays queued, stale. */
      status = MODEL_STATUS_CANCELLED;
      if (!c->stale)
        counts.stale_left++;
      c->stale = 1;
    }
  }
  LeaveCriticalSection(&model_lock);
  end_association(p);
  return status;
}


/* Replaces every import of `name` by this program (libuv included) with
 * `fn`; returns the function it replaced, or NULL.
 */
static void* hook_import(const char* name, void* fn) {
  IMAGE_IMPORT_DESCRIPTOR* imp;
  IMAGE_DATA_DIRECTORY* dir;
  IMAGE_THUNK_DATA* names;
  IMAGE_THUNK_DATA* slots;
  IMAGE_IMPORT_BY_NAME* ibn;
  IMAGE_NT_HEADERS* nt;
  BYTE* base;
  DWORD prot;
  void* old;

  base = (BYTE*) GetModuleHandleW(NULL);
  nt = (IMAGE_NT_HEADERS*) (base + ((IMAGE_DOS_HEADER*) base)->e_lfanew);
  dir = &nt->OptionalHeader.DataDirectory[IMAGE_DIRECTORY_ENTRY_IMPORT];
  old = NULL;
  for (imp = (IMAGE_IMPORT_DESCRIPTOR*) (base + dir->VirtualAddress);
       imp->Name != 0;
       imp++) {
    names = (IMAGE_THUNK_DATA*) (base + (imp->OriginalFirstThunk != 0 ?
                                         imp->OriginalFirstThunk :
                                         imp->FirstThunk));
    slots = (IMAGE_THUNK_DATA*) (base + imp->FirstThunk);
    for (; names->u1.AddressOfData != 0; names++, slots++) {
      if (IMAGE_SNAP_BY_ORDINAL(names->u1.Ordinal))
        continue;
      ibn = (IMAGE_IMPORT_BY_NAME*) (base + names->u1.AddressOfData);
      if (strcmp((const char*) ibn->Name, name) != 0)
        continue;
      if (!VirtualProtect(&slots->u1.Function, sizeof(slots->u1.Function),
                          PAGE_READWRITE, &prot)) {
        continue;
      }
      if (old == NULL)
        old = (void*) slots->u1.Function;
      slots->u1.Function = (ULONG_PTR) fn;
      VirtualProtect(&slots->u1.Function, sizeof(slots->u1.Function), prot,
                     &prot);
    }
  }
  return old;
}


static int have_stand_ins(void) {
#ifdef UVPATCH_HAVE_WAIT_PACKETS
  return 1;
#else
  return 0;
#endif
}


/* Points libuv's pointers at the stand-ins (`on`) or at nothing. In real
 * mode the "stand-ins" count and call the kernel's own functions.
 */
static void stand_ins(int on) {
#ifdef UVPATCH_HAVE_WAIT_PACKETS
  pNtCreateWaitCompletionPacket = on ? model_create : NULL;
  pNtAssociateWaitCompletionPacket = on ? model_associate : NULL;
  pNtCancelWaitCompletionPacket = on ? model_cancel : NULL;
#else
  (void) on;
#endif
}


/* Under Wine, whose ntdll exports wine_get_version. */
static int under_wine(void) {
  HMODULE ntdll;

  ntdll = GetModuleHandleA("ntdll.dll");
  return ntdll != NULL && GetProcAddress(ntdll, "wine_get_version") != NULL;
}


/* Installs the hooks and the stand-ins, once; resets the counts. Returns
 * nonzero when a hook could not be installed.
 */
static int model_setup(void) {
  uv_loop_t loop;

  if (!installed) {
    InitializeCriticalSection(&model_lock);
    /* libuv fills its pointers from ntdll on its first uv_loop_init():
     * let it, keep what it found, then replace them.
     */
    if (uv_loop_init(&loop) != 0 || uv_loop_close(&loop) != 0)
      return -1;
#ifdef UVPATCH_HAVE_WAIT_PACKETS
    kernel_create = pNtCreateWaitCompletionPacket;
    kernel_associate = pNtAssociateWaitCompletionPacket;
    kernel_cancel = pNtCancelWaitCompletionPacket;
#endif
    real_gqcs = (gqcs_fn) hook_import("GetQueuedCompletionStatusEx",
                                      (void*) model_gqcs);
    real_set_timer = (set_timer_fn) hook_import("SetWaitableTimer",
                                                (void*) model_set_timer);
    real_create_timer = (create_timer_fn)
        hook_import("CreateWaitableTimerExW", (void*) model_create_timer);
    real_close = (close_fn) hook_import("CloseHandle", (void*) model_close);
    if (real_gqcs == NULL || real_close == NULL)
      return -1;
    /* The base does not import these. */
    if (real_set_timer == NULL)
      real_set_timer = SetWaitableTimer;
    if (real_create_timer == NULL)
      real_create_timer = CreateWaitableTimerExW;
    installed = 1;
  }
  if (real_mode)
    stand_ins(kernel_create != NULL && kernel_associate != NULL &&
              kernel_cancel != NULL);
  else
    stand_ins(1);
  tick_model = !real_mode;
  withdraw = 1;
  pending_every = 0;
  pending_round = 0;
  watched = NULL;
  drained = 0;
  fail_cancels = 0;
  associated = 0;
  memset(&counts, 0, sizeof(counts));
  return 0;
}


static const char* note(void) {
  return real_mode ? REAL_NOTE : MODEL_NOTE;
}


#define SETUP()                                                               \
  do {                                                                        \
    if (model_setup() != 0)                                                   \
      FAIL("model: could not hook the import table");                         \
  } while (0)

#define NEEDS_STAND_INS()                                                     \
  do {                                                                        \
    if (!have_stand_ins())                                                    \
      SKIP("%s; needs the patch: this libuv has no "                          \
           "pNt*WaitCompletionPacket pointers to point at the model's "       \
           "stand-ins", MODEL_NOTE);                                          \
  } while (0)


/* The extra calls: Nt*WaitCompletionPacket and SetWaitableTimer. */
static long arming_calls(void) {
  return counts.cancel + counts.associate + counts.set_timer;
}


/* The median of the samples taken; prints the statistics line. */
static uint64_t report(const char* name, struct probe* p) {
  uint64_t* s;
  int n;

  s = p->samples;
  n = p->count;
  if (n == 0)
    return 0;
  sort_u64(s, (size_t) n);
  fprintf(stderr,
          "timer_model/%s (%s): n=%d min=%.3f median=%.3f max=%.3f ms "
          "early=%d\n",
          name, note(), n, ms(s[0]), ms(s[n / 2]), ms(s[n - 1]), p->early);
  return s[n / 2];
}


static int kick_rounds;  /* run_oneshots() wakes each round's first wait. */


static void kick_cb(uv_async_t* handle) {
  (void) handle;
}


/* Runs `n` one-shot timers of `timeout` ms on a new, watched loop; with
 * kick_rounds, an uv_async_send() ends each round's first wait at once.
 */
static int run_oneshots(const char* name, int n, uint64_t timeout,
                        uint64_t* median, int* early) {
  struct probe p;
  uv_check_t check;
  uv_async_t kick;
  uv_loop_t loop;
  int i;

  if (uv_loop_init(&loop) != 0)
    return -1;
  if (probe_init(&p, &loop) != 0 || watch(&loop, &check, &p.due) != 0)
    return -1;
  if (uv_async_init(&loop, &kick, kick_cb) != 0)
    return -1;
  uv_unref((uv_handle_t*) &kick);
  for (i = 0; i < n && !p.timed_out; i++) {
    if (probe_start(&p, timeout) != 0)
      return -1;
    if (kick_rounds && uv_async_send(&kick) != 0)
      return -1;
    uv_run(&loop, UV_RUN_DEFAULT);
  }
  *median = report(name, &p);
  *early = p.early;
  unwatch(&check);
  uv_close((uv_handle_t*) &kick, NULL);
  probe_close(&p);
  if (uv_loop_close(&loop) != 0)
    return -1;
  return p.timed_out || p.count != n ? -1 : 0;
}


static int tick_1ms_median(void) {
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
}


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


/* The worst case: the stand-in cannot withdraw a queued completion. */
static int stale_completion(void) {
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


struct figures {
  double calls_per_poll;
  double calls_per_armed;
  long armed;
  long iterations;
  double spurious_per_s;
  long spurious;
  long blocking;
  long calls;
  double seconds;
};


/* The counters of a run, once f->seconds is set. */
static void take_figures(struct figures* f) {
  f->spurious = counts.spurious;
  f->blocking = counts.blocking;
  f->calls = arming_calls();
  f->calls_per_poll = counts.blocking ? (double) f->calls / counts.blocking
                                      : 0;
  f->spurious_per_s = f->spurious / f->seconds;
  f->armed = counts.armed;
  f->calls_per_armed = counts.armed ? (double) f->calls / counts.armed : 0;
  f->iterations = counts.iterations;
}


static int measure_stale_wakeup(int rounds, struct figures* f) {
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


static int stale_wakeup(void) {
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
}


/* io_heavy: a thread sends uv_async_send() 10,000 times a second. */
#define IO_SECONDS 1.0
#define IO_STEADY_GAP_NS 100000ULL
#define IO_BURST_GAP_NS 50000ULL
#define IO_BURST_PAIRS 10
#define IO_SILENCE_NS 1000000ULL

struct io {
  uv_loop_t* loop;
  uv_async_t async;
  uv_timer_t tick;       /* steady: 1 ms repeating. */
  uv_timer_t timeout;    /* bursts: a request's 1 ms timeout. */
  int bursts;
  volatile LONG request; /* bursts: the last send was a request. */
  volatile LONG done;
  long sent;
  long seen;
  long ticks;
  long timeouts;
};


/* Busy-waits until `until` (QPC ns): Wine sleeps in whole ms at best. */
static void spin_until(uint64_t until) {
  while (qpc_ns() < until)
    SwitchToThread();
}


static void io_sender(void* arg) {
  struct io* io;
  uint64_t next;
  uint64_t end;
  int i;

  io = arg;
  next = qpc_ns();
  end = next + (uint64_t) (IO_SECONDS * 1e9);
  while (next < end) {
    if (!io->bursts) {
      uv_async_send(&io->async);
      io->sent++;
      next += IO_STEADY_GAP_NS;
      spin_until(next);
      continue;
    }
    for (i = 0; i < 2 * IO_BURST_PAIRS; i++) {
      InterlockedExchange(&io->request, i % 2 == 0);
      uv_async_send(&io->async);
      io->sent++;
      next += IO_BURST_GAP_NS;
      spin_until(next);
    }
    next += IO_SILENCE_NS;
    spin_until(next);
  }
  InterlockedExchange(&io->done, 1);
  uv_async_send(&io->async);
}


static void io_timer_cb(uv_timer_t* handle) {
  struct io* io;

  io = handle->data;
  if (handle == &io->tick)
    io->ticks++;
  else
    io->timeouts++;
}


static void io_async_cb(uv_async_t* handle) {
  struct io* io;

  io = handle->data;
  io->seen++;
  if (io->done) {
    uv_stop(io->loop);
    return;
  }
  if (!io->bursts)
    return;
  /* A request starts its 1 ms timeout, a response stops it. */
  if (io->request)
    uv_timer_start(&io->timeout, io_timer_cb, 1, 0);
  else
    uv_timer_stop(&io->timeout);
}


static int measure_io(int bursts, struct figures* f) {
  struct io io;
  uv_check_t check;
  uv_thread_t tid;
  uv_loop_t loop;
  uint64_t start;
  long gqcs;

  memset(&io, 0, sizeof(io));
  io.bursts = bursts;
  CHECK_UV(uv_loop_init(&loop));
  io.loop = &loop;
  CHECK_UV(uv_async_init(&loop, &io.async, io_async_cb));
  CHECK_UV(uv_timer_init(&loop, &io.tick));
  CHECK_UV(uv_timer_init(&loop, &io.timeout));
  io.async.data = &io;
  io.tick.data = &io;
  io.timeout.data = &io;
  if (!bursts)
    CHECK_UV(uv_timer_start(&io.tick, io_timer_cb, 1, 1));
  CHECK_UV(watch(&loop, &check, NULL));
  counts.blocking = 0;
  counts.cancel = counts.associate = counts.set_timer = 0;
  counts.spurious = counts.wakeups = counts.timer_wakeups = 0;
  counts.armed = counts.iterations = 0;
  gqcs = counts.gqcs;
  start = qpc_ns();
  CHECK_UV(uv_thread_create(&tid, io_sender, &io));
  uv_run(&loop, UV_RUN_DEFAULT);
  f->seconds = (double) (qpc_ns() - start) / 1e9;
  CHECK_UV(uv_thread_join(&tid));
  take_figures(f);
  unwatch(&check);
  uv_close((uv_handle_t*) &io.async, NULL);
  uv_close((uv_handle_t*) &io.tick, NULL);
  uv_close((uv_handle_t*) &io.timeout, NULL);
  CHECK_UV(uv_run(&loop, UV_RUN_DEFAULT));
  CHECK_UV(uv_loop_close(&loop));
  printf("{\"bench\": \"timer_model_io\", \"load\": \"%s\", "
         "\"seconds\": %.3f, \"sends\": %ld, \"async_callbacks\": %ld, "
         "\"ticks\": %ld, \"timeouts\": %ld, \"polls\": %ld, "
         "\"blocking_waits\": %ld, \"calls\": %ld, "
         "\"calls_per_blocking_poll\": %.3f, \"armed_polls\": %ld, "
         "\"calls_per_armed_poll\": %.3f, \"iterations\": %ld, "
         "\"spurious\": %ld, "
         "\"spurious_per_s\": %.1f, \"timer_wakeups\": %ld, "
         "\"stand_ins\": %s, \"model\": %s}\n",
         bursts ? "bursts" : "steady", f->seconds, io.sent, io.seen,
         io.ticks, io.timeouts, counts.gqcs - gqcs, counts.blocking,
         f->calls, f->calls_per_poll, f->armed, f->calls_per_armed,
         f->iterations, f->spurious, f->spurious_per_s,
         counts.timer_wakeups, have_stand_ins() ? "true" : "false",
         real_mode ? "false" : "true");
  fflush(stdout);
  fprintf(stderr,
          "timer_model/io_heavy (%s): %s: %ld sends in %.2f s, %ld "
          "callbacks, %s=%ld, blocking polls=%ld (armed %ld), extra calls "
          "per blocking poll=%.2f, per armed poll=%.2f, loop "
          "iterations=%ld, spurious wake-ups=%ld (%.1f/s, %.2f%% of "
          "iterations)\n",
          note(), bursts ? "bursts of 1 ms request timeouts" :
                           "steady, 1 ms repeating timer",
          io.sent, f->seconds, io.seen, bursts ? "timeouts" : "ticks",
          bursts ? io.timeouts : io.ticks, counts.blocking, f->armed,
          f->calls_per_poll, f->calls_per_armed, f->iterations, f->spurious,
          f->spurious_per_s,
          f->iterations ? 100.0 * f->spurious / f->iterations : 0.0);
  if (!bursts && io.ticks == 0)
    FAIL("%s: the 1 ms timer never ran", note());
  return CASE_OK;
}


static int io_heavy(void) {
  struct figures steady;
  struct figures bursts;
  int r;

  SETUP();
  r = measure_io(0, &steady);
  if (r != CASE_OK)
    return r;
  SETUP();
  r = measure_io(1, &bursts);
  if (r != CASE_OK)
    return r;
  if (steady.spurious != 0 || bursts.spurious != 0)
    FAIL("%s: spurious wake-ups: %ld steady, %ld in bursts", MODEL_NOTE,
         steady.spurious, bursts.spurious);
  return CASE_OK;
}


static int cancel_pending(void) {
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
}


static int stand_ins_missing(void) {
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
}


static int loop_cycles_close(void) {
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
}


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
#define ARMING_MODES 5

static const char* arming_names[ARMING_MODES] = {
  "1ms", "16ms", "100ms", "1s", "none"
};
static const uint64_t arming_timeouts[ARMING_MODES] = { 1, 16, 100, 1000, 0 };


static double armed_calls_1ms;  /* Per armed poll, 1 ms timer. */


static int measure_arming(double* calls) {
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


static int arming_cost(void) {
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
}


/* tick_lateness: one-shot timers of each length, a few each. */
static int tick_lateness(void) {
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
}


/* cancel_fails: every cancel fails (the association stays as it is), for
 * 50 one-shot 1 ms timers. Each poll
 * under two ticks must still try the timer again: an association that
 * expired and was dequeued is over, so the next one is accepted, and the
 * timers stay precise. A loop that stops arming after a failed cancel
 * waits in ticks from then on.
 */
static int cancel_fails(void) {
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
}


/* early_completion: the timer expires 1 ms before its due time. Each
 * uv_run(UV_RUN_ONCE) with a 5 ms timer must still run it, and not early:
 * uv__poll() takes the timer's completion as a timeout and checks it.
 */
static uint64_t early_ran_at;


static void early_cb(uv_timer_t* handle) {
  (void) handle;
  early_ran_at = uv_hrtime();
}


static int early_completion(void) {
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
}


/* early_repeats: see the list of cases above. */
static int early_repeats(void) {
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


static int stale_infinite(void) {
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
}


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


static int zero_timeout_drain(void) {
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
}


/* wakeup_burst: io_heavy's bursts (10 request/response pairs 50 us apart,
 * each request starting a 1 ms timeout that its response stops, then 1 ms
 * of silence, for 1 s), judged on their share of spurious wake-ups: under
 * 1% of loop iterations. Also extra calls per armed poll <= 3.5.
 */
static int wakeup_burst(void) {
  struct figures f;
  int r;

  SETUP();
  r = measure_io(1, &f);
  if (r != CASE_OK)
    return r;
  if (f.iterations == 0)
    FAIL("%s: no loop iteration counted", MODEL_NOTE);
  if (f.spurious * 100 >= f.iterations)
    FAIL("%s: %ld spurious wake-ups in %ld loop iterations (bound 1%%)",
         MODEL_NOTE, f.spurious, f.iterations);
  if (f.calls_per_armed > 3.5)
    FAIL("%s: %.2f extra calls per armed poll (bound 3.5)",
         MODEL_NOTE, f.calls_per_armed);
  return CASE_OK;
}


/* real_windows: the same figures with the kernel's own calls. */
static int real_windows(void) {
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
}

#else  /* !_WIN32 */

static int windows_only(void) {
  SKIP("%s; Windows-only (cross-built, run under Wine)", MODEL_NOTE);
}

# define tick_1ms_median windows_only
# define stale_completion windows_only
# define stale_wakeup windows_only
# define io_heavy windows_only
# define cancel_pending windows_only
# define stand_ins_missing windows_only
# define loop_cycles_close windows_only
# define arming_cost windows_only
# define tick_lateness windows_only
# define real_windows windows_only
# define cancel_fails windows_only
# define zero_timeout_drain windows_only
# define early_completion windows_only
# define stale_infinite windows_only
# define early_repeats windows_only
# define wakeup_burst windows_only

#endif  /* _WIN32 */


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
