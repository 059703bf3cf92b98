/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * Callbacks at every point of a backlog: a close, a stop, a stop and
 * start, or a buffer given back early, from the callback of each
 * datagram.
 */

#include "udp_hostile.h"

#ifdef __linux__

/* Callbacks at every point: a backlog of CB_N datagrams is queued before
 * the first poll, and the callback of datagram k (k = 1..CB_N) acts.
 */
#define CB_N 40

enum {
  ACT_CLOSE,
  ACT_STOP,          /* Stop; restart from the check handle. */
  ACT_STOP_START,    /* Stop and start again in the same callback. */
  ACT_FREE_EARLY     /* Give the buffer back at once (see below). */
};

typedef struct {
  uv_loop_t loop;
  uv_udp_t udp;
  uv_timer_t safety;
  uv_check_t check;
  int action;
  int chunks;
  int k;
  int acted;
  close_watch watch;
  int stopped;
  int restarts;
  int count;                  /* Datagram callbacks so far. */
  int seen[CB_N];
  int this_iter;
  int max_iter;
  /* Ownership of the buffers from alloc_cb (malloc'd each time). */
  char* slab;                 /* The recvmmsg buffer lent out, if any. */
  long allocs;
  long frees;
  /* After uv_close: what still came. */
  int allocs_after_close;
  int chunks_after_close;
  int frees_after_close;
  int others_after_close;
  int max_seq_after_close;
  int cbs_while_stopped;
  int frees_while_stopped;
  int drained;                /* EAGAIN seen after acting. */
  int timed_out;
  char err[256];
} cctx;

static cctx cc;


static void cc_error(const char* fmt, ...) {
  va_list ap;

  va_start(ap, fmt);
  harness_note_first(cc.err, sizeof(cc.err), fmt, ap);
  va_end(ap);
}

static void cc_finish(void) {
  if (!uv_is_closing((uv_handle_t*) &cc.udp))
    close_watched((uv_handle_t*) &cc.udp, &cc.watch);
  close_handles(&cc.loop);
}


static void cc_alloc(uv_handle_t* handle, size_t suggested, uv_buf_t* buf) {
  size_t len;

  (void) handle;
  if (cc.watch.closed)
    cc.allocs_after_close++;
  if (cc.stopped)
    cc.cbs_while_stopped++;
  if (cc.chunks != 0 && cc.slab != NULL)
    cc_error("alloc_cb while the recvmmsg buffer is still lent out");
  len = cc.chunks ? (size_t) cc.chunks * DGRAM_MAX : suggested;
  buf->base = malloc(len);
  buf->len = buf->base == NULL ? 0 : len;
  if (buf->base == NULL)
    return;
  cc.allocs++;
  if (cc.chunks != 0)
    cc.slab = buf->base;
}


static void cc_free(char* p) {
  free(p);
  cc.frees++;
  if (p == cc.slab)
    cc.slab = NULL;
}


static void cc_recv(uv_udp_t* handle,
                    ssize_t nread,
                    const uv_buf_t* buf,
                    const struct sockaddr* addr,
                    unsigned flags);


static void cc_act(uv_udp_t* handle, const uv_buf_t* buf, int* owned) {
  int r;

  cc.acted = 1;
  switch (cc.action) {
    case ACT_CLOSE:
      close_watched((uv_handle_t*) handle, &cc.watch);
      break;
    case ACT_STOP:
      cc.stopped = 1;
      r = uv_udp_recv_stop(handle);
      if (r != 0)
        cc_error("uv_udp_recv_stop: %s", uv_strerror(r));
      /* No more chunks of this batch; in recvmmsg mode UV_UDP_MMSG_FREE
       * still gives the buffer back.
       */
      break;
    case ACT_STOP_START:
      r = uv_udp_recv_stop(handle);
      if (r == 0)
        r = uv_udp_recv_start(handle, cc_alloc, cc_recv);
      if (r != 0)
        cc_error("uv_udp_recv_stop/start: %s", uv_strerror(r));
      cc.restarts++;
      break;
    case ACT_FREE_EARLY:
      /* recvmsg: the buffer is ours in every callback, free it now.
       * recvmmsg: the slab may only be freed once no callback can use it
       * any more, i.e. at UV_UDP_MMSG_FREE, which a stop brings at once,
       * so stop, and restart from the check.
       */
      if (cc.chunks != 0) {
        cc.stopped = 1;
        r = uv_udp_recv_stop(handle);
        if (r != 0)
          cc_error("uv_udp_recv_stop: %s", uv_strerror(r));
      } else {
        cc_free(buf->base);
        *owned = 0;
      }
      break;
  }
}


static void cc_recv(uv_udp_t* handle,
                    ssize_t nread,
                    const uv_buf_t* buf,
                    const struct sockaddr* addr,
                    unsigned flags) {
  int owned;
  int seq;

  if (cc.stopped && !(flags & UV_UDP_MMSG_FREE))
    cc.cbs_while_stopped++;

  if (flags & UV_UDP_MMSG_FREE) {
    if (cc.stopped)
      cc.frees_while_stopped++;
    if (cc.watch.closed)
      cc.frees_after_close++;
    if (buf->base != cc.slab || cc.slab == NULL)
      cc_error("UV_UDP_MMSG_FREE for a buffer not lent out");
    else
      cc_free(buf->base);
    return;
  }

  /* A recvmsg buffer, or the whole recvmmsg slab given back without a
   * batch (EAGAIN, error), is ours to free after this callback.
   */
  owned = !(flags & UV_UDP_MMSG_CHUNK) && buf->base != NULL;

  if (nread < 0) {
    if (cc.watch.closed)
      cc.others_after_close++;
    cc_error("recv_cb: %s", uv_strerror((int) nread));
  } else if (nread == 0 && addr == NULL) {
    if (cc.watch.closed)
      cc.others_after_close++;
    if (cc.acted && !cc.stopped)
      cc.drained = 1;
  } else if (nread != 4 || addr == NULL) {
    cc_error("datagram of %d bytes, addr %p", (int) nread, (void*) addr);
  } else {
    seq = (int) get_seq(buf->base);
    if (seq < 0 || seq >= CB_N)
      cc_error("sequence number %d out of range", seq);
    else if (cc.seen[seq]++)
      cc_error("datagram %d delivered twice", seq);
    if (cc.watch.closed) {
      cc.chunks_after_close++;
      if (seq > cc.max_seq_after_close)
        cc.max_seq_after_close = seq;
    }
    cc.count++;
    cc.this_iter++;
    if (cc.count == cc.k && !cc.acted)
      cc_act(handle, buf, &owned);
  }

  if (owned)
    cc_free(buf->base);
}


static int cc_all_in(void) {
  int i;

  for (i = 0; i < CB_N; i++)
    if (!cc.seen[i])
      return 0;
  return 1;
}


/* 1 if nothing is queued on the socket any more. */
static int cc_socket_empty(void) {
  int fd;
  int n;

  fd = udp_fd(&cc.udp);
  if (fd < 0 || ioctl(fd, FIONREAD, &n) != 0)
    return 0;
  return n == 0;
}


static void cc_on_check(uv_check_t* handle) {
  int r;

  (void) handle;
  if (cc.this_iter > cc.max_iter)
    cc.max_iter = cc.this_iter;
  cc.this_iter = 0;

  if (cc.stopped) {
    /* After a stop the buffer of the interrupted batch is ours. */
    if (cc.slab != NULL)
      cc_free(cc.slab);
    cc.stopped = 0;
    cc.restarts++;
    r = uv_udp_recv_start(&cc.udp, cc_alloc, cc_recv);
    if (r != 0)
      cc_error("uv_udp_recv_start: %s", uv_strerror(r));
  }
  /* Done when closed or when all that was sent has been read. */
  if (cc.watch.closed || cc.drained || cc_all_in() ||
      (cc.acted && cc_socket_empty()))
    cc_finish();
}


static void cc_on_safety(uv_timer_t* handle) {
  (void) handle;
  cc.timed_out = 1;
  cc_finish();
}


/* The lowest sequence number not delivered, or CB_N. */
static int cc_first_missing(void) {
  int i;

  for (i = 0; i < CB_N; i++)
    if (!cc.seen[i])
      return i;
  return CB_N;
}


/* One sub-iteration. Returns 0, or -1 with reason filled in. Adds what was
 * lost to a recv_stop in the middle of a recvmmsg batch to *lost.
 */
static int cc_one(int action,
                  int chunks,
                  int k,
                  int* lost,
                  char* reason,
                  size_t size) {
  struct sockaddr_in a4;
  char payload[4];
  int namelen;
  int value;
  int miss;
  int fd;
  int i;
  int r;

  memset(&cc, 0, sizeof(cc));
  cc.action = action;
  cc.chunks = chunks;
  cc.k = k;
  cc.max_seq_after_close = -1;
  reason[0] = '\0';

#define CC_TRY(expr)                                                          \
  do {                                                                        \
    if (!(expr)) {                                                            \
      snprintf(reason, size, "%s:%d: %s", __FILE__, __LINE__, #expr);         \
      return -1;                                                              \
    }                                                                         \
  } while (0)

  CC_TRY(uv_loop_init(&cc.loop) == 0);
  CC_TRY(uv_udp_init_ex(&cc.loop,
                        &cc.udp,
                        AF_INET | (chunks ? UV_UDP_RECVMMSG : 0)) == 0);
  CC_TRY(uv_ip4_addr("127.0.0.1", 0, &a4) == 0);
  CC_TRY(uv_udp_bind(&cc.udp, (const struct sockaddr*) &a4, 0) == 0);
  value = 1 << 20;
  CC_TRY(uv_recv_buffer_size((uv_handle_t*) &cc.udp, &value) == 0);
  namelen = sizeof(a4);
  CC_TRY(uv_udp_getsockname(&cc.udp, (struct sockaddr*) &a4, &namelen) == 0);
  CC_TRY(uv_timer_init(&cc.loop, &cc.safety) == 0);
  CC_TRY(uv_check_init(&cc.loop, &cc.check) == 0);

  fd = socket(AF_INET, SOCK_DGRAM, 0);
  CC_TRY(fd >= 0);
  for (i = 0; i < CB_N; i++) {
    put_seq(payload, (unsigned long) i);
    if (sendto(fd, payload, sizeof(payload), 0,
               (struct sockaddr*) &a4, sizeof(a4)) != sizeof(payload))
      break;
  }
  close(fd);
  CC_TRY(i == CB_N);

  CC_TRY(uv_check_start(&cc.check, cc_on_check) == 0);
  CC_TRY(uv_timer_start(&cc.safety, cc_on_safety, 2000, 0) == 0);
  CC_TRY(uv_udp_recv_start(&cc.udp, cc_alloc, cc_recv) == 0);
  uv_run(&cc.loop, UV_RUN_DEFAULT);
  cc_finish();
  uv_run(&cc.loop, UV_RUN_DEFAULT);
  r = uv_loop_close(&cc.loop);

  /* A slab still lent out when the handle closed is ours again. */
  if (cc.slab != NULL)
    cc_free(cc.slab);

#define CC_FAIL(...)                                                          \
  do {                                                                        \
    snprintf(reason, size, __VA_ARGS__);                                      \
    return -1;                                                                \
  } while (0)

  if (cc.err[0] != '\0')
    CC_FAIL("%s", cc.err);
  if (r != 0)
    CC_FAIL("uv_loop_close: %s", uv_strerror(r));
  if (cc.timed_out)
    CC_FAIL("timed out with %d datagrams delivered", cc.count);
  if (!cc.acted)
    CC_FAIL("datagram %d never came", k);
  if (cc.allocs != cc.frees)
    CC_FAIL("%ld buffers allocated, %ld freed", cc.allocs, cc.frees);
  if (cc.max_iter > BUDGET)
    CC_FAIL("%d datagrams in one loop iteration", cc.max_iter);
  if (cc.cbs_while_stopped != 0)
    CC_FAIL("%d callbacks after uv_udp_recv_stop", cc.cbs_while_stopped);
  /* recvmmsg: a stop from a chunk's callback still gives the buffer back,
   * once (upstream gives it none, and it is lost).
   */
  if ((action == ACT_STOP || action == ACT_FREE_EARLY) && chunks != 0 &&
      cc.frees_while_stopped != 1)
    CC_FAIL("UV_UDP_MMSG_FREE %d times after uv_udp_recv_stop, want 1",
            cc.frees_while_stopped);

  if (action == ACT_CLOSE) {
    if (cc.watch.close_cbs != 1)
      CC_FAIL("close_cb called %d times", cc.watch.close_cbs);
    if (cc.allocs_after_close != 0)
      CC_FAIL("%d alloc_cb calls after uv_close", cc.allocs_after_close);
    if (cc.others_after_close != 0)
      CC_FAIL("%d empty or error callbacks after uv_close",
              cc.others_after_close);
    if (chunks == 0 && cc.chunks_after_close + cc.frees_after_close != 0)
      CC_FAIL("%d callbacks after uv_close", cc.chunks_after_close);
    /* recvmmsg: the rest of the batch already read still comes, then one
     * UV_UDP_MMSG_FREE (as in v1.50.0), nothing beyond the batch.
     */
    if (chunks != 0 && cc.max_seq_after_close >= k - 1 + chunks)
      CC_FAIL("datagram %d after uv_close at %d, beyond the batch",
              cc.max_seq_after_close, k);
    if (chunks != 0 && cc.frees_after_close != 1)
      CC_FAIL("UV_UDP_MMSG_FREE %d times after uv_close",
              cc.frees_after_close);
    *lost += cc.chunks_after_close;  /* Counted as "after close" here. */
    return 0;
  }

  /* Stop, stop and start, free early: every datagram once, except in
   * recvmmsg mode after a stop the rest of the interrupted batch (read from
   * the socket, never handed over), a run right after datagram k.
   */
  miss = 0;
  for (i = 0; i < CB_N; i++)
    if (!cc.seen[i])
      miss++;
  if (miss != 0) {
    i = cc_first_missing();
    if (chunks == 0 || action == ACT_STOP_START)
      CC_FAIL("%d datagrams never delivered, the first %d", miss, i);
    if (i != k)
      CC_FAIL("datagram %d never delivered (stopped at %d)", i, k - 1);
    for (i = k; i < k + miss && i < CB_N; i++)
      if (cc.seen[i])
        CC_FAIL("datagrams lost after the stop are not one run");
    if (miss >= chunks)
      CC_FAIL("%d datagrams lost after a stop, more than a batch", miss);
  }
  *lost += miss;
  return 0;
}


static int callbacks_case(int action) {
  static const int modes[] = { 0, CB_CHUNKS };
  char reason[300];
  int lost[2];
  int m;
  int k;

  for (m = 0; m < 2; m++) {
    lost[m] = 0;
    for (k = 1; k <= CB_N; k++) {
      if (cc_one(action, modes[m], k, &lost[m], reason, sizeof(reason)))
        FAIL("%s, k=%d: %s", modes[m] ? "recvmmsg 7 chunks" : "recvmsg", k,
             reason);
    }
  }
  fprintf(stderr, "# callbacks_at_every_point action %d: 2x%d runs; %s: "
          "recvmsg %d, recvmmsg %d\n", action, CB_N,
          action == ACT_CLOSE ? "chunks delivered after uv_close"
                              : "datagrams lost to a mid-batch stop",
          lost[0], lost[1]);
  return CASE_OK;
}

#endif  /* __linux__ */

int case_cb_close(void) {
#ifndef __linux__
  SKIP(LINUX_ONLY);
#else
  return callbacks_case(ACT_CLOSE);
#endif
}

int case_cb_stop(void) {
#ifndef __linux__
  SKIP(LINUX_ONLY);
#else
  return callbacks_case(ACT_STOP);
#endif
}

int case_cb_stop_start(void) {
#ifndef __linux__
  SKIP(LINUX_ONLY);
#else
  return callbacks_case(ACT_STOP_START);
#endif
}

int case_cb_free_early(void) {
#ifndef __linux__
  SKIP(LINUX_ONLY);
#else
  return callbacks_case(ACT_FREE_EARLY);
#endif
}
