/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * A read error that is not the twin of a report is never dropped (issue 28). A
 * handle bound with UV_UDP_LINUX_RECVERR has 40 reports and 10 datagrams
 * queued; the program's recvmsg() and recvmmsg(), which the static libuv calls,
 * fail the handle's first plain read (one without MSG_ERRQUEUE) with ENOMEM.
 * The patched libuv reads the reports first, so that read comes where a twin
 * may be: it finds no report with its errno; upstream makes it first. Every
 * tree must hand ENOMEM to recv_cb once, and the 10 datagrams. later_twin_*: no
 * report is queued; at the second datagram a raw socket sends two ICMP errors
 * about the handle's datagrams, host then port unreachable, so the next plain
 * read returns ECONNREFUSED, the twin of the second report. recv_cb must get
 * both reports, no read error and the 10 datagrams. behind_reports_*: as
 * later_twin_*, with 40 reports queued before the datagrams and one host
 * unreachable: recv_cb must get the 41 reports and the 10 datagrams, and the
 * read error at most once, as its report may wait beyond the event's budget
 * (upstream passes the twins of the queued reports too). In a private network
 * namespace, on loopback only. Linux only.
 */

#if defined(__linux__) && !defined(_GNU_SOURCE)
# define _GNU_SOURCE  /* unshare(), CLONE_NEWNET, RTLD_NEXT */
#endif

#include <uv.h>

#include "harness.h"
#include "netns.h"

#define TWIN(X)                                                               \
  X(foreign_error_msg, twin_case(0, 0))                                       \
  X(foreign_error_mmsg, twin_case(1, 0))                                      \
  X(later_twin_msg, twin_case(0, 1))                                          \
  X(later_twin_mmsg, twin_case(1, 1))                                         \
  X(behind_reports_msg, twin_case(0, 2))                                      \
  X(behind_reports_mmsg, twin_case(1, 2))

#ifdef __linux__

#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include "libc_recv.h"
#include "loopback.h"

#define REPORTS 40
#define DATAGRAMS 10
/* Enough iterations to drain both queues, few enough to end a busy loop
 * (v1.50.0 unpatched never reads the error queue).
 */
#define MAX_RUNS 50
#define MMSG_SIZE (20 * 64 * 1024)

static int watch_fd = -1;
static int injected;
static int later;  /* 1 in later_twin, 2 in behind_reports, else 0. */

static int inject(int fd, int flags) {
  if (fd != watch_fd || (flags & MSG_ERRQUEUE) || injected || later)
    return 0;
  injected = 1;
  errno = ENOMEM;
  return 1;
}

ssize_t recvmsg(int fd, struct msghdr* msg, int flags) {
  if (inject(fd, flags))
    return -1;
  return libc_recvmsg(fd, msg, flags);
}

int recvmmsg(int fd, struct mmsghdr* msgs, unsigned int n, int flags,
             struct timespec* timeout) {
  if (inject(fd, flags))
    return -1;
  return libc_recvmmsg(fd, msgs, n, flags, timeout);
}

static long reports;
static long datagrams;
static long enomem;
static long others;
static long unsent;  /* ICMP errors the raw socket did not send. */
static struct sockaddr_in me4;  /* The handle's address. */

static uint16_t checksum(const unsigned char* p, size_t n) {
  uint32_t sum;
  uint16_t word;
  size_t i;

  sum = 0;
  for (i = 0; i + 1 < n; i += 2) {
    memcpy(&word, p + i, 2);
    sum += word;
  }
  while (sum >> 16)
    sum = (sum & 0xffff) + (sum >> 16);
  return (uint16_t) ~sum;
}

/* An ICMP destination unreachable with code about a datagram from me4 to
 * 127.0.0.1:9: the kernel queues a report and sets the socket error.
 */
static void send_unreachable(int code) {
  unsigned char pkt[8 + 20 + 8 + 4];
  struct sockaddr_in to;
  uint16_t word;
  int raw;

  memset(pkt, 0, sizeof(pkt));
  pkt[0] = 3;
  pkt[1] = (unsigned char) code;
  pkt[8] = 0x45;  /* The datagram's IPv4 header, then its UDP header. */
  pkt[11] = 32;
  pkt[16] = 64;
  pkt[17] = IPPROTO_UDP;
  memcpy(pkt + 20, &me4.sin_addr, 4);
  memcpy(pkt + 24, &me4.sin_addr, 4);
  word = checksum(pkt + 8, 20);
  memcpy(pkt + 18, &word, 2);
  memcpy(pkt + 28, &me4.sin_port, 2);
  pkt[31] = 9;
  pkt[33] = 12;
  word = checksum(pkt, sizeof(pkt));
  memcpy(pkt + 2, &word, 2);
  to = me4;
  raw = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
  if (raw < 0 || sendto(raw, pkt, sizeof(pkt), 0, (struct sockaddr*) &to,
                        sizeof(to)) != (ssize_t) sizeof(pkt))
    unsent++;
  if (raw >= 0)
    close(raw);
}

static void on_alloc(uv_handle_t* handle, size_t size, uv_buf_t* buf) {
  if (uv_udp_using_recvmmsg((uv_udp_t*) handle))
    size = MMSG_SIZE;
  buf->base = malloc(size);
  buf->len = buf->base == NULL ? 0 : size;
}

static void on_recv(uv_udp_t* handle, ssize_t nread, const uv_buf_t* buf,
                    const struct sockaddr* addr, unsigned flags) {
  (void) handle;
  if (flags & UV_UDP_LINUX_RECVERR)
    reports++;
  else if (nread == UV_ENOMEM)
    enomem++;
  else if (nread > 0 && ++datagrams == 2 && later) {
    send_unreachable(1);  /* EHOSTUNREACH */
    if (later == 1)
      send_unreachable(3);  /* ECONNREFUSED */
  } else if (nread < 0)
    others++;
  if (!(flags & UV_UDP_MMSG_CHUNK))
    free(buf->base);
  (void) addr;
}

#endif  /* __linux__ */

static int twin_case(int mmsg, int later_twin) {
#ifndef __linux__
  (void) mmsg;
  (void) later_twin;
  SKIP("Linux only: IP_RECVERR and the socket error queue");
#else
  struct sockaddr_storage dst;
  struct sockaddr_storage me;
  uv_loop_t loop;
  uv_udp_t udp;
  uv_os_fd_t fd;
  socklen_t len;
  long before;
  int runs;
  int peer;
  int size;
  int r;
  int i;

  if ((r = private_netns()) != 0)
    SKIP("no private network namespace (root or user namespaces): %s",
         strerror(r));
  later = later_twin;
  if (later && (r = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP)) < 0)
    SKIP("no raw ICMP socket: %s", strerror(errno));
  if (later)
    close(r);
  CHECK_UV(uv_loop_init(&loop));
  CHECK_UV(uv_udp_init_ex(&loop, &udp,
                          AF_INET | (mmsg ? UV_UDP_RECVMMSG : 0)));
  if (mmsg && !uv_udp_using_recvmmsg(&udp))
    SKIP("recvmmsg is not supported here (uv_udp_using_recvmmsg)");
  loopback_addr(AF_INET, &me);
  CHECK_UV(uv_udp_bind(&udp, (const struct sockaddr*) &me,
                       UV_UDP_LINUX_RECVERR));
  CHECK_UV(uv_fileno((uv_handle_t*) &udp, &fd));
  size = 1 << 20;
  CHECK_UV(uv_recv_buffer_size((uv_handle_t*) &udp, &size));
  CHECK_EQ(closed_port(AF_INET, &dst), 0);
  for (i = 0; i < REPORTS && later != 1; i++)
    CHECK_EQ(send_for_report(fd, &dst), 0);
  /* The last send's error may still be the socket error: a plain read
   * returns it, and that is the twin the patched libuv drops.
   */
  len = sizeof(me);
  CHECK_EQ(getsockname(fd, (struct sockaddr*) &me, &len), 0);
  memcpy(&me4, &me, sizeof(me4));
  CHECK_GE((peer = socket(AF_INET, SOCK_DGRAM, 0)), 0);
  for (i = 0; i < DATAGRAMS; i++)
    CHECK(sendto(peer, "data", 4, 0, (const struct sockaddr*) &me,
                 addr_len(&me)) == 4);
  close(peer);

  watch_fd = fd;
  CHECK_UV(uv_udp_recv_start(&udp, on_alloc, on_recv));
  for (runs = 0; runs < MAX_RUNS; runs++) {
    before = reports + datagrams + enomem + others;
    uv_run(&loop, UV_RUN_NOWAIT);
    if (reports + datagrams + enomem + others == before && runs > 0)
      break;
  }
  watch_fd = -1;
  uv_close((uv_handle_t*) &udp, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK_UV(uv_loop_close(&loop));

  fprintf(stderr, "{\"twin\": \"%s\", \"reports\": %ld, \"datagrams\": %ld, "
          "\"enomem\": %ld, \"other_errors\": %ld, \"runs\": %d}\n",
          mmsg ? "mmsg" : "msg", reports, datagrams, enomem, others, runs);
  if (later) {
    CHECK_EQ(unsent, 0);
    CHECK_EQ(datagrams, DATAGRAMS);
    CHECK_EQ(reports, later == 1 ? 2 : REPORTS + 1);
    CHECK_LE(others, later - 1);
    return CASE_OK;
  }
  CHECK(injected);
  CHECK_EQ(enomem, 1);
  CHECK_EQ(datagrams, DATAGRAMS);
  return CASE_OK;
#endif
}

#define TWIN_FN(name, body)                                                   \
  static int name(void) {                                                     \
    return body;                                                              \
  }

TWIN(TWIN_FN)

#define TWIN_ENTRY(name, body) { #name, name, 0 },

static const test_case cases[] = {
  TWIN(TWIN_ENTRY)
  { NULL, NULL, 0 }
};

int main(int argc, char** argv) {
  return harness_main(cases, argc, argv);
}
