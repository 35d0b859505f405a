/* The scan lab's CPU variants: serial (100) and OpenMP two-pass (101) scans, and serial
 * compaction (100). Plain C; dtypes and modes are cuda/scan/scan.h's codes. Each returns 0, or
 * -1 for an id, op or dtype it does not know. */
#ifndef GL_SCAN_CPU_H
#define GL_SCAN_CPU_H

#include <stddef.h>

/* y = the scan of n elements of x with op (glc_scan_op), inclusive or exclusive; y's type is
 * x's, except int32 sums (int64). */
int glcpu_scan(int variant, int op, int inclusive, int dtype, size_t n, const void *x, void *y);

/* out = the elements of x where mask[i] (or, mask NULL, x[i] != 0); *count = how many. */
int glcpu_compact(int variant, int dtype, size_t n, const void *x, const unsigned char *mask,
                  void *out, long long *count);

/* out = the indices where x[i] != 0; *count = how many. */
int glcpu_nonzero(int variant, int dtype, size_t n, const void *x, long long *out,
                  long long *count);

#endif
