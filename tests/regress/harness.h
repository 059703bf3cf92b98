/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * A tiny harness for the regression programs in tests/. Each program is a
 * table of cases. `prog --list` prints the case names, `prog NAME` runs one
 * case, `prog` runs them all. Every case prints exactly one result line:
 *
 *   ok NAME
 *   not ok NAME: reason
 *   skip NAME: reason
 *
 * A program is one file, or a folder of files (tests/uv-programs.cmake)
 * whose cases are non-static functions that the table in one of them
 * lists; see HARNESS_SHARED below.
 *
 * scripts/uvpatch runs each case in its own process, so a crash or a hang
 * costs that case only; `prog` alone does the same on POSIX systems, where
 * it forks a child per case and reports a case that dies by a signal as
 * "not ok NAME: killed by signal N". `prog --list-threads` prints the
 * cases that start threads of their own: the ThreadSanitizer run takes
 * those.
 *
 * A bound on wall-clock time (a timer's ticks during a flood) measures the
 * instrumentation as much as libuv when the program runs under valgrind.
 * With UVPATCH_TIMING=report in the environment, CHECK_TIMING() prints a
 * missed bound as a "# timing:" line on stderr instead of failing; every
 * other check still fails the case. The plain run always asserts them.
 */

#ifndef UVPATCH_HARNESS_H_
#define UVPATCH_HARNESS_H_

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Which patches the linked libuv carries, written by the build
 * (tests/uv-programs.cmake).
 */
#include "uvpatch_series.h"

#ifndef _WIN32
# include <errno.h>
# include <sys/types.h>
# include <sys/wait.h>
# include <unistd.h>
#endif

enum {
  CASE_OK = 0,
  CASE_FAIL = 1,
  CASE_SKIP = 2
};

/* Flags of a case. */
#define CASE_THREADS 1  /* Starts threads of its own. */

typedef int (*case_fn)(void);

typedef struct {
  const char* name;
  case_fn fn;
  int flags;  /* CASE_THREADS, or 0 when a table leaves it out. */
} test_case;

/* The reason printed after the result; set by FAIL() and SKIP(). The
 * files of a program that is a folder share one: its own header defines
 * HARNESS_SHARED, and the file with the table of cases HARNESS_MAIN too,
 * before they include this one.
 */
#if !defined(HARNESS_SHARED)
static char harness_reason[512];
#elif defined(HARNESS_MAIN)
char harness_reason[512];
#else
extern char harness_reason[512];
#endif

static int harness_set_reason(int result, const char* fmt, ...) {
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(harness_reason, sizeof(harness_reason), fmt, ap);
  va_end(ap);
  return result;
}

/* Keeps the first failure that a case's callbacks see in err (size
 * bytes): a callback cannot return the case's result, so the case reads
 * err after the run. What fails after it mostly follows from it.
 */
static void harness_note_first(char* err,
                               size_t size,
                               const char* fmt,
                               va_list ap) {
  if (err[0] == '\0')
    vsnprintf(err, size, fmt, ap);
}

#define FAIL(...)                                                             \
  return harness_set_reason(CASE_FAIL, __VA_ARGS__)

#define SKIP(...)                                                             \
  return harness_set_reason(CASE_SKIP, __VA_ARGS__)

/* A case for a patch that not every series carries skips where the
 * series its build comes from lacks the patch, naming it; the unpatched
 * base of a series that has it runs the case (where it proves the patch).
 * The build defines UVPATCH_IN_SERIES_<ID> for each patch of the series,
 * <ID> its file name without "NNNN-" and ".patch", in upper case, each
 * character that is not a letter or a digit made "_":
 *
 *   #if !defined(UVPATCH_IN_SERIES_SRC_GIVE_ERROR_CODE_0_A_NAME)
 *     SKIP_WITHOUT_PATCH("src-give-error-code-0-a-name");
 *
 * UVPATCH_IN_TREE_<ID> says the same of this build's own tree.
 */
#define SKIP_WITHOUT_PATCH(name)                                              \
  SKIP("needs the patch %s, which is not in %s", name, UVPATCH_FROM)

/* Fails the current case with the expression and where it is. */
#define CHECK(expr)                                                           \
  do {                                                                        \
    if (!(expr))                                                              \
      FAIL("%s:%d: check failed: %s", __FILE__, __LINE__, #expr);             \
  } while (0)

/* Fails the current case unless `a op b`, printing both values, as
 * libuv's ASSERT_EQ() and its kin do. For integers.
 */
#define CHECK_CMP(a, op, b)                                                   \
  do {                                                                        \
    long long check_a_ = (long long) (a);                                     \
    long long check_b_ = (long long) (b);                                     \
    if (!(check_a_ op check_b_))                                              \
      FAIL("%s:%d: check failed: %s %s %s (%lld %s %lld)", __FILE__,          \
           __LINE__, #a, #op, #b, check_a_, #op, check_b_);                   \
  } while (0)

#define CHECK_EQ(a, b) CHECK_CMP(a, ==, b)
#define CHECK_NE(a, b) CHECK_CMP(a, !=, b)
#define CHECK_LT(a, b) CHECK_CMP(a, <, b)
#define CHECK_LE(a, b) CHECK_CMP(a, <=, b)
#define CHECK_GT(a, b) CHECK_CMP(a, >, b)
#define CHECK_GE(a, b) CHECK_CMP(a, >=, b)

/* Like CHECK() for a libuv call that returns 0 or a UV_E* code. */
#define CHECK_UV(call)                                                        \
  do {                                                                        \
    int check_uv_r_ = (call);                                                 \
    if (check_uv_r_ != 0)                                                     \
      FAIL("%s:%d: %s: %s", __FILE__, __LINE__, #call,                        \
           uv_strerror(check_uv_r_));                                         \
  } while (0)

/* Nonzero when missed timing bounds are to be reported, not failed. */
static int harness_timing_reported(void) {
  const char* mode;

  mode = getenv("UVPATCH_TIMING");
  return mode != NULL && strcmp(mode, "report") == 0;
}

/* AddressSanitizer holds freed blocks in a quarantine (256 MiB by
 * default), so under it the resident set grows with every free(): there a
 * bound on that growth is reported, not judged. LeakSanitizer and the
 * valgrind run still look for leaks, and the other builds judge it.
 */
#if defined(__SANITIZE_ADDRESS__)
# define HARNESS_ASAN 1
#elif defined(__has_feature)
# if __has_feature(address_sanitizer)
#  define HARNESS_ASAN 1
# endif
#endif
#ifndef HARNESS_ASAN
# define HARNESS_ASAN 0
#endif

/* Fails the case when `cond` is false and `judged` is nonzero; otherwise
 * prints "# KIND: reason (not judged: WHY)" on stderr and goes on.
 */
#define CHECK_OR_REPORT(cond, judged, kind, why, ...)                         \
  do {                                                                        \
    if (!(cond)) {                                                            \
      if (judged)                                                             \
        FAIL(__VA_ARGS__);                                                    \
      fprintf(stderr, "# %s: ", kind);                                        \
      fprintf(stderr, __VA_ARGS__);                                           \
      fprintf(stderr, " (not judged: %s)\n", why);                            \
    }                                                                         \
  } while (0)

/* A wall-clock bound, see above. */
#define CHECK_TIMING(cond, ...)                                               \
  CHECK_OR_REPORT(cond, !harness_timing_reported(), "timing",                 \
                  "UVPATCH_TIMING=report", __VA_ARGS__)

/* A bound on the growth of the resident set, see above. */
#define CHECK_RSS(cond, ...)                                                  \
  CHECK_OR_REPORT(cond, !HARNESS_ASAN, "rss",                                 \
                  "AddressSanitizer's quarantine keeps freed memory",         \
                  __VA_ARGS__)

static int harness_run_one(const test_case* c) {
  int r;

  harness_reason[0] = '\0';
  r = c->fn();
  if (r == CASE_OK)
    printf("ok %s\n", c->name);
  else if (r == CASE_SKIP)
    printf("skip %s: %s\n", c->name, harness_reason);
  else
    printf("not ok %s: %s\n", c->name, harness_reason);
  fflush(stdout);
  return r == CASE_FAIL;
}

/* Runs one case in a child process where there is fork(), so that a
 * crash fails that case alone. Returns 1 if it failed.
 */
static int harness_run_isolated(const test_case* c) {
#ifdef _WIN32
  return harness_run_one(c);
#else
  pid_t pid;
  int status;

  fflush(stdout);
  fflush(stderr);
  pid = fork();
  if (pid < 0)
    return harness_run_one(c);
  if (pid == 0)
    _exit(harness_run_one(c));
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return 1;
  if (WIFEXITED(status))
    return WEXITSTATUS(status) != 0;
  printf("not ok %s: killed by signal %d\n", c->name,
         WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  fflush(stdout);
  return 1;
#endif
}

/* Call from main(): returns the exit status. */
static int harness_main(const test_case* cases, int argc, char** argv) {
  const test_case* c;
  int failed;

  if (argc > 1 && strcmp(argv[1], "--list") == 0) {
    for (c = cases; c->name != NULL; c++)
      printf("%s\n", c->name);
    return 0;
  }

  if (argc > 1 && strcmp(argv[1], "--list-threads") == 0) {
    for (c = cases; c->name != NULL; c++)
      if (c->flags & CASE_THREADS)
        printf("%s\n", c->name);
    return 0;
  }

  if (argc > 1) {
    for (c = cases; c->name != NULL; c++)
      if (strcmp(c->name, argv[1]) == 0)
        return harness_run_one(c);
    fprintf(stderr, "unknown case: %s (try --list)\n", argv[1]);
    return 2;
  }

  failed = 0;
  for (c = cases; c->name != NULL; c++)
    failed |= harness_run_isolated(c);
  return failed;
}

#endif  /* UVPATCH_HARNESS_H_ */
