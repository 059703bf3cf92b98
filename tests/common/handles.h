/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * Closing a case's handles. A case may end from more than one place (a
 * callback, its safety timer, the end of the run), and uv_close() must
 * not be called twice on a handle. libuv's API only.
 */

#ifndef UVPATCH_HANDLES_H_
#define UVPATCH_HANDLES_H_

#include "uv.h"

/* Closes handle (any uv_*_t) with cb unless it is closing already. */
static void close_once(void* handle, uv_close_cb cb) {
  if (!uv_is_closing((uv_handle_t*) handle))
    uv_close((uv_handle_t*) handle, cb);
}


static void close_walk_cb(uv_handle_t* handle, void* arg) {
  (void) arg;
  close_once(handle, NULL);
}


/* Closes every handle of loop that is not closing already, in the order
 * they were made. A case that watches a handle's close closes that one
 * first, with its callback.
 */
static void close_handles(uv_loop_t* loop) {
  uv_walk(loop, close_walk_cb, NULL);
}


/* The close of a UDP handle that a case judges: closed is set when
 * uv_close() is called (recv_cb must see nothing after it), close_cbs
 * counts the close callback (it must run once).
 */
typedef struct {
  int closed;
  int close_cbs;
} close_watch;


static void count_close(uv_handle_t* handle) {
  ((close_watch*) handle->data)->close_cbs++;
}


/* Closes handle, noting it in w; handle's data is w from now on. */
static void close_watched(uv_handle_t* handle, close_watch* w) {
  w->closed = 1;
  handle->data = w;
  uv_close(handle, count_close);
}

#endif  /* UVPATCH_HANDLES_H_ */
