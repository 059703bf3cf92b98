/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * Datagrams larger than the buffer, or empty: what recv_cb is given,
 * and that nothing is written past it.
 */

#include "udp_hostile.h"

#ifdef __linux__

/* Truncation: sizes sent, in order, to a 512-byte window (recvmsg) or to
 * 64 KiB chunks (recvmmsg). 65507 is the largest IPv4 UDP payload.
 */
#define SMALL_BUF 512
#define GUARD 64
#define CANARY 0xa5

static const int trunc_sizes[] = {
  2000, 0, 512, 513, 511, 1, 0, 65507, 2000, 0
};
#define NTRUNC ((int) (sizeof(trunc_sizes) / sizeof(trunc_sizes[0])))

typedef struct {
  uv_loop_t loop;
  uv_udp_t udp;
  uv_timer_t safety;
  int chunks;
  char* mem;
  size_t mem_len;             /* Buffer plus GUARD canary bytes. */
  size_t buf_len;
  int next;
  int partial;
  int empty;
  int lent;
  char err[256];
} tctx;

static tctx tc;


static void tc_error(const char* fmt, ...) {
  va_list ap;

  va_start(ap, fmt);
  harness_note_first(tc.err, sizeof(tc.err), fmt, ap);
  va_end(ap);
}


static char pattern(int idx, int i) {
  return (char) ((idx * 31 + i * 7 + 1) & 0xff);
}


static void tc_alloc(uv_handle_t* handle, size_t suggested, uv_buf_t* buf) {
  (void) handle;
  (void) suggested;
  if (tc.lent)
    tc_error("alloc_cb while the buffer is lent out");
  memset(tc.mem, CANARY, tc.mem_len);
  tc.lent = 1;
  *buf = uv_buf_init(tc.mem, (unsigned int) tc.buf_len);
}


static void tc_close(void) {
  close_handles(&tc.loop);
}


/* Everything from base + from to base + to must still be the canary. */
static int canary_intact(const char* base, size_t from, size_t to) {
  size_t i;

  for (i = from; i < to; i++)
    if ((unsigned char) base[i] != CANARY)
      return 0;
  return 1;
}


static void tc_recv(uv_udp_t* handle,
                    ssize_t nread,
                    const uv_buf_t* buf,
                    const struct sockaddr* addr,
                    unsigned flags) {
  size_t room;
  size_t off;
  int want;
  int size;
  int i;

  (void) handle;
  if (flags & UV_UDP_MMSG_FREE) {
    tc.lent = 0;
    /* The whole slab: the guard after it is untouched. */
    if (!canary_intact(tc.mem, tc.buf_len, tc.mem_len))
      tc_error("the guard after the recvmmsg buffer was written");
    if (tc.next == NTRUNC)
      tc_close();
    return;
  }
  if (!(flags & UV_UDP_MMSG_CHUNK))
    tc.lent = 0;
  if (nread < 0) {
    tc_error("recv_cb: %s", uv_strerror((int) nread));
    return;
  }
  if (nread == 0 && addr == NULL)
    return;  /* Nothing (more) to read. */
  if (addr == NULL) {
    tc_error("datagram %d of %d bytes without a peer address", tc.next,
             (int) nread);
    return;
  }
  if (tc.next >= NTRUNC) {
    tc_error("more datagrams than were sent");
    return;
  }
  size = trunc_sizes[tc.next];
  room = tc.chunks ? DGRAM_MAX : tc.buf_len;
  want = size < (int) room ? size : (int) room;
  if (nread != want)
    tc_error("datagram %d of %d bytes: nread %d, want %d", tc.next, size,
             (int) nread, want);
  if ((size_t) nread > buf->len)
    tc_error("datagram %d: nread %d > buffer %d", tc.next, (int) nread,
             (int) buf->len);
  if ((size > (int) room) != !!(flags & UV_UDP_PARTIAL))
    tc_error("datagram %d of %d bytes into %d: UV_UDP_PARTIAL %s",
             tc.next, size, (int) room,
             (flags & UV_UDP_PARTIAL) ? "set" : "not set");
  for (i = 0; i < (int) nread && i < want; i++)
    if (buf->base[i] != pattern(tc.next, i)) {
      tc_error("datagram %d: byte %d differs", tc.next, i);
      break;
    }
  /* Nothing written past nread: up to the guard in recvmsg mode, the next
   * GUARD bytes of the chunk in recvmmsg mode.
   */
  off = (size_t) (buf->base - tc.mem);
  if (tc.chunks == 0) {
    if (!canary_intact(tc.mem, (size_t) nread, tc.mem_len))
      tc_error("datagram %d: bytes written past nread or the buffer",
               tc.next);
  } else if (!canary_intact(tc.mem, off + (size_t) nread,
                            off + (nread + GUARD < DGRAM_MAX ?
                                   (size_t) nread + GUARD : DGRAM_MAX))) {
    tc_error("datagram %d: bytes written past nread in its chunk",
             tc.next);
  }
  if (flags & UV_UDP_PARTIAL)
    tc.partial++;
  if (nread == 0)
    tc.empty++;
  tc.next++;
  if (tc.next == NTRUNC && !(flags & UV_UDP_MMSG_CHUNK))
    tc_close();
}


static void tc_on_safety(uv_timer_t* handle) {
  (void) handle;
  tc_close();
}


static int truncated_case(int chunks) {
  struct sockaddr_in a4;
  char* payload;
  int namelen;
  int value;
  int fd;
  int i;
  int j;
  int r;

  memset(&tc, 0, sizeof(tc));
  tc.chunks = chunks;
  tc.buf_len = chunks ? (size_t) chunks * DGRAM_MAX : SMALL_BUF;
  tc.mem_len = tc.buf_len + GUARD;
  tc.mem = malloc(tc.mem_len);
  payload = malloc(DGRAM_MAX);
  CHECK(tc.mem != NULL && payload != NULL);

  CHECK_UV(uv_loop_init(&tc.loop));
  CHECK_UV(uv_udp_init_ex(&tc.loop,
                          &tc.udp,
                          AF_INET | (chunks ? UV_UDP_RECVMMSG : 0)));
  if (chunks && !uv_udp_using_recvmmsg(&tc.udp))
    SKIP("recvmmsg is not supported here (uv_udp_using_recvmmsg)");
  CHECK_UV(uv_ip4_addr("127.0.0.1", 0, &a4));
  CHECK_UV(uv_udp_bind(&tc.udp, (const struct sockaddr*) &a4, 0));
  value = 1 << 20;
  CHECK_UV(uv_recv_buffer_size((uv_handle_t*) &tc.udp, &value));
  namelen = sizeof(a4);
  CHECK_UV(uv_udp_getsockname(&tc.udp, (struct sockaddr*) &a4, &namelen));
  CHECK_UV(uv_timer_init(&tc.loop, &tc.safety));

  /* The peer: a plain socket, everything queued before the first poll. */
  fd = socket(AF_INET, SOCK_DGRAM, 0);
  CHECK_GE(fd, 0);
  value = 1 << 20;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &value, sizeof(value));
  for (i = 0; i < NTRUNC; i++) {
    for (j = 0; j < trunc_sizes[i]; j++)
      payload[j] = pattern(i, j);
    if (sendto(fd, payload, (size_t) trunc_sizes[i], 0,
               (struct sockaddr*) &a4, sizeof(a4)) != trunc_sizes[i]) {
      close(fd);
      FAIL("sendto of %d bytes: %s", trunc_sizes[i], strerror(errno));
    }
  }
  close(fd);

  CHECK_UV(uv_timer_start(&tc.safety, tc_on_safety, 2000, 0));
  CHECK_UV(uv_udp_recv_start(&tc.udp, tc_alloc, tc_recv));
  uv_run(&tc.loop, UV_RUN_DEFAULT);
  tc_close();
  uv_run(&tc.loop, UV_RUN_DEFAULT);
  r = uv_loop_close(&tc.loop);
  free(tc.mem);
  free(payload);

  fprintf(stderr, "# truncated_datagrams_%s: delivered=%d of %d partial=%d "
          "empty=%d\n", chunks ? "recvmmsg" : "recvmsg", tc.next, NTRUNC,
          tc.partial, tc.empty);
  if (tc.err[0] != '\0')
    FAIL("%s", tc.err);
  CHECK_EQ(tc.next, NTRUNC);
  if (r != 0)
    FAIL("uv_loop_close: %s", uv_strerror(r));
  return CASE_OK;
}

#endif  /* __linux__ */

int case_truncated_recvmsg(void) {
#ifndef __linux__
  SKIP(LINUX_ONLY);
#else
  return truncated_case(0);
#endif
}

int case_truncated_recvmmsg(void) {
#ifndef __linux__
  SKIP(LINUX_ONLY);
#else
  return truncated_case(CB_CHUNKS);
#endif
}
