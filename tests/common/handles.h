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

#endif  /* UVPATCH_HANDLES_H_ */
