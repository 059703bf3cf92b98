/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The receiving side of the UDP benchmarks: one alloc_cb and one recv_cb
 * that count what a handle is handed, per loop iteration, so that each
 * benchmark keeps only what it measures. The handle's data points at an
 * rx_counts, or at a program's state whose first member is one (C lets a
 * pointer to a struct stand for a pointer to its first member). libuv's
 * API only: it builds wherever libuv does.
 */

#ifndef UVPATCH_RX_H_
#define UVPATCH_RX_H_

#include <stddef.h>

#include "uv.h"

typedef struct rx_counts rx_counts;

/* What a recv_cb call brought, as the hook is told. */
enum {
  RX_DATAGRAM,  /* nread > 0 from an address. */
  RX_REPORT,    /* UV_UDP_LINUX_RECVERR in flags. */
  RX_ERROR,     /* Another negative nread. */
  RX_DRAINED,   /* nread 0 and no address: nothing more to read. */
  RX_EMPTY      /* A datagram of no bytes. */
};

struct rx_counts {
  /* Lent by rx_alloc on every call: the benchmarks look at a datagram in
   * recv_cb and keep nothing, so one slab serves (libuv hands a recvmmsg
   * slab back, UV_UDP_MMSG_FREE, before it asks for the next).
   */
  uv_buf_t slab;
  /* Datagrams handed over: nread > 0 from an address, not a report. */
  unsigned long received;
  /* Error-queue reports (UV_UDP_LINUX_RECVERR in flags), whatever their
   * nread: upstream's v1.52.0 hands them over with a positive one.
   */
  long reports;
  /* Other negative nread. */
  long errors;
  /* Datagrams of the loop iteration running, and the most of any one. */
  int this_iter;
  int max_iter;
  /* Iterations ended by rx_iteration(). */
  long iterations;
  /* When set, called after every call of rx_recv that was not only a
   * slab given back: the program's own checks (sequence numbers, when to
   * stop).
   */
  void (*after)(rx_counts* rx, int kind, const uv_buf_t* buf, ssize_t n);
};


/* Zeroes the counts; the slab and the hook stay. */
static void rx_reset(rx_counts* rx) {
  rx->received = 0;
  rx->reports = 0;
  rx->errors = 0;
  rx->this_iter = 0;
  rx->max_iter = 0;
  rx->iterations = 0;
}


static void rx_alloc(uv_handle_t* handle, size_t suggested, uv_buf_t* buf) {
  (void) suggested;
  *buf = ((const rx_counts*) handle->data)->slab;
}


static void rx_recv(uv_udp_t* handle,
                    ssize_t nread,
                    const uv_buf_t* buf,
                    const struct sockaddr* addr,
                    unsigned flags) {
  rx_counts* rx;
  int kind;

  rx = handle->data;
  if (flags & UV_UDP_MMSG_FREE)
    return;  /* The slab back: it is rx->slab, nothing to free. */
  if (flags & UV_UDP_LINUX_RECVERR) {
    kind = RX_REPORT;
    rx->reports++;
  } else if (nread > 0 && addr != NULL) {
    kind = RX_DATAGRAM;
    rx->received++;
    rx->this_iter++;
  } else if (nread < 0) {
    kind = RX_ERROR;
    rx->errors++;
  } else {
    kind = addr == NULL ? RX_DRAINED : RX_EMPTY;
  }
  if (rx->after != NULL)
    rx->after(rx, kind, buf, nread);
}


/* Ends a loop iteration (a check handle calls it): returns how many
 * datagrams the iteration handed over.
 */
static int rx_iteration(rx_counts* rx) {
  int n;

  n = rx->this_iter;
  rx->iterations++;
  if (n > rx->max_iter)
    rx->max_iter = n;
  rx->this_iter = 0;
  return n;
}

#endif  /* UVPATCH_RX_H_ */
