/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The table of cases of udp_budget.
 */

#define HARNESS_MAIN
#include "udp_budget.h"

static const test_case cases[] = {
  { "backlog_100_recvmsg", backlog_100_recvmsg },
  { "backlog_100_recvmmsg_20_chunks", backlog_100_recvmmsg_20_chunks },
  { "backlog_100_recvmmsg_8_chunks", backlog_100_recvmmsg_8_chunks },
  { "backlog_100_recvmmsg_7_chunks", backlog_100_recvmmsg_7_chunks },
  { "backlog_100_recvmmsg_small_buffer", backlog_100_recvmmsg_small_buffer },
  { "two_sockets_recvmsg", two_sockets_recvmsg },
  { "two_sockets_recvmmsg_20_chunks", two_sockets_recvmmsg_20_chunks },
  { "self_feed_recvmsg", self_feed_recvmsg },
  { "self_feed_recvmmsg_20_chunks", self_feed_recvmmsg_20_chunks },
  { "recv_stop_mid_batch_recvmsg", recv_stop_mid_batch_recvmsg },
  { "recv_stop_mid_batch_recvmmsg_7_chunks",
    recv_stop_mid_batch_recvmmsg_7_chunks },
  { "close_mid_batch_recvmsg", close_mid_batch_recvmsg },
  { "close_mid_batch_recvmmsg_7_chunks", close_mid_batch_recvmmsg_7_chunks },
  { "enobufs_mid_batch_recvmsg", enobufs_mid_batch_recvmsg },
  { "enobufs_mid_batch_recvmmsg_7_chunks",
    enobufs_mid_batch_recvmmsg_7_chunks },
  { "in_order_ipv4_recvmsg", in_order_ipv4_recvmsg },
  { "in_order_ipv4_recvmmsg_20_chunks", in_order_ipv4_recvmmsg_20_chunks },
  { "in_order_ipv4_recvmmsg_7_chunks", in_order_ipv4_recvmmsg_7_chunks },
  { "in_order_ipv6_recvmsg", in_order_ipv6_recvmsg },
  { "in_order_ipv6_recvmmsg_20_chunks", in_order_ipv6_recvmmsg_20_chunks },
  { "starvation_recvmsg", starvation_recvmsg, CASE_THREADS },
  { "starvation_recvmmsg_20_chunks", starvation_recvmmsg_20_chunks,
    CASE_THREADS },
  { NULL, NULL }
};


int main(int argc, char** argv) {
  return harness_main(cases, argc, argv);
}
