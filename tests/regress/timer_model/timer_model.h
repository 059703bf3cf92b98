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
 *   completion is queued at once; a cancel answers STATUS_SUCCESS while
 *   the association waits and STATUS_CANCELLED after expiry, and with
 *   RemoveSignaledPacket withdraws a completion that is queued and not
 *   yet dequeued (the hook drops it, so it never ends a wait). Harsher
 *   answers can be forced: STATUS_PENDING (the completion is being
 *   queued: the association stays and its completion arrives later), a
 *   cancel that fails (the association stays as it is), and, for the
 *   worst case, a queued completion that cannot be withdrawn
 *   (STATUS_CANCELLED, left queued).
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
 *                      spurious wake-ups a second; none may occur (a
 *                      run with one is measured once more).
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
 *
 * The files: the model, in model.c (the hook of the wait, and what it
 * counts), packets.c (the stand-ins) and setup.c (the import hooks, and
 * what the cases share); a file per behaviour: tick.c, stale.c, io.c,
 * cancel.c, lifecycle.c, arming.c, early.c, drain.c, real_windows.c; and
 * main.c, the table of cases.
 */

#ifndef TIMER_MODEL_H_
#define TIMER_MODEL_H_

#include "uv.h"

#define HARNESS_SHARED
#include "harness.h"
#include "stats.h"

#define MODEL_NOTE "model: does not prove the real Windows kernel's behaviour"
#define REAL_NOTE "real Windows: the kernel's own calls, counted"
#define WINDOWS_ONLY                                                          \
  "%s; Windows-only (cross-built, run under Wine)", MODEL_NOTE

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

/* model.c: the functions the hooks replaced, and the model's state. */
extern gqcs_fn real_gqcs;
extern set_timer_fn real_set_timer;
extern create_timer_fn real_create_timer;
extern close_fn real_close;

/* The kernel's own calls, for real_windows: what libuv found in ntdll. */
extern create_fn kernel_create;
extern associate_fn kernel_associate;
extern cancel_fn kernel_cancel;

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

extern CRITICAL_SECTION model_lock;
extern struct packet packets[MAX_PACKETS];
extern struct posted posted[MAX_POSTED];
extern struct counts counts;
extern HANDLE timers[MAX_PACKETS];
extern uint64_t timer_due[MAX_PACKETS]; /* QPC ns a timer is set for. */
extern ULONG_PTR real_keys[MAX_KEYS]; /* Keys libuv associated (real). */
extern int real_nkeys;
extern int real_mode;         /* Count the kernel's calls, replace none. */
extern int tick_model;        /* Round finite timeouts up to the grid. */
extern int withdraw;          /* Cancels withdraw queued completions. */
extern int pending_every;     /* Answer STATUS_PENDING every Nth cancel. */
extern int pending_round;     /* Last cancel answered STATUS_PENDING. */
extern int fail_cancels;      /* Cancels still to fail (cancel_fails). */
extern uint64_t early_ns;     /* Timers expire this early (ns). */
extern ULONG_PTR stale_key;   /* stale_infinite: post a completion with this
                               * key to the next blocking wait. */
extern int associated;        /* SetWaitableTimer() was called since the
                               * last GetQueuedCompletionStatusEx() call. */
extern uv_loop_t* watched;    /* The loop a check handle watches. */
extern int drained;           /* The embedder drained the port. */
extern int installed;

uint64_t qpc_ns(void);
struct packet* find_packet(HANDLE h);
struct posted* queued_of(struct packet* p);
int real_key(ULONG_PTR key);
ULONG account(LPOVERLAPPED_ENTRY entries, ULONG n, int* timer_only,
              int* stale_only);
BOOL WINAPI model_gqcs(HANDLE port, LPOVERLAPPED_ENTRY entries,
                       ULONG n, PULONG count, DWORD timeout,
                       BOOL alertable);
int watch(uv_loop_t* loop, uv_check_t* check, uint64_t* due);
void unwatch(uv_check_t* check);
BOOL WINAPI model_set_timer(HANDLE timer, const LARGE_INTEGER* due,
                            LONG period, PTIMERAPCROUTINE fn,
                            LPVOID arg, BOOL resume);
HANDLE WINAPI model_create_timer(LPSECURITY_ATTRIBUTES sa,
                                 LPCWSTR name, DWORD flags,
                                 DWORD access);
BOOL WINAPI model_close(HANDLE h);

/* packets.c: the stand-ins of the wait completion packet calls. */
void end_association(struct packet* p);
LONG WINAPI model_create(HANDLE* out, ACCESS_MASK access,
                         void* attributes);
LONG WINAPI model_associate(HANDLE h, HANDLE iocp, HANDLE target,
                            void* key, void* apc, LONG status,
                            ULONG_PTR info, BOOLEAN* signaled);
LONG WINAPI model_cancel(HANDLE h, BOOLEAN remove_signaled);

/* setup.c: the model put in place, and what the cases share. */
int have_stand_ins(void);
void stand_ins(int on);
int under_wine(void);
int model_setup(void);
const char* note(void);

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
long arming_calls(void);
uint64_t report(const char* name, struct probe* p);
extern int kick_rounds;
int run_oneshots(const char* name, int n, uint64_t timeout,
                 uint64_t* median, int* early);

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

void take_figures(struct figures* f);

/* Measurements that real_windows takes too. */
#define ARMING_MODES 5

int measure_stale_wakeup(int rounds, struct figures* f);
int measure_io(int bursts, struct figures* f);
int measure_arming(double* calls);

#endif  /* _WIN32 */

/* The cases, in the files of their behaviour (above). */
int tick_1ms_median(void);
int stale_completion(void);
int stale_wakeup(void);
int io_heavy(void);
int cancel_pending(void);
int stand_ins_missing(void);
int loop_cycles_close(void);
int arming_cost(void);
int tick_lateness(void);
int cancel_fails(void);
int zero_timeout_drain(void);
int early_completion(void);
int stale_infinite(void);
int early_repeats(void);
int wakeup_burst(void);
int real_windows(void);

#endif  /* TIMER_MODEL_H_ */
