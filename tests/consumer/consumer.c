/* A program built against an installed libuv. It prints, one per line:
 *
 *   version <uv_version_string()>
 *   library <file that holds uv_version_string, from dladdr()>
 *   budget <datagrams received in each loop iteration>
 *
 * The budget line comes from a backlog of 100 datagrams read in recvmmsg
 * mode with a 20-datagram buffer: the series delivers at most 32 per
 * readable event (32 32 32 4), v1.50.0 more (40 40 20). With the version
 * and the file it tells which libuv was loaded, the patched or another.
 * Exit status 0 when all 100 arrived, 1 otherwise.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#define BACKLOG 100
#define CHUNKS 20
#define DGRAM_MAX (64 * 1024)

static char* slab;
static int received;
static int this_iter;
static int counts[BACKLOG + 1];
static int iterations;


static void on_alloc(uv_handle_t* handle, size_t size, uv_buf_t* buf) {
  (void) handle;
  (void) size;
  *buf = uv_buf_init(slab, CHUNKS * DGRAM_MAX);
}


static void on_recv(uv_udp_t* handle,
                    ssize_t nread,
                    const uv_buf_t* buf,
                    const struct sockaddr* addr,
                    unsigned flags) {
  (void) buf;
  (void) flags;
  if (nread > 0 && addr != NULL) {
    received++;
    this_iter++;
  }
  if (nread < 0 || received == BACKLOG)
    uv_udp_recv_stop(handle);
}


static void on_check(uv_check_t* check) {
  if (this_iter > 0 && iterations < BACKLOG)
    counts[iterations++] = this_iter;
  this_iter = 0;
  if (received == BACKLOG)
    uv_check_stop(check);
}


int main(void) {
  struct sockaddr_in addr;
  uv_os_sock_t sock;
  uv_check_t check;
  uv_udp_t rx;
  uv_loop_t loop;
  Dl_info info;
  char byte;
  int namelen;
  int size;
  int i;

  printf("version %s\n", uv_version_string());
  if (dladdr((void*) uv_version_string, &info) && info.dli_fname != NULL)
    printf("library %s\n", info.dli_fname);

  slab = malloc(CHUNKS * DGRAM_MAX);
  if (slab == NULL || uv_loop_init(&loop))
    return 1;
  if (uv_udp_init_ex(&loop, &rx, AF_INET | UV_UDP_RECVMMSG))
    return 1;
  uv_ip4_addr("127.0.0.1", 0, &addr);
  if (uv_udp_bind(&rx, (const struct sockaddr*) &addr, 0))
    return 1;
  size = 1 << 20;
  uv_recv_buffer_size((uv_handle_t*) &rx, &size);
  namelen = sizeof(addr);
  if (uv_udp_getsockname(&rx, (struct sockaddr*) &addr, &namelen))
    return 1;

  /* The backlog is queued before the loop first looks at the socket. */
  if (uv_fileno((uv_handle_t*) &rx, (uv_os_fd_t*) &sock))
    return 1;
  {
    uv_udp_t tx;
    uv_buf_t b;
    if (uv_udp_init(&loop, &tx))
      return 1;
    byte = 'x';
    b = uv_buf_init(&byte, 1);
    for (i = 0; i < BACKLOG; i++)
      if (uv_udp_try_send(&tx, &b, 1, (const struct sockaddr*) &addr) != 1)
        return 1;
    uv_close((uv_handle_t*) &tx, NULL);
  }

  uv_check_init(&loop, &check);
  uv_check_start(&check, on_check);
  if (uv_udp_recv_start(&rx, on_alloc, on_recv))
    return 1;
  for (i = 0; i < 1000 && received < BACKLOG; i++)
    uv_run(&loop, UV_RUN_ONCE);

  printf("budget");
  for (i = 0; i < iterations; i++)
    printf(" %d", counts[i]);
  printf("\n");
  uv_close((uv_handle_t*) &rx, NULL);
  uv_close((uv_handle_t*) &check, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  free(slab);
  return received == BACKLOG ? 0 : 1;
}
