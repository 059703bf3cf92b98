/* Copyright the uvpatch contributors. MIT licence, as libuv.
 *
 * Sorting and quantiles of samples, shared by the regression and the
 * benchmark programs. Standard C only.
 */

#ifndef UVPATCH_STATS_H_
#define UVPATCH_STATS_H_

#include <stdint.h>
#include <stdlib.h>

static int compare_u64(const void* a, const void* b) {
  uint64_t x;
  uint64_t y;

  x = *(const uint64_t*) a;
  y = *(const uint64_t*) b;
  return (x > y) - (x < y);
}


static int compare_double(const void* a, const void* b) {
  double x;
  double y;

  x = *(const double*) a;
  y = *(const double*) b;
  return (x > y) - (x < y);
}


static void sort_u64(uint64_t* v, size_t n) {
  qsort(v, n, sizeof(*v), compare_u64);
}


static void sort_double(double* v, size_t n) {
  qsort(v, n, sizeof(*v), compare_double);
}


/* The q-quantile (0 <= q <= 1) of n sorted samples, the element nearest to
 * q * (n - 1); 0 when there is none.
 */
static uint64_t quantile_u64(const uint64_t* sorted, size_t n, double q) {
  if (n == 0)
    return 0;
  return sorted[(size_t) (q * (double) (n - 1) + 0.5)];
}

#endif  /* UVPATCH_STATS_H_ */
