/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * recvmmsg mode with a buffer under 64 KiB.
 */

#include "udp_budget.h"

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


int backlog_100_recvmmsg_small_buffer(void) {
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
