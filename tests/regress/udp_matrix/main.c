/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The table of cases: the cells of udp_matrix.h's MATRIX.
 */

#define HARNESS_MAIN
#include "udp_matrix.h"

static int run_cell(const cell_t* c) {
#ifndef __linux__
  (void) c;
  SKIP("Linux only: IP_RECVERR and the socket error queue");
#else
  int r;

  enter_netns(c->kind == KIND_FLOOD || c->kind == KIND_SEND_ONLY);
  if (c->kind == KIND_FLOOD && !in_netns)
    SKIP("the flood runs in a private network namespace only (root or "
         "unprivileged user namespaces)");
  if (c->ipv6 && no_ipv6())
    SKIP("no IPv6 loopback (::1) here");
  faults[0] = '\0';
  r = setup(c);
  if (r != CASE_OK)
    return r;
  switch (c->kind) {
    case KIND_SEND_ONLY:
      return send_only_case(c);
    case KIND_FLOOD:
      return flood_case(c);
    default:
      return receive_case(c);
  }
#endif
}

#define MATRIX_CASE_FN(name, sock, ipv6, mmsg, connected, kind)              \
  static int case_##name(void) {                                              \
    static const cell_t c = { #name, sock, ipv6, mmsg, connected, kind };     \
    return run_cell(&c);                                                      \
  }
MATRIX(MATRIX_CASE_FN)

#define MATRIX_CASE_ENTRY(name, sock, ipv6, mmsg, connected, kind)           \
  { #name, case_##name, 0 },

static const test_case cases[] = {
  MATRIX(MATRIX_CASE_ENTRY)
  { NULL, NULL, 0 }
};

int main(int argc, char** argv) {
  return harness_main(cases, argc, argv);
}
