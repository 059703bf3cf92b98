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
 *   completion with PostQueuedCompletionStatus(). A completion already
 *   queued cannot be withdrawn: cancelling after the timer fired answers
 *   STATUS_CANCELLED and leaves it queued (a stale completion). The
 *   stand-in can be told to answer STATUS_PENDING instead.
 * - Hooks of CreateWaitableTimerExW(), SetWaitableTimer() and CloseHandle()
 *   that count what libuv creates, arms and closes.
 *
 * What the model does not prove: how the real Windows kernel behaves (its
 * tick, its timers, its packets). That runs on real Windows (the CI
 * workflow, timer_precision). Every line this program prints says
 * "model".
 *
 * Cases:
 *
 *   tick_1ms_median    the proof: the median of 50 one-shot 1 ms timers is
 *                      >= 14 ms on the base (the wait ends on the tick)
 *                      and < 8 ms patched; no timer runs early.
 *   stale_completion   a timer completion from an earlier round, left
 *                      queued, never ends a wait early; uv_async_send()
 *                      waking a 3 ms timer's wait does not fire it early.
 *   cancel_pending     every third cancel answers STATUS_PENDING: that
 *                      round waits in milliseconds, no timer is lost.
 *   stand_ins_missing  with the pointers NULL (as under plain Wine), or
 *                      only the cancel call missing, the loop waits in
 *                      milliseconds and creates no timer or packet.
 *   loop_cycles_close  200 uv_loop_init()/uv_loop_close() cycles close
 *                      every timer and packet, none still associated.
 *   arming_cost        calls of Nt*WaitCompletionPacket and
 *                      SetWaitableTimer per poll that waits, with a 1 ms
 *                      timer, a 1 s timer and no timer; also printed as
 *                      JSON lines for `uvpatch bench`.
 *
 * The cases that need the stand-ins skip on the base, saying so; the
 * proof runs there and fails.
 */

#include "uv.h"
#include "harness.h"
#include "stats.h"

#define MODEL_NOTE "model: does not prove the real Windows kernel's behaviour"

#ifdef _WIN32

#include <windows.h>

#define SAMPLES 50
#define CYCLES 200
#define WATCHDOG_MS 10000
#define TICK_NS 15625000ULL
#define HANDLE_SLACK 4
#define MAX_PACKETS 16

#include "timer_probe.h"

#define MODEL_STATUS_SUCCESS ((LONG) 0x00000000L)
#define MODEL_STATUS_PENDING ((LONG) 0x00000103L)
#define MODEL_STATUS_INVALID_HANDLE ((LONG) 0xC0000008L)
#define MODEL_STATUS_INVALID_PARAMETER ((LONG) 0xC000000DL)
#define MODEL_STATUS_CANCELLED ((LONG) 0xC0000120L)

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

/* One stand-in packet and its association. */
struct packet {
  HANDLE handle;      /* An event: the object CloseHandle() closes. */
  HANDLE wait;        /* The thread-pool wait of the association. */
  HANDLE iocp;
  ULONG_PTR key;
  void* apc;
  LONG status;
  ULONG_PTR info;
  int active;         /* Associated, and not cancelled since. */
  int fired;          /* Its completion was posted. */
  long queued;        /* Posted and not dequeued yet. */
  long stale;         /* Of those, posted for an ended association. */
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
  long stale_left;        /* Cancelled with the completion still queued. */
  long stale_dequeued;    /* Dequeued after their association ended. */
  long pending;           /* STATUS_PENDING answers. */
  long pending_ms;        /* ... followed by a wait in milliseconds. */
  long pending_other;     /* ... followed by another wait (wrong). */
  long pending_armed;     /* ... followed by arming anyway (wrong). */
};

static CRITICAL_SECTION model_lock;
static struct packet packets[MAX_PACKETS];
static struct counts counts;
static HANDLE timers[MAX_PACKETS];
static int tick_model;        /* Round finite timeouts up to the grid. */
static int pending_every;     /* Answer STATUS_PENDING every Nth cancel. */
static int pending_round;     /* Last cancel answered STATUS_PENDING. */
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


/* Notes what one call dequeued: the stand-ins' completions among them. */
static void account(const OVERLAPPED_ENTRY* entries, ULONG n) {
  ULONG i;
  int j;

  EnterCriticalSection(&model_lock);
  for (i = 0; i < n; i++) {
    for (j = 0; j < MAX_PACKETS; j++) {
      if (packets[j].handle == NULL || packets[j].queued == 0 ||
          packets[j].key != entries[i].lpCompletionKey) {
        continue;
      }
      packets[j].queued--;
      if (packets[j].stale > 0) {
        packets[j].stale--;
        counts.stale_dequeued++;
      }
      break;
    }
  }
  LeaveCriticalSection(&model_lock);
}


static BOOL WINAPI model_gqcs(HANDLE port, LPOVERLAPPED_ENTRY entries,
                              ULONG n, PULONG count, DWORD timeout,
                              BOOL alertable) {
  uint64_t end;
  uint64_t now;
  DWORD ms;
  BOOL r;

  counts.gqcs++;
  if (timeout != 0)
    counts.blocking++;
  if (timeout != 0 && timeout != INFINITE)
    counts.ms_waits++;
  if (pending_round) {
    pending_round = 0;
    if (timeout != 0 && timeout != INFINITE)
      counts.pending_ms++;
    else
      counts.pending_other++;
  }

  if (!tick_model || timeout == 0 || timeout == INFINITE) {
    r = real_gqcs(port, entries, n, count, timeout, alertable);
    if (r)
      account(entries, *count);
    return r;
  }

  /* The timeout ends on the first point of the grid at or after it. */
  end = qpc_ns() + (uint64_t) timeout * 1000000;
  end = (end + TICK_NS - 1) / TICK_NS * TICK_NS;
  for (;;) {
    now = qpc_ns();
    ms = now >= end ? 0 : (DWORD) ((end - now + 999999) / 1000000);
    r = real_gqcs(port, entries, n, count, ms, alertable);
    if (r) {
      account(entries, *count);
      return r;
    }
    if (GetLastError() != WAIT_TIMEOUT || ms == 0)
      return r;
    if (qpc_ns() >= end) {
      SetLastError(WAIT_TIMEOUT);
      return FALSE;
    }
  }
}


static BOOL WINAPI model_set_timer(HANDLE timer, const LARGE_INTEGER* due,
                                   LONG period, PTIMERAPCROUTINE fn,
                                   LPVOID arg, BOOL resume) {
  counts.set_timer++;
  if (pending_round)
    counts.pending_armed++;
  return real_set_timer(timer, due, period, fn, arg, resume);
}


static HANDLE WINAPI model_create_timer(LPSECURITY_ATTRIBUTES sa,
                                        LPCWSTR name, DWORD flags,
                                        DWORD access) {
  HANDLE h;
  int i;

  h = real_create_timer(sa, name, flags, access);
  if (h == NULL && (flags & 2))  /* CREATE_WAITABLE_TIMER_HIGH_RESOLUTION */
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

  p = find_packet(h);
  if (p != NULL) {
    counts.packets_closed++;
    if (p->active)
      counts.closed_associated++;
    end_association(p);
    p->handle = NULL;
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

  (void) timed_out;
  p = arg;
  EnterCriticalSection(&model_lock);
  if (p->active && !p->fired) {
    p->fired = 1;
    p->queued++;
    counts.posted++;
    PostQueuedCompletionStatus(p->iocp, (DWORD) p->info, p->key,
                               (LPOVERLAPPED) p->apc);
  }
  LeaveCriticalSection(&model_lock);
}


static LONG WINAPI model_create(HANDLE* out, ACCESS_MASK access,
                                void* attributes) {
  struct packet* p;
  int i;

  (void) access;
  (void) attributes;
  counts.create++;
  p = NULL;
  for (i = 0; i < MAX_PACKETS && p == NULL; i++)
    if (packets[i].handle == NULL)
      p = &packets[i];
  if (p == NULL)
    return MODEL_STATUS_INVALID_PARAMETER;
  memset(p, 0, sizeof(*p));
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
  if (pending_round)
    counts.pending_armed++;
  p = find_packet(h);
  if (p == NULL)
    return MODEL_STATUS_INVALID_HANDLE;
  if (p->active)
    return MODEL_STATUS_INVALID_PARAMETER;

  EnterCriticalSection(&model_lock);
  p->iocp = iocp;
  p->key = (ULONG_PTR) key;
  p->apc = apc;
  p->status = status;
  p->info = info;
  p->fired = 0;
  p->active = 1;
  LeaveCriticalSection(&model_lock);

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
  struct packet* p;
  LONG status;

  (void) remove_signaled;
  counts.cancel++;
  p = find_packet(h);
  if (p == NULL)
    return MODEL_STATUS_INVALID_HANDLE;

  /* A completion being queued cannot be cancelled yet: the association
   * stays, and its completion arrives later.
   */
  if (p->active && pending_every != 0 &&
      counts.cancel % pending_every == 0) {
    counts.pending++;
    pending_round = 1;
    return MODEL_STATUS_PENDING;
  }

  status = MODEL_STATUS_SUCCESS;
  EnterCriticalSection(&model_lock);
  if (p->active && p->fired) {
    /* The timer fired: the real call would remove the queued completion;
     * the stand-in cannot, so it stays queued.
     */
    status = MODEL_STATUS_CANCELLED;
    if (p->queued > p->stale)
      counts.stale_left++;
    p->stale = p->queued;
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


/* Points libuv's pointers at the stand-ins (`on`) or at nothing. */
static void stand_ins(int on) {
#ifdef UVPATCH_HAVE_WAIT_PACKETS
  pNtCreateWaitCompletionPacket = on ? model_create : NULL;
  pNtAssociateWaitCompletionPacket = on ? model_associate : NULL;
  pNtCancelWaitCompletionPacket = on ? model_cancel : NULL;
#else
  (void) on;
#endif
}


/* Installs the hooks and the stand-ins, once; resets the counts. Returns
 * nonzero when a hook could not be installed.
 */
static int model_setup(void) {
  uv_loop_t loop;

  if (!installed) {
    InitializeCriticalSection(&model_lock);
    /* libuv fills its pointers from ntdll on its first uv_loop_init():
     * let it, then replace them.
     */
    if (uv_loop_init(&loop) != 0 || uv_loop_close(&loop) != 0)
      return -1;
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
  stand_ins(1);
  tick_model = 1;
  pending_every = 0;
  pending_round = 0;
  memset(&counts, 0, sizeof(counts));
  return 0;
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
          name, MODEL_NOTE, n, ms(s[0]), ms(s[n / 2]), ms(s[n - 1]),
          p->early);
  return s[n / 2];
}


/* Runs `n` one-shot 1 ms timers on a new loop. */
static int run_oneshots(const char* name, int n, uint64_t* median,
                        int* early) {
  return probe_run_oneshots(name, n, 1, report, median, early);
}


static int tick_1ms_median(void) {
  uint64_t median;
  int early;

  SETUP();
  if (run_oneshots("tick_1ms_median", SAMPLES, &median, &early) != 0)
    FAIL("%s: no %d samples within %d ms", MODEL_NOTE, SAMPLES,
         WATCHDOG_MS);
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


static int stale_completion(void) {
  struct probe p;
  struct stale s;
  uv_thread_t tid;
  uv_loop_t loop;
  int rounds;
  int i;

  NEEDS_STAND_INS();
  SETUP();
  rounds = 20;
  memset(&s, 0, sizeof(s));
  CHECK_UV(uv_loop_init(&loop));
  CHECK(probe_init(&p, &loop) == 0);
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
          "timer_model/stale_completion (%s): stale completions left "
          "queued=%ld dequeued=%ld, wake-ups=%d\n",
          MODEL_NOTE, counts.stale_left, counts.stale_dequeued, s.seen);
  uv_close((uv_handle_t*) &s.async, NULL);
  probe_close(&p);
  CHECK_UV(uv_loop_close(&loop));
  if (p.timed_out || p.count != 2 * rounds)
    FAIL("%s: %d of %d timers ran", MODEL_NOTE, p.count, 2 * rounds);
  if (p.early != 0)
    FAIL("%s: %d of %d timers ran early", MODEL_NOTE, p.early, 2 * rounds);
  if (counts.stale_left == 0 || counts.stale_dequeued == 0)
    FAIL("%s: no stale completion was produced (left %ld, dequeued %ld)",
         MODEL_NOTE, counts.stale_left, counts.stale_dequeued);
  if (s.seen < rounds)
    FAIL("%s: %d of %d wake-ups seen", MODEL_NOTE, s.seen, 2 * rounds);
  return CASE_OK;
}


static int cancel_pending(void) {
  uint64_t median;
  int early;

  NEEDS_STAND_INS();
  SETUP();
  pending_every = 3;
  if (run_oneshots("cancel_pending", SAMPLES, &median, &early) != 0)
    FAIL("%s: not every timer ran within %d ms (a timer lost?)", MODEL_NOTE,
         WATCHDOG_MS);
  fprintf(stderr,
          "timer_model/cancel_pending (%s): STATUS_PENDING answers=%ld, "
          "then a wait in ms=%ld, another wait=%ld, armed anyway=%ld\n",
          MODEL_NOTE, counts.pending, counts.pending_ms,
          counts.pending_other, counts.pending_armed);
  if (early != 0)
    FAIL("%s: %d of %d timers ran early", MODEL_NOTE, early, SAMPLES);
  if (counts.pending == 0)
    FAIL("%s: the stand-in never answered STATUS_PENDING", MODEL_NOTE);
  if (counts.pending_armed != 0)
    FAIL("%s: %ld times the timer was armed after STATUS_PENDING",
         MODEL_NOTE, counts.pending_armed);
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
                     10, &median, &early) != 0) {
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
  CHECK(one_cycle(&fired) == 0);
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
  CHECK(fired == CYCLES);
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


/* Arming calls per poll that waits: each round is one uv_run(UV_RUN_ONCE)
 * that blocks. The 1 ms timer's round ends when it fires; the 1 s timer's
 * and the timer-less round end on an uv_async_send() sent before.
 */
static int arming_cost(void) {
  static const char* names[] = { "1ms", "1s", "none" };
  uv_loop_t loop;
  uv_timer_t timer;
  uv_async_t async;
  double calls[3];
  long polls;
  int rounds;
  int mode;
  int i;

  SETUP();
  rounds = 20;
  for (mode = 0; mode < 3; mode++) {
    CHECK_UV(uv_loop_init(&loop));
    CHECK_UV(uv_timer_init(&loop, &timer));
    CHECK_UV(uv_async_init(&loop, &async, noop_async_cb));
    memset(&counts, 0, sizeof(counts));
    for (i = 0; i < rounds; i++) {
      uv_update_time(&loop);
      if (mode == 0)
        CHECK_UV(uv_timer_start(&timer, noop_timer_cb, 1, 0));
      else if (mode == 1)
        CHECK_UV(uv_timer_start(&timer, noop_timer_cb, 1000, 0));
      if (mode != 0)
        CHECK_UV(uv_async_send(&async));
      uv_run(&loop, UV_RUN_ONCE);
      uv_timer_stop(&timer);
    }
    polls = counts.blocking;
    calls[mode] = (double) (counts.cancel + counts.associate +
                            counts.set_timer) / rounds;
    printf("{\"bench\": \"timer_model_arming\", \"timer\": \"%s\", "
           "\"calls_per_poll\": %.2f, \"cancel\": %ld, \"set_timer\": %ld, "
           "\"associate\": %ld, \"rounds\": %d, \"blocking_waits\": %ld, "
           "\"stand_ins\": %s, \"model\": true}\n",
           names[mode], calls[mode], counts.cancel, counts.set_timer,
           counts.associate, rounds, polls,
           have_stand_ins() ? "true" : "false");
    fflush(stdout);
    uv_close((uv_handle_t*) &timer, NULL);
    uv_close((uv_handle_t*) &async, NULL);
    CHECK_UV(uv_run(&loop, UV_RUN_DEFAULT));
    CHECK_UV(uv_loop_close(&loop));
  }
  fprintf(stderr,
          "timer_model/arming_cost (%s): Nt*WaitCompletionPacket + "
          "SetWaitableTimer calls per poll (one uv_run(UV_RUN_ONCE) "
          "each): 1 ms timer %.2f, 1 s timer %.2f, no timer %.2f%s\n",
          MODEL_NOTE, calls[0], calls[1], calls[2],
          have_stand_ins() ? "" : " (base: nothing to arm)");
  if (calls[2] != 0)
    FAIL("%s: %.2f arming calls per poll with no timer", MODEL_NOTE,
         calls[2]);
  if (have_stand_ins() && (calls[0] == 0 || calls[1] == 0))
    FAIL("%s: the high-resolution timer was not armed", MODEL_NOTE);
  return CASE_OK;
}

#else  /* !_WIN32 */

static int windows_only(void) {
  SKIP("%s; Windows-only (cross-built, run under Wine)", MODEL_NOTE);
}

# define tick_1ms_median windows_only
# define stale_completion windows_only
# define cancel_pending windows_only
# define stand_ins_missing windows_only
# define loop_cycles_close windows_only
# define arming_cost windows_only

#endif  /* _WIN32 */


static const test_case cases[] = {
  { "tick_1ms_median", tick_1ms_median },
  { "stale_completion", stale_completion, CASE_THREADS },
  { "cancel_pending", cancel_pending },
  { "stand_ins_missing", stand_ins_missing },
  { "loop_cycles_close", loop_cycles_close },
  { "arming_cost", arming_cost },
  { NULL, NULL }
};


int main(int argc, char** argv) {
  return harness_main(cases, argc, argv);
}
