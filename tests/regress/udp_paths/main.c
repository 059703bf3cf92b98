/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The table of cases of udp_paths.
 */

#define HARNESS_MAIN
#include "udp_paths.h"

const char* case_name;

#define PATHS_FN(name, body)                                                  \
  static int name(void) {                                                     \
    case_name = #name;                                                        \
    return body;                                                              \
  }

PATHS(PATHS_FN)

#define PATHS_ENTRY(name, body) { #name, name, 0 },

static const test_case cases[] = {
  PATHS(PATHS_ENTRY)
  { NULL, NULL, 0 }
};

int main(int argc, char** argv) {
  return harness_main(cases, argc, argv);
}
