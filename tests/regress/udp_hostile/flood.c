/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * A child floods the handle with numbered datagrams for five seconds.
 */

#include "udp_hostile.h"

#ifdef __linux__


static int flood_case(int chunks) {
  flood_arg* f;
  pid_t pid;
  int child_ok;

  if (hc_setup(chunks, 0, FLOOD_MAX_SEQ) != CASE_OK)
    return CASE_FAIL;
  if (chunks != 0 && !uv_udp_using_recvmmsg(&hc.udp))
    SKIP("recvmmsg is not supported here (uv_udp_using_recvmmsg)");
  f = shared_arg();
  CHECK(f != NULL);
  CHECK_EQ(hc_addr(&f->to), 0);
  f->fd = -1;
  f->max = FLOOD_MAX_SEQ;
  f->ms = FLOOD_MS;
  pid = spawn(flood_child, f, FLOOD_MS / 1000 + 3);
  CHECK_GT(pid, 0);

  /* Run a little past the flood to drain what is queued. */
  if (hc_run(FLOOD_MS + 300) != CASE_OK) {
    reap(pid, 0);
    return CASE_FAIL;
  }
  child_ok = reap(pid, 2000);

  fprintf(stderr,
          "# udp_flood_5s_%s: ticks=%ld (expected %ld) datagrams=%lu "
          "sent=%lu dups=%lu bad=%lu max/iter=%ld iterations=%ld "
          "rss_1s=%ldKiB rss_end=%ldKiB allocs=%ld frees=%ld "
          "max_lent=%ld run=%lums\n",
          chunks ? "recvmmsg" : "recvmsg", hc.ticks,
          (long) (hc.run_ms / TICK_MS), hc.datagrams, f->sent, hc.dups,
          hc.bad, hc.max_iter, hc.iterations, hc.rss_1s / 1024,
          hc.rss_end / 1024, hc.allocs, hc.frees, hc.max_lent,
          (unsigned long) hc.run_ms);

  if (!child_ok || f->failed)
    FAIL("the flooding child did not end cleanly by itself (errno %d)",
         f->failed);
  if (hc.err[0] != '\0')
    FAIL("%s", hc.err);
  CHECK_TIMING(ticks_ok(),
               "the 20 ms timer fired %ld times in %lu ms, want >= 80%% of "
               "%ld", hc.ticks, (unsigned long) hc.run_ms,
               (long) (hc.run_ms / TICK_MS));
  if (hc.datagrams == 0)
    FAIL("no datagram delivered (sent %lu)", f->sent);
  if (hc.dups != 0 || hc.bad != 0)
    FAIL("%lu datagrams delivered twice, %lu malformed", hc.dups, hc.bad);
  CHECK_LE(hc.max_iter, BUDGET);
  if (hc.plain_errors != 0)
    FAIL("%ld errors in recv_cb, first %s", hc.plain_errors,
         uv_err_name((int) hc.first_plain_error));
  if (hc.rss_1s <= 0 || hc.rss_end <= 0)
    FAIL("cannot read /proc/self/statm");
  CHECK_RSS(hc.rss_end - hc.rss_1s < RSS_SLACK,
            "RSS grew from %ld KiB at 1 s to %ld KiB at the end",
            hc.rss_1s / 1024, hc.rss_end / 1024);
  if (chunks != 0 && (hc.allocs != hc.frees || hc.max_lent > 1))
    FAIL("recvmmsg buffers: %ld allocated, %ld given back, up to %ld lent "
         "at once", hc.allocs, hc.frees, hc.max_lent);
  CHECK_EQ(hc.cbs_after_close, 0);
  munmap(f, sizeof(*f));
  return CASE_OK;
}

#endif  /* __linux__ */

int case_flood_recvmsg(void) {
#ifndef __linux__
  SKIP(LINUX_ONLY);
#else
  return flood_case(0);
#endif
}

int case_flood_recvmmsg(void) {
#ifndef __linux__
  SKIP(LINUX_ONLY);
#else
  return flood_case(FLOOD_CHUNKS);
#endif
}
