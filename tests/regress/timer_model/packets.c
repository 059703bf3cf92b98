/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The stand-ins of NtCreateWaitCompletionPacket,
 * NtAssociateWaitCompletionPacket and NtCancelWaitCompletionPacket.
 */

#include "timer_model.h"

#ifdef _WIN32

/* Ends the association of `p`: no completion is posted after this. */
void end_association(struct packet* p) {
  HANDLE wait;

  EnterCriticalSection(&model_lock);
  wait = p->wait;
  p->wait = NULL;
  p->active = 0;
  LeaveCriticalSection(&model_lock);
  if (wait != NULL)
    UnregisterWaitEx(wait, INVALID_HANDLE_VALUE);
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


LONG WINAPI model_create(HANDLE* out, ACCESS_MASK access,
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


LONG WINAPI model_associate(HANDLE h, HANDLE iocp, HANDLE target,
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


LONG WINAPI model_cancel(HANDLE h, BOOLEAN remove_signaled) {
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

#endif  /* _WIN32 */
