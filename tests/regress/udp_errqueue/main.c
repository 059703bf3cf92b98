/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The cases of udp_errqueue (see udp_errqueue.h).
 */

#define HARNESS_MAIN
#include "udp_errqueue.h"

static const test_case cases[] = {
  { "one_report_ipv4", case_one_report_ipv4 },
  { "one_report_ipv6", case_one_report_ipv6 },
  { "negative_nread", case_negative_nread },
  { "alloc_cb_buffer", case_alloc_cb_buffer },
  { "one_report_no_spin", case_one_report_no_spin },
  { "three_reports_once", case_three_reports_once },
  { "report_burst", case_report_burst },
  { "send_only_unconnected", case_send_only_unconnected },
  { "send_only_connected", case_send_only_connected },
  { "stopped_handle_sends", case_stopped_handle_sends },
  { "errqueue_reads_without_flag", case_errqueue_reads_without_flag },
  { "errqueue_reads_without_flag_mmsg",
    case_errqueue_reads_without_flag_mmsg },
  { "data_and_reports", case_data_and_reports },
  { "data_and_reports_mmsg", case_data_and_reports_mmsg },
  { "close_on_first_error", case_close_on_first_error },
#define CASE_ENTRY(name, fn, arg, mmsg) { #name, case_##name },
  READ_ON_CASES(CASE_ENTRY)
  TIMESTAMP_CASES(CASE_ENTRY)
#define CASE_ENTRY6(name, a, b, c, d, e) { #name, case_##name },
  ICMP_CODE_CASES(CASE_ENTRY6)
#define CASE_ENTRY3(name, a, b) { #name, case_##name },
  REPEATED_ERROR_CASES(CASE_ENTRY3)
  { NULL, NULL }
};

int main(int argc, char** argv) {
  return harness_main(cases, argc, argv);
}
