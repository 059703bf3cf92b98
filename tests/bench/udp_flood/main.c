/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * The options, and a run of each mode asked for.
 */

#include "udp_flood.h"

#ifndef _WIN32

int main(int argc, char** argv) {
  const char* mode;
  const char* label;
  bench b;
  int chunks;
  int work_us;
  int drain;
  int reps;
  int size;
  int ms;
  int err;
  int i;
  int m;

  work_us = 0;
  drain = 0;
  reps = 9;
  mode = "both";
  label = "";
  chunks = MAX_CHUNKS;
  size = 32;
  ms = 2000;
  for (i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--mode") == 0)
      mode = argv[i + 1];
    else if (strcmp(argv[i], "--ms") == 0)
      ms = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--chunks") == 0)
      chunks = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--size") == 0)
      size = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--label") == 0)
      label = argv[i + 1];
    else if (strcmp(argv[i], "--drain") == 0)
      drain = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--work-us") == 0)
      work_us = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--reps") == 0)
      reps = atoi(argv[i + 1]);
    else
      break;
  }
  if (i < argc || ms <= 0 || chunks < 1 || chunks > MAX_CHUNKS ||
      drain < 0 || reps < 1 || work_us < 0 || work_us > 1000 ||
      size < 1 || size > 1500 || strchr(label, '"') != NULL ||
      strchr(label, '\\') != NULL) {
    fprintf(stderr,
            "usage: %s [--mode recvmsg|recvmmsg|both] [--ms N] "
            "[--chunks 1-%d] [--size 1-1500] [--label TEXT] "
            "[--work-us N] [--drain N [--reps N]]\n",
            argv[0], MAX_CHUNKS);
    return 2;
  }

  for (m = 0; m < 2; m++) {
    if (m == 0 && strcmp(mode, "recvmmsg") == 0)
      continue;
    if (m == 1 && strcmp(mode, "recvmsg") == 0)
      continue;
    memset(&b, 0, sizeof(b));
    b.mmsg = m;
    b.chunks = chunks;
    b.ms = ms;
    b.size = size;
    b.label = label;
    b.work_us = work_us;
    b.drain = drain;
    b.reps = reps;
    b.rx.after = after_recv;
    err = drain != 0 ? run_drain(&b) : run_one(&b);
    if (err) {
      fprintf(stderr, "udp_flood: %s\n", uv_strerror(err));
      return 1;
    }
  }
  return 0;
}

#else  /* _WIN32 */

int main(void) {
  printf("{\"bench\":\"udp_flood\",\"skip\":\"the budget patch is "
         "Unix-only\"}\n");
  return 0;
}

#endif  /* _WIN32 */
