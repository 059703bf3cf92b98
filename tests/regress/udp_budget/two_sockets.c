/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * Two sockets on one loop: each has its own budget.
 */

#include "udp_budget.h"

#ifndef _WIN32
/* Two sockets with 100 each on one loop: 32 from each per iteration. */
static int two_sockets_case(int chunks) {
  static const int want_total[] = { 64, 64, 64, 8 };
  test_ctx c;
  receiver r[2];
  uv_udp_t sender;
  char reason[400];
  int i;

  if (ctx_init(&c) != CASE_OK)
    return CASE_FAIL;
  for (i = 0; i < 2; i++)
    CHECK_UV(receiver_init(&c, &r[i], AF_INET, chunks, 100));
  if (skip_mmsg(&r[0])) {
    ctx_close(&c, NULL);
    SKIP("recvmmsg is not supported here (uv_udp_using_recvmmsg)");
  }
  CHECK_UV(sender_init(&c, &sender, &r[0]));
  for (i = 0; i < 2; i++)
    CHECK_UV(send_backlog(&sender, &r[i], 0, 100));
  for (i = 0; i < 2; i++)
    CHECK_UV(receiver_start(&r[i]));

  if (run_and_close(&c, &sender) != CASE_OK)
    return CASE_FAIL;
  for (i = 0; i < 2; i++) {
    if (r[i].received != 100)
      FAIL("socket %d received %u datagrams, want 100", i, r[i].received);
    if (compare_log(r[i].log, r[i].nlog, WANT_100, reason, sizeof(reason)))
      FAIL("socket %d: %s", i, reason);
  }
  if (compare_log(c.total_log, c.total_nlog, want_total, 4,
                  reason, sizeof(reason)))
    FAIL("both sockets: %s", reason);
  return CASE_OK;
}
#endif  /* !_WIN32 */


int two_sockets_recvmsg(void) {
#ifdef _WIN32
  SKIP(UNIX_ONLY_REASON);
#else
  return two_sockets_case(0);
#endif
}


int two_sockets_recvmmsg_20_chunks(void) {
#ifdef _WIN32
  SKIP(UNIX_ONLY_REASON);
#else
  return two_sockets_case(20);
#endif
}
