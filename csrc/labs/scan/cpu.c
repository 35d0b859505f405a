/* The scan lab's CPU variants (cpu.h). Each (op, dtype) is one pair of functions from one macro,
 * so that the loops see concrete types. max and min propagate NaN as np.maximum.accumulate
 * does: a NaN on either side wins. */
#include "cpu.h"

#include <math.h>
#include <stdint.h>

#include "cuda/scan/scan.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define SUM_APPLY(a, b) ((a) + (b))
#define MAX_APPLY(a, b) (((a) != (a) || (a) > (b)) ? (a) : (b))
#define MIN_APPLY(a, b) (((a) != (a) || (a) < (b)) ? (a) : (b))

/* The most chunks of the two-pass scan (their totals live on the stack). */
#define MAX_CHUNKS 256

static int chunk_count(size_t n) {
#ifdef _OPENMP
  int threads = omp_get_max_threads();
#else
  int threads = 1;
#endif
  if (threads > MAX_CHUNKS) threads = MAX_CHUNKS;
  if ((size_t)threads > n) threads = (int)n;
  return threads < 1 ? 1 : threads;
}

/* Scans [begin, end) of x into y from the prefix `run`. */
#define SCAN_RANGE(APPLY, Acc, x, y, begin, end, run, inclusive) \
  for (size_t i = (begin); i < (end); i++) {                     \
    const Acc v_ = (Acc)(x)[i];                                  \
    if (inclusive) {                                             \
      (run) = APPLY((run), v_);                                  \
      (y)[i] = (run);                                            \
    } else {                                                     \
      (y)[i] = (run);                                            \
      (run) = APPLY((run), v_);                                  \
    }                                                            \
  }

#define DEFINE_SCANS(suffix, In, Acc, APPLY, IDENTITY)                                         \
  static void serial_##suffix(size_t n, const In *x, Acc *y, int inclusive) {                  \
    Acc run = (IDENTITY);                                                                      \
    SCAN_RANGE(APPLY, Acc, x, y, 0, n, run, inclusive)                                         \
  }                                                                                            \
  /* Pass 1: each thread's chunk total; a serial scan of the totals; pass 2: each thread scans \
   * its chunk from its prefix. The chunks follow the thread count, so results repeat on one   \
   * machine. */                                                                               \
  static void two_pass_##suffix(size_t n, const In *x, Acc *y, int inclusive) {                \
    Acc prefix[MAX_CHUNKS + 1];                                                                \
    const int chunks = chunk_count(n);                                                         \
    const size_t per = (n + (size_t)chunks - 1) / (size_t)chunks;                              \
    _Pragma("omp parallel for num_threads(chunks)") for (int c = 0; c < chunks; c++) {         \
      const size_t begin = (size_t)c * per, end = begin + per < n ? begin + per : n;           \
      Acc t = (IDENTITY);                                                                      \
      for (size_t i = begin; i < end; i++) t = APPLY(t, (Acc)x[i]);                            \
      prefix[c + 1] = t;                                                                       \
    }                                                                                          \
    prefix[0] = (IDENTITY);                                                                    \
    for (int c = 1; c <= chunks; c++) prefix[c] = APPLY(prefix[c - 1], prefix[c]);             \
    _Pragma("omp parallel for num_threads(chunks)") for (int c = 0; c < chunks; c++) {         \
      const size_t begin = (size_t)c * per, end = begin + per < n ? begin + per : n;           \
      Acc run = prefix[c];                                                                     \
      SCAN_RANGE(APPLY, Acc, x, y, begin, end, run, inclusive)                                 \
    }                                                                                          \
  }

DEFINE_SCANS(sum_f32, float, float, SUM_APPLY, 0.0f)
DEFINE_SCANS(sum_f64, double, double, SUM_APPLY, 0.0)
DEFINE_SCANS(sum_i32, int32_t, int64_t, SUM_APPLY, 0)
DEFINE_SCANS(sum_i64, int64_t, int64_t, SUM_APPLY, 0)
DEFINE_SCANS(max_f32, float, float, MAX_APPLY, -INFINITY)
DEFINE_SCANS(max_f64, double, double, MAX_APPLY, -INFINITY)
DEFINE_SCANS(max_i32, int32_t, int32_t, MAX_APPLY, INT32_MIN)
DEFINE_SCANS(max_i64, int64_t, int64_t, MAX_APPLY, INT64_MIN)
DEFINE_SCANS(min_f32, float, float, MIN_APPLY, INFINITY)
DEFINE_SCANS(min_f64, double, double, MIN_APPLY, INFINITY)
DEFINE_SCANS(min_i32, int32_t, int32_t, MIN_APPLY, INT32_MAX)
DEFINE_SCANS(min_i64, int64_t, int64_t, MIN_APPLY, INT64_MAX)

#define CASE_SCAN(op_code, dtype_code, suffix) \
  case (op_code)*4 + (dtype_code):             \
    if (two_pass)                              \
      two_pass_##suffix(n, x, y, inclusive);   \
    else                                       \
      serial_##suffix(n, x, y, inclusive);     \
    return 0;

int glcpu_scan(int variant, int op, int inclusive, int dtype, size_t n, const void *x, void *y) {
  if (variant != 100 && variant != 101) return -1;
  const int two_pass = variant == 101;
  if (dtype < 0 || dtype > 3) return -1;
  switch (op * 4 + dtype) {
    CASE_SCAN(GLC_SCAN_SUM, GLC_F32, sum_f32)
    CASE_SCAN(GLC_SCAN_SUM, GLC_F64, sum_f64)
    CASE_SCAN(GLC_SCAN_SUM, GLC_I32, sum_i32)
    CASE_SCAN(GLC_SCAN_SUM, GLC_I64, sum_i64)
    CASE_SCAN(GLC_SCAN_MAX, GLC_F32, max_f32)
    CASE_SCAN(GLC_SCAN_MAX, GLC_F64, max_f64)
    CASE_SCAN(GLC_SCAN_MAX, GLC_I32, max_i32)
    CASE_SCAN(GLC_SCAN_MAX, GLC_I64, max_i64)
    CASE_SCAN(GLC_SCAN_MIN, GLC_F32, min_f32)
    CASE_SCAN(GLC_SCAN_MIN, GLC_F64, min_f64)
    CASE_SCAN(GLC_SCAN_MIN, GLC_I32, min_i32)
    CASE_SCAN(GLC_SCAN_MIN, GLC_I64, min_i64)
    default:
      return -1;
  }
}

/* Keeps x[i] (or i) where the flag is set, in order. */
#define SELECT_LOOP(T)                                      \
  do {                                                      \
    const T *xs = x;                                        \
    long long kept = 0;                                     \
    for (size_t i = 0; i < n; i++) {                        \
      const int keep = mask ? mask[i] != 0 : xs[i] != (T)0; \
      if (!keep) continue;                                  \
      if (indices)                                          \
        indices[kept++] = (long long)i;                     \
      else                                                  \
        ((T *)out)[kept++] = xs[i];                         \
    }                                                       \
    *count = kept;                                          \
  } while (0)

static int select_serial(int dtype, size_t n, const void *x, const unsigned char *mask, void *out,
                         long long *indices, long long *count) {
  switch (dtype) {
    case GLC_F32:
      SELECT_LOOP(float);
      return 0;
    case GLC_F64:
      SELECT_LOOP(double);
      return 0;
    case GLC_I32:
      SELECT_LOOP(int32_t);
      return 0;
    case GLC_I64:
      SELECT_LOOP(int64_t);
      return 0;
    default:
      return -1;
  }
}

int glcpu_compact(int variant, int dtype, size_t n, const void *x, const unsigned char *mask,
                  void *out, long long *count) {
  if (variant != 100) return -1;
  return select_serial(dtype, n, x, mask, out, NULL, count);
}

int glcpu_nonzero(int variant, int dtype, size_t n, const void *x, long long *out,
                  long long *count) {
  if (variant != 100) return -1;
  return select_serial(dtype, n, x, NULL, NULL, out, count);
}
