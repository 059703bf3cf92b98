/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The model put in place (the import hooks and libuv's pointers), and
 * what the cases share: the counts, the report and one-shot timers.
 */

#include "timer_model.h"

#ifdef _WIN32

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


int have_stand_ins(void) {
#ifdef UVPATCH_HAVE_WAIT_PACKETS
  return 1;
#else
  return 0;
#endif
}


/* Points libuv's pointers at the stand-ins (`on`) or at nothing. In real
 * mode the "stand-ins" count and call the kernel's own functions.
 */
void stand_ins(int on) {
#ifdef UVPATCH_HAVE_WAIT_PACKETS
  pNtCreateWaitCompletionPacket = on ? model_create : NULL;
  pNtAssociateWaitCompletionPacket = on ? model_associate : NULL;
  pNtCancelWaitCompletionPacket = on ? model_cancel : NULL;
#else
  (void) on;
#endif
}


/* Under Wine, whose ntdll exports wine_get_version. */
int under_wine(void) {
  HMODULE ntdll;

  ntdll = GetModuleHandleA("ntdll.dll");
  return ntdll != NULL && GetProcAddress(ntdll, "wine_get_version") != NULL;
}


/* Installs the hooks and the stand-ins, once; resets the counts. Returns
 * nonzero when a hook could not be installed.
 */
int model_setup(void) {
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


const char* note(void) {
  return real_mode ? REAL_NOTE : MODEL_NOTE;
}

/* The extra calls: Nt*WaitCompletionPacket and SetWaitableTimer. */
long arming_calls(void) {
  return counts.cancel + counts.associate + counts.set_timer;
}


/* The median of the samples taken; prints the statistics line. */
uint64_t report(const char* name, struct probe* p) {
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


int kick_rounds;  /* run_oneshots() wakes each round's first wait. */


static void kick_cb(uv_async_t* handle) {
  (void) handle;
}


/* Runs `n` one-shot timers of `timeout` ms on a new, watched loop; with
 * kick_rounds, an uv_async_send() ends each round's first wait at once.
 */
int run_oneshots(const char* name, int n, uint64_t timeout,
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

/* The counters of a run, once f->seconds is set. */
void take_figures(struct figures* f) {
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

#endif  /* _WIN32 */
