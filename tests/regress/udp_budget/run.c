/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * A case's loop, its receivers, and the backlog queued before the first
 * poll.
 */

#include "udp_budget.h"

static char recvmsg_slab[MAX_RECEIVERS][DGRAM_MAX];


int ctx_init(test_ctx* c) {
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
int receiver_init(test_ctx* c,
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
int send_backlog(uv_udp_t* from,
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
int ctx_close(test_ctx* c, uv_udp_t* sender) {
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


int skip_mmsg(receiver* r) {
  return r->chunks != 0 && !uv_udp_using_recvmmsg(&r->handle);
}


/* Runs the loop until every receiver got what it expects (or the safety
 * timer fires), then reports: 0 and a clean loop, or CASE_FAIL.
 */
int run_and_close(test_ctx* c, uv_udp_t* sender) {
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
int sender_init(test_ctx* c, uv_udp_t* sender, receiver* r) {
  return uv_udp_init_ex(&c->loop, sender, r->addr.ss_family);
}


/* The start of most cases: a loop, a receiver of `family` expecting
 * `expect` datagrams, a sender, n datagrams queued before the first poll
 * and receiving started. Fields of r that steer on_recv() may be set
 * after it: nothing is read before run_and_close(). Returns CASE_OK,
 * CASE_SKIP (no IPv6 loopback, no recvmmsg) or CASE_FAIL.
 */
int start_backlog(test_ctx* c,
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
  CHECK_UV(receiver_start(r));
  return CASE_OK;
}


/* A backlog of n queued before the first poll, in one mode. */
int backlog_case(int chunks,
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
  CHECK_EQ(r.received, n);
  if (want != NULL &&
      compare_log(r.log, r.nlog, want, nwant, reason, sizeof(reason)))
    FAIL("%s", reason);
  return CASE_OK;
}
