/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The cases that receive: a cell, errors queued before recv_start, and
 * the stop, close and ENOMEM cases.
 */

#include "udp_matrix.h"

#ifdef __linux__

/* One ICMP error and 10 datagrams while receiving; or 20 and 40 queued
 * before uv_udp_recv_start(); or the stop, close or ENOMEM cases.
 */
int receive_case(const cell_t* c) {
  int r;

  if (c->kind == KIND_AFTER_QUEUED) {
    mc.datagrams_to_send = QUEUED_DATAGRAMS;
    mc.errors_to_send = QUEUED_ERRORS;
  } else if (c->kind == KIND_CELL) {
    mc.datagrams_to_send = CELL_DATAGRAMS;
    mc.errors_to_send = 1;
  } else {
    mc.datagrams_to_send = CELL_DATAGRAMS;
    mc.errors_to_send = FEW_ERRORS;
  }
  CHECK_EQ(make_seen(mc.datagrams_to_send), 0);
  if (c->kind == KIND_AFTER_QUEUED) {
    /* Queued while the handle runs in the loop without receiving. */
    CHECK_EQ(peer_act(mc.datagrams_to_send, mc.errors_to_send), 0);
    uv_run(&mc.loop, UV_RUN_NOWAIT);
    CHECK_UV(recv_start());
  } else {
    CHECK_UV(recv_start());
    CHECK_UV(uv_timer_start(&mc.go, on_go, GO_MS, 0));
  }
  r = run_for(RUN_MS);
  if (!mc.icmp_counted)
    mc.icmp_errors = mc.errors_to_send;
  print_figures(c);

  switch (c->kind) {
    case KIND_STOP:
      judge_common(c, mc.batch_rest);
      if (!mc.acted)
        fault("recv_cb never handed anything over");
      if (mc.calls_while_stopped != 0)
        fault("%ld alloc_cb/recv_cb calls after uv_udp_recv_stop()",
              mc.calls_while_stopped);
      if (mc.frees_while_stopped != (mc.batch_rest > 0))
        fault("%ld UV_UDP_MMSG_FREE after uv_udp_recv_stop() cut a batch of "
              "%ld more chunks, expected %d", mc.frees_while_stopped,
              mc.batch_rest, mc.batch_rest > 0);
      break;
    case KIND_CLOSE:
      /* Closing drops what is still queued: the rule is what comes before
       * and after uv_close().
       */
      if (mc.iterations > SPIN_BOUND)
        fault("spin: %ld loop iterations in %d ms", mc.iterations, RUN_MS);
      if (mc.max_per_iter > BUDGET || mc.max_reports_per_iter > BUDGET)
        fault("%ld datagrams and %ld reports in one iteration, budget %d "
              "each", mc.max_per_iter, mc.max_reports_per_iter, BUDGET);
      /* The first callback may be the report or, as on upstream, the
       * plain ECONNREFUSED of the same ICMP error.
       */
      if (!mc.acted)
        fault("recv_cb never handed anything over");
      else if (!mc.first_was_report &&
               mc.first_plain_error != UV_ECONNREFUSED)
        fault("the first callback was a plain %s, not the report or "
              "ECONNREFUSED", err_name(mc.first_plain_error));
      if (mc.watch.close_cbs != 1)
        fault("close_cb ran %d times", mc.watch.close_cbs);
      if (mc.allocs_after_close + mc.others_after_close != 0)
        fault("%ld alloc_cb and %ld other recv_cb calls after uv_close()",
              mc.allocs_after_close, mc.others_after_close);
      /* recvmmsg: the rest of the batch already read still comes, then
       * one UV_UDP_MMSG_FREE; nothing beyond it.
       */
      if (mc.chunks_after_close > mc.batch_rest ||
          mc.frees_after_close > 1)
        fault("%ld chunks and %ld UV_UDP_MMSG_FREE after uv_close(), "
              "the batch had %ld more", mc.chunks_after_close,
              mc.frees_after_close, mc.batch_rest);
      if (mc.lent != 0)
        fault("%ld buffers from alloc_cb never given back", mc.lent);
      if (mc.loop_err[0] != '\0')
        fault("%s", mc.loop_err);
      break;
    case KIND_ENOMEM:
      judge_common(c, 0);
      if (mc.injected != 1)
        fault("libuv never read the error queue (%ld reads), so no ENOMEM "
              "was made", mc.reads_of_errqueue);
      else if (mc.plain_enomem != 1)
        fault("the error-queue read's ENOMEM reached recv_cb %ld times, "
              "expected once", mc.plain_enomem);
      break;
    default:
      judge_common(c, 0);
      break;
  }
  return finish(c, r);
}

#endif  /* __linux__ */
