/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * Regression program for "unix,udp: exact receive budget of 32 datagrams
 * per event".
 *
 * libuv stops reading a readable UDP socket after a budget of 32 so that a
 * flood cannot starve the rest of the loop. In recvmmsg mode v1.50.0 only
 * subtracted a batch after reading it, so the last batch of an event ran
 * over the budget (40 40 20 instead of 32 32 32 4 for a backlog of 100).
 *
 * Every case queues its backlog before the loop polls for the first time
 * and counts the datagrams handed over per loop iteration with a
 * uv_check_t. Payloads carry a sequence number so that loss, duplication
 * and reordering are caught too.
 */

#include "uv.h"
#include "harness.h"
#include "dgram.h"

#ifndef _WIN32
# include <sys/types.h>
# include <sys/socket.h>
# include <netinet/in.h>
# include <signal.h>
# include <unistd.h>
#endif

#define BUDGET 32
#define DGRAM_MAX (64 * 1024)
#define MAX_LOG 256
#define MAX_RECEIVERS 2
#define SAFETY_MS 4000
#define RCVBUF_SIZE (1 << 20)
#define FLOOD_MS 2000
#define TICK_MS 20

#define UNIX_ONLY_REASON "the budget patch is Unix-only"
#define UNIX_LOOP_REASON "checks the Unix receive loop the budget patch changes"

typedef struct test_ctx test_ctx;

typedef struct {
  uv_udp_t handle;
  test_ctx* ctx;
  int chunks;                 /* 0: recvmsg mode, N: N-chunk recvmmsg. */
  char* slab;
  size_t slab_len;
  int slab_out;               /* The slab is lent to libuv. */
  int batch_chunks;           /* Chunks seen since the last MMSG_FREE. */
  unsigned next_seq;
  unsigned expected;          /* Datagrams to receive before done. */
  unsigned received;
  int this_iter;
  int log[MAX_LOG];
  int nlog;
  int max_iter;
  int allocs;
  int mmsg_frees;
  /* Knobs. */
  int check_seq;
  int stop_at;                /* Sequence number to stop at, or -1. */
  int close_at;               /* Sequence number to close at, or -1. */
  int nobufs_alloc;           /* Alloc call that returns nothing, or 0. */
  unsigned feed_below;        /* Echo seq + feed_below for seq below it. */
  /* What happened. */
  int stopped;
  int closed;
  int close_cb_called;
  int cbs_after_stop;
  int frees_after_stop;
  int allocs_after_close;
  int dgrams_after_close;
  int frees_after_close;
  unsigned max_seq_after_close;
  int enobufs;
  int enobufs_this_iter;
  int cbs_after_enobufs;
  int stop_iter;              /* Log index of the iteration that stopped. */
  unsigned resume_seq;        /* First sequence number after a restart. */
  struct sockaddr_storage addr;
} receiver;

struct test_ctx {
  uv_loop_t loop;
  uv_check_t check;
  uv_timer_t safety;
  uv_timer_t tick;
  int use_tick;
  uint64_t safety_ms;
  int ticks;
  int nreceivers;
  receiver* rx[MAX_RECEIVERS];
  int total_log[MAX_LOG];
  int total_nlog;
  int timed_out;
  int finished;
  int restart_after_stop;
  char err[256];
};

static char recvmsg_slab[MAX_RECEIVERS][DGRAM_MAX];


static void ctx_error(test_ctx* c, const char* fmt, ...) {
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
static int compare_log(const int* log,
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


static void finish(test_ctx* c) {
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


static void on_check(uv_check_t* handle) {
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
    n = uv_udp_recv_start(&r->handle, on_alloc, on_recv);
    if (n != 0)
      ctx_error(c, "uv_udp_recv_start: %s", uv_strerror(n));
  }

  if (!c->use_tick && all_received(c))
    finish(c);
}


static void on_safety(uv_timer_t* handle) {
  test_ctx* c;

  c = handle->data;
  if (!c->use_tick)
    c->timed_out = 1;
  finish(c);
}


#ifndef _WIN32
static void on_tick(uv_timer_t* handle) {
  test_ctx* c;

  c = handle->data;
  c->ticks++;
}
#endif  /* !_WIN32 */


static int ctx_init(test_ctx* c) {
  memset(c, 0, sizeof(*c));
  CHECK_UV(uv_loop_init(&c->loop));
  CHECK_UV(uv_check_init(&c->loop, &c->check));
  CHECK_UV(uv_timer_init(&c->loop, &c->safety));
  c->check.data = c;
  c->safety.data = c;
  return CASE_OK;
}


/* Binds a receiver to the loopback address of the family, 0 if it worked,
 * UV_EAFNOSUPPORT or another error if not (the caller decides to skip).
 */
static int receiver_init(test_ctx* c,
                         receiver* r,
                         int family,
                         int chunks,
                         unsigned expected) {
  struct sockaddr_in6 a6;
  struct sockaddr_in a4;
  unsigned int flags;
  int namelen;
  int value;
  int err;

  memset(r, 0, sizeof(*r));
  r->ctx = c;
  r->chunks = chunks;
  r->expected = expected;
  r->check_seq = 1;
  r->stop_at = -1;
  r->close_at = -1;
  c->rx[c->nreceivers] = r;

  if (chunks == 0) {
    r->slab = recvmsg_slab[c->nreceivers];
    r->slab_len = sizeof(recvmsg_slab[0]);
  } else {
    r->slab_len = (size_t) chunks * DGRAM_MAX;
    r->slab = malloc(r->slab_len);
    if (r->slab == NULL)
      return UV_ENOMEM;
  }
  c->nreceivers++;

  flags = family;
  if (chunks != 0)
    flags |= UV_UDP_RECVMMSG;
  err = uv_udp_init_ex(&c->loop, &r->handle, flags);
  if (err)
    return err;
  r->handle.data = r;

  if (family == AF_INET) {
    uv_ip4_addr("127.0.0.1", 0, &a4);
    err = uv_udp_bind(&r->handle, (const struct sockaddr*) &a4, 0);
  } else {
    uv_ip6_addr("::1", 0, &a6);
    err = uv_udp_bind(&r->handle, (const struct sockaddr*) &a6, 0);
  }
  if (err)
    return err;

  namelen = sizeof(r->addr);
  err = uv_udp_getsockname(&r->handle, (struct sockaddr*) &r->addr, &namelen);
  if (err)
    return err;

  /* Room for the whole backlog; Linux doubles the value. */
  value = RCVBUF_SIZE;
  return uv_recv_buffer_size((uv_handle_t*) &r->handle, &value);
}


/* Sends datagrams [first, first + count) to the receiver synchronously, so
 * they are queued before the loop polls.
 */
static int send_backlog(uv_udp_t* from,
                        receiver* r,
                        unsigned first,
                        unsigned count) {
  char payload[4];
  uv_buf_t buf;
  unsigned i;
  int n;

  for (i = first; i < first + count; i++) {
    put_seq(payload, i);
    buf = uv_buf_init(payload, sizeof(payload));
    n = uv_udp_try_send(from, &buf, 1, (const struct sockaddr*) &r->addr);
    if (n != (int) sizeof(payload))
      return n < 0 ? n : UV_EIO;
  }
  return 0;
}


static void receiver_free(receiver* r) {
  if (r->chunks != 0)
    free(r->slab);
  r->slab = NULL;
}


/* Closes what is left and runs the loop dry. */
static int ctx_close(test_ctx* c, uv_udp_t* sender) {
  int i;

  if (sender != NULL && !uv_is_closing((uv_handle_t*) sender))
    uv_close((uv_handle_t*) sender, NULL);
  finish(c);
  uv_run(&c->loop, UV_RUN_DEFAULT);
  for (i = 0; i < c->nreceivers; i++)
    receiver_free(c->rx[i]);
  CHECK_UV(uv_loop_close(&c->loop));
  return CASE_OK;
}


static int skip_mmsg(receiver* r) {
  return r->chunks != 0 && !uv_udp_using_recvmmsg(&r->handle);
}


/* Runs the loop until every receiver got what it expects (or the safety
 * timer fires), then reports: 0 and a clean loop, or CASE_FAIL.
 */
static int run_and_close(test_ctx* c, uv_udp_t* sender) {
  CHECK_UV(uv_check_start(&c->check, on_check));
  CHECK_UV(uv_timer_start(&c->safety,
                          on_safety,
                          c->safety_ms != 0 ? c->safety_ms : SAFETY_MS,
                          0));
  uv_run(&c->loop, UV_RUN_DEFAULT);
  if (ctx_close(c, sender) != CASE_OK)
    return CASE_FAIL;
  if (c->err[0] != '\0')
    FAIL("%s", c->err);
  if (c->timed_out)
    FAIL("timed out after %d ms", SAFETY_MS);
  return CASE_OK;
}


/* Sender handle of the same family as the receiver. */
static int sender_init(test_ctx* c, uv_udp_t* sender, receiver* r) {
  return uv_udp_init_ex(&c->loop, sender, r->addr.ss_family);
}


/* The start of most cases: a loop, a receiver of `family` expecting
 * `expect` datagrams, a sender, n datagrams queued before the first poll
 * and receiving started. Fields of r that steer on_recv() may be set
 * after it: nothing is read before run_and_close(). Returns CASE_OK,
 * CASE_SKIP (no IPv6 loopback, no recvmmsg) or CASE_FAIL.
 */
static int start_backlog(test_ctx* c,
                         receiver* r,
                         uv_udp_t* sender,
                         int family,
                         int chunks,
                         unsigned expect,
                         unsigned n) {
  int err;

  if (ctx_init(c) != CASE_OK)
    return CASE_FAIL;
  err = receiver_init(c, r, family, chunks, expect);
  if (err != 0 && family == AF_INET6) {
    ctx_close(c, NULL);
    SKIP("cannot bind [::1]: %s", uv_strerror(err));
  }
  CHECK_UV(err);
  if (skip_mmsg(r)) {
    ctx_close(c, NULL);
    SKIP("recvmmsg is not supported here (uv_udp_using_recvmmsg)");
  }
  CHECK_UV(sender_init(c, sender, r));
  CHECK_UV(send_backlog(sender, r, 0, n));
  CHECK_UV(uv_udp_recv_start(&r->handle, on_alloc, on_recv));
  return CASE_OK;
}


/* A backlog of n queued before the first poll, in one mode. */
static int backlog_case(int chunks,
                        unsigned n,
                        const int* want,
                        int nwant,
                        int family) {
  test_ctx c;
  receiver r;
  uv_udp_t sender;
  char reason[400];
  int res;

  res = start_backlog(&c, &r, &sender, family, chunks, n, n);
  if (res != CASE_OK)
    return res;
  if (run_and_close(&c, &sender) != CASE_OK)
    return CASE_FAIL;
  if (r.received != n)
    FAIL("received %u datagrams, want %u", r.received, n);
  if (want != NULL &&
      compare_log(r.log, r.nlog, want, nwant, reason, sizeof(reason)))
    FAIL("%s", reason);
  return CASE_OK;
}


#ifndef _WIN32
static const int want_100[] = { 32, 32, 32, 4 };
#define WANT_100 want_100, (int) (sizeof(want_100) / sizeof(want_100[0]))
#endif


static int backlog_100_recvmsg(void) {
#ifdef _WIN32
  SKIP(UNIX_ONLY_REASON);
#else
  return backlog_case(0, 100, WANT_100, AF_INET);
#endif
}


static int backlog_100_recvmmsg_20_chunks(void) {
#ifdef _WIN32
  SKIP(UNIX_ONLY_REASON);
#else
  return backlog_case(20, 100, WANT_100, AF_INET);
#endif
}


static int backlog_100_recvmmsg_8_chunks(void) {
#ifdef _WIN32
  SKIP(UNIX_ONLY_REASON);
#else
  return backlog_case(8, 100, WANT_100, AF_INET);
#endif
}


static int backlog_100_recvmmsg_7_chunks(void) {
#ifdef _WIN32
  SKIP(UNIX_ONLY_REASON);
#else
  return backlog_case(7, 100, WANT_100, AF_INET);
#endif
}

#ifndef _WIN32
/* recvmmsg mode with a buffer smaller than one datagram of the largest size
 * (64 KiB). Upstream (887756858, "unix: enforce recvmmsg buffer size
 * requirements") hands such a buffer back to recv_cb with UV_EINVAL and
 * reads nothing. v1.50.0 and v1.52.1 ask recvmmsg() for no message at
 * all, read nothing and never leave the event: a SIGALRM handler then
 * fails the case instead of letting it hang.
 */
typedef struct {
  uv_udp_t handle;
  uv_check_t check;
  char buf[1024];
  unsigned received;
  unsigned errors;
  ssize_t first_error;
  int buf_ok;
} small_receiver;


static void small_alarm(int signum) {
  static const char msg[] =
      "not ok backlog_100_recvmmsg_small_buffer: no UV_EINVAL: the loop "
      "stayed in one event for 5 s, reading nothing\n";

  (void) signum;
  if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0)
    _exit(2);
  _exit(1);
}


static void small_alloc(uv_handle_t* handle, size_t size, uv_buf_t* buf) {
  small_receiver* s;

  s = handle->data;
  *buf = uv_buf_init(s->buf, sizeof(s->buf));
}


static void small_recv(uv_udp_t* handle,
                       ssize_t nread,
                       const uv_buf_t* buf,
                       const struct sockaddr* addr,
                       unsigned flags) {
  small_receiver* s;

  s = handle->data;
  if (nread > 0 && addr != NULL)
    s->received++;
  if (nread < 0) {
    if (s->errors++ == 0) {
      s->first_error = nread;
      s->buf_ok = buf->base == s->buf && buf->len == sizeof(s->buf);
    }
    uv_udp_recv_stop(handle);
  }
}


static void small_check(uv_check_t* check) {
  small_receiver* s;

  s = check->data;
  if (s->errors > 0 || s->received == 100) {
    uv_close((uv_handle_t*) &s->handle, NULL);
    uv_close((uv_handle_t*) &s->check, NULL);
  }
}
#endif  /* !_WIN32 */


static int backlog_100_recvmmsg_small_buffer(void) {
#ifdef _WIN32
  SKIP(UNIX_ONLY_REASON);
#else
  small_receiver s;
  struct sockaddr_storage addr;
  uv_loop_t loop;
  uv_udp_t sender;
  uv_buf_t payload;
  char data[4];
  int namelen;
  int size;
  unsigned i;

  memset(&s, 0, sizeof(s));
  CHECK_UV(uv_loop_init(&loop));
  CHECK_UV(uv_udp_init_ex(&loop, &s.handle, AF_INET | UV_UDP_RECVMMSG));
  if (!uv_udp_using_recvmmsg(&s.handle))
    SKIP("recvmmsg is not supported here (uv_udp_using_recvmmsg)");
  s.handle.data = &s;
  uv_ip4_addr("127.0.0.1", 0, (struct sockaddr_in*) &addr);
  CHECK_UV(uv_udp_bind(&s.handle, (const struct sockaddr*) &addr, 0));
  namelen = sizeof(addr);
  CHECK_UV(uv_udp_getsockname(&s.handle, (struct sockaddr*) &addr,
                              &namelen));
  size = RCVBUF_SIZE;
  CHECK_UV(uv_recv_buffer_size((uv_handle_t*) &s.handle, &size));

  CHECK_UV(uv_udp_init(&loop, &sender));
  for (i = 0; i < 100; i++) {
    put_seq(data, i);
    payload = uv_buf_init(data, sizeof(data));
    CHECK(uv_udp_try_send(&sender, &payload, 1,
                          (const struct sockaddr*) &addr) == 4);
  }
  uv_close((uv_handle_t*) &sender, NULL);

  CHECK_UV(uv_check_init(&loop, &s.check));
  s.check.data = &s;
  CHECK_UV(uv_check_start(&s.check, small_check));
  CHECK_UV(uv_udp_recv_start(&s.handle, small_alloc, small_recv));
  signal(SIGALRM, small_alarm);
  alarm(5);
  uv_run(&loop, UV_RUN_DEFAULT);
  alarm(0);
  CHECK_UV(uv_loop_close(&loop));

  fprintf(stderr, "# backlog_100_recvmmsg_small_buffer: received=%u "
          "errors=%u first=%s\n", s.received, s.errors,
          s.errors ? uv_err_name((int) s.first_error) : "-");
  if (s.errors == 0)
    FAIL("no error for a %u-byte buffer in recvmmsg mode (received %u "
         "datagrams), expected UV_EINVAL", (unsigned) sizeof(s.buf),
         s.received);
  if (s.first_error != UV_EINVAL)
    FAIL("recv_cb got %s, expected UV_EINVAL",
         uv_err_name((int) s.first_error));
  if (!s.buf_ok)
    FAIL("UV_EINVAL came without the buffer alloc_cb gave");
  if (s.received != 0)
    FAIL("%u datagrams read into a buffer under 64 KiB", s.received);
  return CASE_OK;
#endif
}



#ifndef _WIN32
/* Two sockets with 100 each on one loop: 32 from each per iteration. */
static int two_sockets_case(int chunks) {
  static const int want_total[] = { 64, 64, 64, 8 };
  test_ctx c;
  receiver r[2];
  uv_udp_t sender;
  char reason[400];
  int i;

  if (ctx_init(&c) != CASE_OK)
    return CASE_FAIL;
  for (i = 0; i < 2; i++)
    CHECK_UV(receiver_init(&c, &r[i], AF_INET, chunks, 100));
  if (skip_mmsg(&r[0])) {
    ctx_close(&c, NULL);
    SKIP("recvmmsg is not supported here (uv_udp_using_recvmmsg)");
  }
  CHECK_UV(sender_init(&c, &sender, &r[0]));
  for (i = 0; i < 2; i++)
    CHECK_UV(send_backlog(&sender, &r[i], 0, 100));
  for (i = 0; i < 2; i++)
    CHECK_UV(uv_udp_recv_start(&r[i].handle, on_alloc, on_recv));

  if (run_and_close(&c, &sender) != CASE_OK)
    return CASE_FAIL;
  for (i = 0; i < 2; i++) {
    if (r[i].received != 100)
      FAIL("socket %d received %u datagrams, want 100", i, r[i].received);
    if (compare_log(r[i].log, r[i].nlog, WANT_100, reason, sizeof(reason)))
      FAIL("socket %d: %s", i, reason);
  }
  if (compare_log(c.total_log, c.total_nlog, want_total, 4,
                  reason, sizeof(reason)))
    FAIL("both sockets: %s", reason);
  return CASE_OK;
}
#endif  /* !_WIN32 */


static int two_sockets_recvmsg(void) {
#ifdef _WIN32
  SKIP(UNIX_ONLY_REASON);
#else
  return two_sockets_case(0);
#endif
}


static int two_sockets_recvmmsg_20_chunks(void) {
#ifdef _WIN32
  SKIP(UNIX_ONLY_REASON);
#else
  return two_sockets_case(20);
#endif
}


#ifndef _WIN32
/* The handler sends one more datagram to its own socket for each of the
 * first 100 it reads: 200 arrive, never more than 32 per iteration, in
 * order.
 */
static int self_feed_case(int chunks) {
  static const int want[] = { 32, 32, 32, 32, 32, 32, 8 };
  test_ctx c;
  receiver r;
  uv_udp_t sender;
  char reason[400];
  int res;

  res = start_backlog(&c, &r, &sender, AF_INET, chunks, 200, 100);
  if (res != CASE_OK)
    return res;
  r.feed_below = 100;

  if (run_and_close(&c, &sender) != CASE_OK)
    return CASE_FAIL;
  if (r.received != 200)
    FAIL("received %u datagrams, want 200", r.received);
  if (compare_log(r.log, r.nlog, want, 7, reason, sizeof(reason)))
    FAIL("%s", reason);
  return CASE_OK;
}
#endif  /* !_WIN32 */


static int self_feed_recvmsg(void) {
#ifdef _WIN32
  SKIP(UNIX_ONLY_REASON);
#else
  return self_feed_case(0);
#endif
}


static int self_feed_recvmmsg_20_chunks(void) {
#ifdef _WIN32
  SKIP(UNIX_ONLY_REASON);
#else
  return self_feed_case(20);
#endif
}


#ifndef _WIN32
/* uv_udp_recv_stop() from the callback of datagram 9: in recvmmsg mode
 * one UV_UDP_MMSG_FREE for the batch it cut (upstream gives none, and the
 * buffer is lost), no other callback after it, the event delivered
 * exactly 10. Receiving again resumes after what was read: datagram 10 in
 * recvmsg mode, the first one after the interrupted batch in recvmmsg
 * mode (7-chunk batches: 0-6, 7-13, so 14), then in order to 99.
 */
static int recv_stop_case(int chunks, unsigned resume) {
  test_ctx c;
  receiver r;
  uv_udp_t sender;
  int res;

  res = start_backlog(&c, &r, &sender, AF_INET, chunks, 10 + (100 - resume),
                      100);
  if (res != CASE_OK)
    return res;
  r.stop_at = 9;
  r.resume_seq = resume;
  c.restart_after_stop = 1;

  if (run_and_close(&c, &sender) != CASE_OK)
    return CASE_FAIL;
  if (r.frees_after_stop != (chunks != 0))
    FAIL("%d UV_UDP_MMSG_FREE after uv_udp_recv_stop, want %d",
         r.frees_after_stop, chunks != 0);
  if (r.stop_iter >= r.nlog || r.log[r.stop_iter] != 10)
    FAIL("the iteration that stopped delivered %d datagrams, want 10",
         r.stop_iter < r.nlog ? r.log[r.stop_iter] : 0);
  if (r.received != 10 + (100 - resume))
    FAIL("received %u datagrams, want %u", r.received, 10 + (100 - resume));
  if (r.next_seq != 100)
    FAIL("last sequence number %u, want 99", r.next_seq - 1);
  return CASE_OK;
}
#endif  /* !_WIN32 */


static int recv_stop_mid_batch_recvmsg(void) {
#ifdef _WIN32
  SKIP(UNIX_LOOP_REASON);
#else
  return recv_stop_case(0, 10);
#endif
}


static int recv_stop_mid_batch_recvmmsg_7_chunks(void) {
#ifdef _WIN32
  SKIP(UNIX_LOOP_REASON);
#else
  return recv_stop_case(7, 14);
#endif
}


#ifndef _WIN32
/* uv_close() from the callback of datagram 9: nothing is read after it
 * (no alloc_cb). In recvmmsg mode the rest of the batch that was already
 * read (7-13) is still handed over, then UV_UDP_MMSG_FREE once, as in
 * v1.50.0; nothing beyond the batch.
 */
static int close_case(int chunks) {
  test_ctx c;
  receiver r;
  uv_udp_t sender;
  int res;

  res = start_backlog(&c, &r, &sender, AF_INET, chunks, 100, 100);
  if (res != CASE_OK)
    return res;
  r.close_at = 9;

  if (run_and_close(&c, &sender) != CASE_OK)
    return CASE_FAIL;
  if (!r.closed || r.close_cb_called != 1)
    FAIL("closed %d, close_cb called %d times", r.closed, r.close_cb_called);
  if (r.allocs_after_close != 0)
    FAIL("%d alloc_cb calls (reads) after uv_close", r.allocs_after_close);
  if (chunks == 0 && r.dgrams_after_close != 0)
    FAIL("%d datagrams after uv_close", r.dgrams_after_close);
  if (r.dgrams_after_close != 0 && r.max_seq_after_close > 13)
    FAIL("datagram %u after uv_close, beyond the batch already read",
         r.max_seq_after_close);
  if (chunks != 0 && r.mmsg_frees != 2)
    FAIL("UV_UDP_MMSG_FREE %d times for 2 batches", r.mmsg_frees);
  if (r.nlog != 1)
    FAIL("datagrams in %d iterations, want 1", r.nlog);
  return CASE_OK;
}
#endif  /* !_WIN32 */


static int close_mid_batch_recvmsg(void) {
#ifdef _WIN32
  SKIP(UNIX_LOOP_REASON);
#else
  return close_case(0);
#endif
}


static int close_mid_batch_recvmmsg_7_chunks(void) {
#ifdef _WIN32
  SKIP(UNIX_LOOP_REASON);
#else
  return close_case(7);
#endif
}


#ifndef _WIN32
/* alloc_cb returns an empty buffer on its nth call: UV_ENOBUFS ends the
 * event at once (10 datagrams in recvmsg mode, two 7-chunk batches in
 * recvmmsg mode) and the next iterations deliver the rest, none lost.
 */
static int enobufs_case(int chunks, int nth, int first) {
  test_ctx c;
  receiver r;
  uv_udp_t sender;
  int res;

  res = start_backlog(&c, &r, &sender, AF_INET, chunks, 100, 100);
  if (res != CASE_OK)
    return res;
  r.nobufs_alloc = nth;

  if (run_and_close(&c, &sender) != CASE_OK)
    return CASE_FAIL;
  if (r.enobufs != 1)
    FAIL("UV_ENOBUFS %d times, want 1", r.enobufs);
  if (r.cbs_after_enobufs != 0)
    FAIL("%d callbacks after UV_ENOBUFS in the same event",
         r.cbs_after_enobufs);
  if (r.nlog < 1 || r.log[0] != first)
    FAIL("first iteration delivered %d datagrams, want %d",
         r.nlog < 1 ? 0 : r.log[0], first);
  if (r.received != 100)
    FAIL("received %u datagrams, want 100", r.received);
  return CASE_OK;
}
#endif  /* !_WIN32 */


static int enobufs_mid_batch_recvmsg(void) {
#ifdef _WIN32
  SKIP(UNIX_LOOP_REASON);
#else
  return enobufs_case(0, 11, 10);
#endif
}


static int enobufs_mid_batch_recvmmsg_7_chunks(void) {
#ifdef _WIN32
  SKIP(UNIX_LOOP_REASON);
#else
  return enobufs_case(7, 3, 14);
#endif
}


/* 200 datagrams, each exactly once and in order (checked as they come). */
static int in_order_ipv4_recvmsg(void) {
  return backlog_case(0, 200, NULL, 0, AF_INET);
}


static int in_order_ipv4_recvmmsg_20_chunks(void) {
  return backlog_case(20, 200, NULL, 0, AF_INET);
}


static int in_order_ipv4_recvmmsg_7_chunks(void) {
  return backlog_case(7, 200, NULL, 0, AF_INET);
}


static int in_order_ipv6_recvmsg(void) {
  return backlog_case(0, 200, NULL, 0, AF_INET6);
}


static int in_order_ipv6_recvmmsg_20_chunks(void) {
  return backlog_case(20, 200, NULL, 0, AF_INET6);
}


#ifndef _WIN32
typedef struct {
  struct sockaddr_storage to;
  int err;
  unsigned long sent;
} flood_arg;


/* Plain blocking sendto() from its own socket for FLOOD_MS. */
static void flood_thread(void* arg) {
  flood_arg* f;
  char payload[4];
  uint64_t end;
  socklen_t len;
  int fd;
  int i;

  f = arg;
  len = f->to.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                    : sizeof(struct sockaddr_in);
  fd = socket(f->to.ss_family, SOCK_DGRAM, 0);
  if (fd == -1) {
    f->err = 1;
    return;
  }
  end = uv_hrtime() + (uint64_t) FLOOD_MS * 1000000;
  while (uv_hrtime() < end) {
    for (i = 0; i < 64; i++) {
      put_seq(payload, (unsigned) f->sent);
      if (sendto(fd, payload, sizeof(payload), 0,
                 (struct sockaddr*) &f->to, len) == sizeof(payload))
        f->sent++;
    }
  }
  close(fd);
}


/* A sender thread floods the socket for FLOOD_MS while a TICK_MS repeating
 * timer runs: the timer must still get at least 80% of its ticks.
 */
static int starvation_case(int chunks, const char* name) {
  test_ctx c;
  receiver r;
  uv_thread_t tid;
  flood_arg f;
  int want;

  if (ctx_init(&c) != CASE_OK)
    return CASE_FAIL;
  CHECK_UV(receiver_init(&c, &r, AF_INET, chunks, (unsigned) -1));
  if (skip_mmsg(&r)) {
    ctx_close(&c, NULL);
    SKIP("recvmmsg is not supported here (uv_udp_using_recvmmsg)");
  }
  r.check_seq = 0;  /* The flood overruns the socket buffer. */
  c.use_tick = 1;
  c.safety_ms = FLOOD_MS;
  CHECK_UV(uv_timer_init(&c.loop, &c.tick));
  c.tick.data = &c;
  CHECK_UV(uv_timer_start(&c.tick, on_tick, TICK_MS, TICK_MS));
  CHECK_UV(uv_udp_recv_start(&r.handle, on_alloc, on_recv));

  memset(&f, 0, sizeof(f));
  memcpy(&f.to, &r.addr, sizeof(f.to));
  CHECK_UV(uv_thread_create(&tid, flood_thread, &f));
  if (run_and_close(&c, NULL) != CASE_OK) {
    uv_thread_join(&tid);
    return CASE_FAIL;
  }
  CHECK_UV(uv_thread_join(&tid));

  want = FLOOD_MS / TICK_MS;
  fprintf(stderr,
          "%s: %d of %d timer ticks in %d ms; %lu datagrams sent, %u "
          "received, at most %d per iteration\n",
          name, c.ticks, want, FLOOD_MS, f.sent, r.received, r.max_iter);
  if (f.err)
    FAIL("the sender thread could not open a socket");
  if (r.received == 0)
    FAIL("nothing received from the flood");
  CHECK_TIMING(c.ticks * 5 >= want * 4,
               "timer ticked %d times in %d ms, want >= %d (80%% of %d)",
               c.ticks, FLOOD_MS, (want * 4 + 4) / 5, want);
  return CASE_OK;
}
#endif


static int starvation_recvmsg(void) {
#ifdef _WIN32
  SKIP(UNIX_ONLY_REASON);
#else
  return starvation_case(0, "starvation_recvmsg");
#endif
}


static int starvation_recvmmsg_20_chunks(void) {
#ifdef _WIN32
  SKIP(UNIX_ONLY_REASON);
#else
  return starvation_case(20, "starvation_recvmmsg_20_chunks");
#endif
}


static const test_case cases[] = {
  { "backlog_100_recvmsg", backlog_100_recvmsg },
  { "backlog_100_recvmmsg_20_chunks", backlog_100_recvmmsg_20_chunks },
  { "backlog_100_recvmmsg_8_chunks", backlog_100_recvmmsg_8_chunks },
  { "backlog_100_recvmmsg_7_chunks", backlog_100_recvmmsg_7_chunks },
  { "backlog_100_recvmmsg_small_buffer", backlog_100_recvmmsg_small_buffer },
  { "two_sockets_recvmsg", two_sockets_recvmsg },
  { "two_sockets_recvmmsg_20_chunks", two_sockets_recvmmsg_20_chunks },
  { "self_feed_recvmsg", self_feed_recvmsg },
  { "self_feed_recvmmsg_20_chunks", self_feed_recvmmsg_20_chunks },
  { "recv_stop_mid_batch_recvmsg", recv_stop_mid_batch_recvmsg },
  { "recv_stop_mid_batch_recvmmsg_7_chunks",
    recv_stop_mid_batch_recvmmsg_7_chunks },
  { "close_mid_batch_recvmsg", close_mid_batch_recvmsg },
  { "close_mid_batch_recvmmsg_7_chunks", close_mid_batch_recvmmsg_7_chunks },
  { "enobufs_mid_batch_recvmsg", enobufs_mid_batch_recvmsg },
  { "enobufs_mid_batch_recvmmsg_7_chunks",
    enobufs_mid_batch_recvmmsg_7_chunks },
  { "in_order_ipv4_recvmsg", in_order_ipv4_recvmsg },
  { "in_order_ipv4_recvmmsg_20_chunks", in_order_ipv4_recvmmsg_20_chunks },
  { "in_order_ipv4_recvmmsg_7_chunks", in_order_ipv4_recvmmsg_7_chunks },
  { "in_order_ipv6_recvmsg", in_order_ipv6_recvmsg },
  { "in_order_ipv6_recvmmsg_20_chunks", in_order_ipv6_recvmmsg_20_chunks },
  { "starvation_recvmsg", starvation_recvmsg, CASE_THREADS },
  { "starvation_recvmmsg_20_chunks", starvation_recvmmsg_20_chunks,
    CASE_THREADS },
  { NULL, NULL }
};


int main(int argc, char** argv) {
  return harness_main(cases, argc, argv);
}
