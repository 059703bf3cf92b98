/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * Sends queued with uv_udp_send(), and what their callbacks said: the
 * send-only cases of the error-queue programs queue many sends to a
 * closed port and check that every one completes, refused or not, so
 * that a report on a handle that does not receive loses no send. libuv's
 * API only.
 */

#ifndef UVPATCH_SENDS_H_
#define UVPATCH_SENDS_H_

#include <stdio.h>
#include <stdlib.h>

#include "uv.h"

typedef struct {
  long cbs;  /* Send callbacks that ran. */
  long ok;
  /* UV_ECONNREFUSED: the socket error of an earlier ICMP error, taken by
   * this send.
   */
  long refused;
  long other;
  int other_status;  /* The last of the others. */
} send_tally;


static void tally_send(uv_udp_send_t* req, int status) {
  send_tally* t;

  t = req->data;
  t->cbs++;
  if (status == 0) {
    t->ok++;
  } else if (status == UV_ECONNREFUSED) {
    t->refused++;
  } else {
    t->other++;
    t->other_status = status;
  }
  free(req);
}


/* Queues n sends of buf on handle to addr (NULL: the connected peer),
 * each with a request of its own that tally_send frees. Returns 0, or the
 * UV_E* code of the send that failed, its index in *failed.
 */
static int send_n(uv_udp_t* handle,
                  send_tally* t,
                  const uv_buf_t* buf,
                  int n,
                  const struct sockaddr* addr,
                  int* failed) {
  uv_udp_send_t* req;
  int r;
  int i;

  for (i = 0; i < n; i++) {
    *failed = i;
    req = malloc(sizeof(*req));
    if (req == NULL)
      return UV_ENOMEM;
    req->data = t;
    r = uv_udp_send(req, handle, buf, 1, addr, tally_send);
    if (r != 0) {
      free(req);
      return r;
    }
  }
  return 0;
}


/* NULL when all n callbacks ran, else why. */
static const char* sends_missing(const send_tally* t, int n) {
  static char why[128];

  if (t->cbs == n)
    return NULL;
  snprintf(why, sizeof(why), "%ld of %d send callbacks ran", t->cbs, n);
  return why;
}


/* NULL when no send failed but for UV_ECONNREFUSED, else why. */
static const char* sends_failed(const send_tally* t) {
  static char why[128];

  if (t->other == 0)
    return NULL;
  snprintf(why, sizeof(why), "%ld sends failed with %s", t->other,
           uv_err_name(t->other_status));
  return why;
}

#endif  /* UVPATCH_SENDS_H_ */
