/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The table of cases of udp_hostile.
 */

#define HARNESS_MAIN
#include "udp_hostile.h"

static const test_case cases[] = {
  { "udp_flood_5s_recvmsg", case_flood_recvmsg },
  { "udp_flood_5s_recvmmsg", case_flood_recvmmsg },
  { "icmp_report_flood", case_icmp_flood },
  { "icmp_report_flood_mmsg", case_icmp_flood_mmsg },
  { "truncated_datagrams_recvmsg", case_truncated_recvmsg },
  { "truncated_datagrams_recvmmsg", case_truncated_recvmmsg },
  { "callbacks_close", case_cb_close },
  { "callbacks_stop", case_cb_stop },
  { "callbacks_stop_start", case_cb_stop_start },
  { "callbacks_free_early", case_cb_free_early },
  { NULL, NULL }
};

int main(int argc, char** argv) {
  return harness_main(cases, argc, argv);
}
