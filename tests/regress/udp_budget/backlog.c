/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * One backlog queued before the first poll: at most BUDGET datagrams per
 * event, each once and in order.
 */

#include "udp_budget.h"

int backlog_100_recvmsg(void) {
#ifdef _WIN32
  SKIP(UNIX_ONLY_REASON);
#else
  return backlog_case(0, 100, WANT_100, AF_INET);
#endif
}


int backlog_100_recvmmsg_20_chunks(void) {
#ifdef _WIN32
  SKIP(UNIX_ONLY_REASON);
#else
  return backlog_case(20, 100, WANT_100, AF_INET);
#endif
}


int backlog_100_recvmmsg_8_chunks(void) {
#ifdef _WIN32
  SKIP(UNIX_ONLY_REASON);
#else
  return backlog_case(8, 100, WANT_100, AF_INET);
#endif
}


int backlog_100_recvmmsg_7_chunks(void) {
#ifdef _WIN32
  SKIP(UNIX_ONLY_REASON);
#else
  return backlog_case(7, 100, WANT_100, AF_INET);
#endif
}


/* 200 datagrams, each exactly once and in order (checked as they come). */
int in_order_ipv4_recvmsg(void) {
  return backlog_case(0, 200, NULL, 0, AF_INET);
}


int in_order_ipv4_recvmmsg_20_chunks(void) {
  return backlog_case(20, 200, NULL, 0, AF_INET);
}


int in_order_ipv4_recvmmsg_7_chunks(void) {
  return backlog_case(7, 200, NULL, 0, AF_INET);
}


int in_order_ipv6_recvmsg(void) {
  return backlog_case(0, 200, NULL, 0, AF_INET6);
}


int in_order_ipv6_recvmmsg_20_chunks(void) {
  return backlog_case(20, 200, NULL, 0, AF_INET6);
}
