/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The receivers' callbacks: what each hands over, per loop iteration.
 */

#include "udp_budget.h"

void ctx_error(test_ctx* c, const char* fmt, ...) {
  va_list ap;

  va_start(ap, fmt);
  harness_note_first(c->err, sizeof(c->err), fmt, ap);
  va_end(ap);
}


static void format_log(char* out, size_t size, const int* log, int n) {
  size_t len;
  int i;

  out[0] = '\0';
  len = 0;
  for (i = 0; i < n && len + 16 < size; i++)
    len += snprintf(out + len, size - len, i == 0 ? "%d" : " %d", log[i]);
  if (i < n)
    snprintf(out + len, size - len, " ...");
  if (n == 0)
    snprintf(out, size, "(nothing)");
}


/* 0 if log[0..n) equals want[0..nwant), else fills reason. */
int compare_log(const int* log,
                int n,
                const int* want,
                int nwant,
                char* reason,
                size_t size) {
  char got_s[200];
  char want_s[200];
  int i;

  if (n == nwant) {
    for (i = 0; i < n; i++)
      if (log[i] != want[i])
        break;
    if (i == n)
      return 0;
  }
  format_log(got_s, sizeof(got_s), log, n);
  format_log(want_s, sizeof(want_s), want, nwant);
  snprintf(reason, size, "got %s, want %s", got_s, want_s);
  return -1;
}


static void on_close(uv_handle_t* handle) {
  receiver* r;

  if (handle->type == UV_UDP) {
    r = handle->data;
    r->close_cb_called++;
  }
}


void finish(test_ctx* c) {
  int i;

  if (c->finished)
    return;
  c->finished = 1;
  for (i = 0; i < c->nreceivers; i++)
    if (!uv_is_closing((uv_handle_t*) &c->rx[i]->handle))
      uv_close((uv_handle_t*) &c->rx[i]->handle, on_close);
  uv_close((uv_handle_t*) &c->check, NULL);
  uv_close((uv_handle_t*) &c->safety, NULL);
  if (c->use_tick)
    uv_close((uv_handle_t*) &c->tick, NULL);
}


static void on_alloc(uv_handle_t* handle, size_t suggested, uv_buf_t* buf) {
  receiver* r;

  (void) suggested;
  r = handle->data;
  r->allocs++;
  if (r->closed)
    r->allocs_after_close++;
  if (r->stopped)
    r->cbs_after_stop++;
  if (r->enobufs_this_iter)
    r->cbs_after_enobufs++;

  if (r->nobufs_alloc != 0 && r->allocs == r->nobufs_alloc) {
    *buf = uv_buf_init(NULL, 0);
    return;
  }

  if (r->chunks == 0) {
    *buf = uv_buf_init(r->slab, (unsigned int) r->slab_len);
    return;
  }

  if (r->slab_out)
    ctx_error(r->ctx, "alloc_cb while the last buffer was still lent out");
  if (r->batch_chunks != 0)
    ctx_error(r->ctx,
              "a batch of %d chunks ended without UV_UDP_MMSG_FREE",
              r->batch_chunks);
  r->slab_out = 1;
  *buf = uv_buf_init(r->slab, (unsigned int) r->slab_len);
}


static void on_datagram(receiver* r, ssize_t nread, const uv_buf_t* buf) {
  test_ctx* c;
  uv_buf_t echo;
  char payload[4];
  unsigned seq;
  int n;

  c = r->ctx;
  if (nread != 4) {
    ctx_error(c, "datagram of %d bytes, want 4", (int) nread);
    return;
  }
  seq = get_seq(buf->base);
  r->received++;
  r->this_iter++;

  if (r->closed) {
    r->dgrams_after_close++;
    if (seq > r->max_seq_after_close)
      r->max_seq_after_close = seq;
  }

  if (r->check_seq) {
    if (seq != r->next_seq)
      ctx_error(c, "got sequence number %u, want %u (lost, duplicated or "
                "reordered)", seq, r->next_seq);
    r->next_seq = seq + 1;
  }

  if (seq < r->feed_below && !r->closed && !r->stopped) {
    put_seq(payload, seq + r->feed_below);
    echo = uv_buf_init(payload, sizeof(payload));
    n = uv_udp_try_send(&r->handle,
                        &echo,
                        1,
                        (const struct sockaddr*) &r->addr);
    if (n != (int) sizeof(payload))
      ctx_error(c, "uv_udp_try_send to self: %d", n);
  }

  if ((int) seq == r->stop_at && !r->stopped) {
    r->stopped = 1;
    r->stop_iter = r->nlog;
    n = uv_udp_recv_stop(&r->handle);
    if (n != 0)
      ctx_error(c, "uv_udp_recv_stop: %s", uv_strerror(n));
  }

  if ((int) seq == r->close_at && !r->closed) {
    r->closed = 1;
    r->stop_iter = r->nlog;
    uv_close((uv_handle_t*) &r->handle, on_close);
  }
}


static void on_recv(uv_udp_t* handle,
                    ssize_t nread,
                    const uv_buf_t* buf,
                    const struct sockaddr* addr,
                    unsigned flags) {
  receiver* r;

  r = handle->data;
  if (r->stopped && !(flags & UV_UDP_MMSG_FREE))
    r->cbs_after_stop++;
  if (r->enobufs_this_iter)
    r->cbs_after_enobufs++;

  if (flags & UV_UDP_MMSG_FREE) {
    if (r->stopped)
      r->frees_after_stop++;
    if (r->closed)
      r->frees_after_close++;
    if (buf->base != r->slab || !r->slab_out)
      ctx_error(r->ctx, "UV_UDP_MMSG_FREE for a buffer not lent out");
    if (r->batch_chunks == 0)
      ctx_error(r->ctx, "UV_UDP_MMSG_FREE twice or for an empty batch");
    r->mmsg_frees++;
    r->batch_chunks = 0;
    r->slab_out = 0;
    return;
  }

  if (flags & UV_UDP_MMSG_CHUNK)
    r->batch_chunks++;
  else if (r->chunks != 0 && buf->base == r->slab)
    r->slab_out = 0;  /* Given back without a batch (EAGAIN, error). */

  if (nread == UV_ENOBUFS) {
    r->enobufs++;
    r->enobufs_this_iter = 1;
    return;
  }
  if (nread < 0) {
    ctx_error(r->ctx, "recv_cb: %s", uv_strerror((int) nread));
    return;
  }
  if (nread == 0 && addr == NULL)
    return;  /* Nothing (more) to read. */
  if (addr == NULL) {
    ctx_error(r->ctx, "datagram without a peer address");
    return;
  }
  on_datagram(r, nread, buf);
}


/* Starts receiving on r, with the callbacks above. */
int receiver_start(receiver* r) {
  return uv_udp_recv_start(&r->handle, on_alloc, on_recv);
}


static int all_received(test_ctx* c) {
  int i;

  for (i = 0; i < c->nreceivers; i++) {
    if (c->rx[i]->closed)
      continue;
    if (c->rx[i]->received < c->rx[i]->expected)
      return 0;
  }
  return 1;
}


void on_check(uv_check_t* handle) {
  test_ctx* c;
  receiver* r;
  int total;
  int i;
  int n;

  c = handle->data;
  total = 0;
  for (i = 0; i < c->nreceivers; i++) {
    r = c->rx[i];
    r->enobufs_this_iter = 0;
    if (r->this_iter == 0)
      continue;
    if (r->nlog < MAX_LOG)
      r->log[r->nlog++] = r->this_iter;
    if (r->this_iter > r->max_iter)
      r->max_iter = r->this_iter;
    total += r->this_iter;
    r->this_iter = 0;
  }
  if (total > 0 && c->total_nlog < MAX_LOG)
    c->total_log[c->total_nlog++] = total;

  /* Resume a receiver stopped in the middle of a batch. */
  for (i = 0; i < c->nreceivers; i++) {
    r = c->rx[i];
    if (!r->stopped || !c->restart_after_stop)
      continue;
    if (r->cbs_after_stop != 0)
      ctx_error(c, "%d callbacks after uv_udp_recv_stop", r->cbs_after_stop);
    r->stopped = 0;
    r->stop_at = -1;
    r->next_seq = r->resume_seq;
    r->slab_out = 0;
    r->batch_chunks = 0;
    n = receiver_start(r);
    if (n != 0)
      ctx_error(c, "uv_udp_recv_start: %s", uv_strerror(n));
  }

  if (!c->use_tick && all_received(c))
    finish(c);
}


void on_safety(uv_timer_t* handle) {
  test_ctx* c;

  c = handle->data;
  if (!c->use_tick)
    c->timed_out = 1;
  finish(c);
}


#ifndef _WIN32
void on_tick(uv_timer_t* handle) {
  test_ctx* c;

  c = handle->data;
  c->ticks++;
}
#endif  /* !_WIN32 */
