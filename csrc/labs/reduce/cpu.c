/* reduce, dot and norm2 on the host: the CPU rungs of the reduce ladder (100 serial, 101
 * pairwise, 102 Kahan, 103 OpenMP + SIMD) and the CPU path of dot and norm2.
 *
 * Sums of floats accumulate in their own type, as a plain loop does, so that the ladder shows
 * what pairwise and compensated summation buy. int32 sums accumulate in int64, as NumPy's do.
 * min and max propagate NaN: a NaN anywhere is the result. The OpenMP variants give each thread
 * a fixed chunk and combine the threads' partials in thread order, so they are bit-identical
 * from run to run at a given thread count. */
#include <math.h>
#include <string.h>

#include "cpu.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* Below this many elements the fork/join of a parallel region costs more than the loop. */
#define REDUCE_PARALLEL_MIN_ELEMENTS ((size_t)32768)
#define MAX_THREADS 1024

#define PRAGMA(text) _Pragma(#text)
#define MIN_NAN(a, b) (((a) < (b) || (a) != (a)) ? (a) : (b))
#define MAX_NAN(a, b) (((a) > (b) || (a) != (a)) ? (a) : (b))

/* Runs body(first, count, slot) over contiguous chunks, one per thread (or one chunk when n is
 * small or OpenMP is off). Returns the number of chunks. */
#ifdef _OPENMP
#define FOR_EACH_CHUNK(n, chunks, BODY)                                                      \
  do {                                                                                       \
    int threads_ = (n) >= REDUCE_PARALLEL_MIN_ELEMENTS ? omp_get_max_threads() : 1;          \
    if (threads_ > MAX_THREADS) threads_ = MAX_THREADS;                                      \
    (chunks) = threads_;                                                                     \
    _Pragma("omp parallel for schedule(static) num_threads(threads_)") for (int slot = 0;    \
                                                                            slot < threads_; \
                                                                            ++slot) {        \
      size_t first = (n) * (size_t)slot / (size_t)threads_;                                  \
      size_t count = (n) * (size_t)(slot + 1) / (size_t)threads_ - first;                    \
      BODY;                                                                                  \
    }                                                                                        \
  } while (0)
#else
#define FOR_EACH_CHUNK(n, chunks, BODY) \
  do {                                  \
    (chunks) = 1;                       \
    int slot = 0;                       \
    size_t first = 0, count = (n);      \
    BODY;                               \
  } while (0)
#endif

/* ---- sums ---- */

#define DEFINE_SUMS(type, acc_t, suffix)                                                       \
  static acc_t sum_serial_##suffix(const type *x, size_t n) {                                  \
    acc_t s = 0;                                                                               \
    for (size_t i = 0; i < n; ++i) s += x[i];                                                  \
    return s;                                                                                  \
  }                                                                                            \
                                                                                               \
  /* NumPy's scheme: eight running sums over blocks of up to 128, halves above that. The error \
   * grows with log2(n) instead of n. */                                                       \
  static acc_t sum_pairwise_##suffix(const type *x, size_t n) {                                \
    if (n < 8) return sum_serial_##suffix(x, n);                                               \
    if (n <= 128) {                                                                            \
      acc_t r[8];                                                                              \
      for (int k = 0; k < 8; ++k) r[k] = x[k];                                                 \
      size_t i = 8;                                                                            \
      for (; i + 8 <= n; i += 8)                                                               \
        for (int k = 0; k < 8; ++k) r[k] += x[i + k];                                          \
      acc_t s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));             \
      for (; i < n; ++i) s += x[i];                                                            \
      return s;                                                                                \
    }                                                                                          \
    size_t half = n / 2;                                                                       \
    half -= half % 8;                                                                          \
    return sum_pairwise_##suffix(x, half) + sum_pairwise_##suffix(x + half, n - half);         \
  }                                                                                            \
                                                                                               \
  static acc_t sum_simd_##suffix(const type *x, size_t n) {                                    \
    acc_t s = 0;                                                                               \
    _Pragma("omp simd reduction(+ : s)") for (size_t i = 0; i < n; ++i) s += x[i];             \
    return s;                                                                                  \
  }                                                                                            \
                                                                                               \
  static acc_t sum_parallel_##suffix(const type *x, size_t n) {                                \
    acc_t partial[MAX_THREADS];                                                                \
    int chunks;                                                                                \
    FOR_EACH_CHUNK(n, chunks, partial[slot] = sum_simd_##suffix(x + first, count));            \
    acc_t s = 0;                                                                               \
    for (int k = 0; k < chunks; ++k) s += partial[k];                                          \
    return s;                                                                                  \
  }

DEFINE_SUMS(float, float, f32)
DEFINE_SUMS(double, double, f64)
DEFINE_SUMS(int, long long, i32)

/* Kahan's compensated sum: c carries the low-order bits each addition loses. Correct only
 * without -ffast-math, which would simplify (t - s) - y to zero; setup.py never passes it. */
#define DEFINE_KAHAN(type, suffix)                          \
  static type sum_kahan_##suffix(const type *x, size_t n) { \
    type s = 0, c = 0;                                      \
    for (size_t i = 0; i < n; ++i) {                        \
      type y = x[i] - c;                                    \
      type t = s + y;                                       \
      c = (t - s) - y;                                      \
      s = t;                                                \
    }                                                       \
    return s;                                               \
  }

DEFINE_KAHAN(float, f32)
DEFINE_KAHAN(double, f64)

/* ---- min and max ---- */

#define DEFINE_EXTREMES(type, suffix, NAME, PICK)                                                 \
  static type NAME##_serial_##suffix(const type *x, size_t n) {                                   \
    type m = x[0];                                                                                \
    for (size_t i = 1; i < n; ++i) m = PICK(m, x[i]);                                             \
    return m;                                                                                     \
  }                                                                                               \
                                                                                                  \
  static type NAME##_pairwise_##suffix(const type *x, size_t n) {                                 \
    if (n <= 128) return NAME##_serial_##suffix(x, n);                                            \
    size_t half = n / 2;                                                                          \
    type a = NAME##_pairwise_##suffix(x, half), b = NAME##_pairwise_##suffix(x + half, n - half); \
    return PICK(a, b);                                                                            \
  }                                                                                               \
                                                                                                  \
  /* The SIMD lanes' combine ignores NaN; a flag records whether one was seen, and only then      \
   * is it looked for. */                                                                         \
  static type NAME##_simd_##suffix(const type *x, size_t n) {                                     \
    type m = x[0];                                                                                \
    int nan = 0;                                                                                  \
    PRAGMA(omp simd reduction(NAME : m) reduction(| : nan)) for (size_t i = 0; i < n; ++i) {      \
      m = PICK(x[i], m);                                                                          \
      nan |= x[i] != x[i];                                                                        \
    }                                                                                             \
    for (size_t i = 0; nan && i < n; ++i)                                                         \
      if (x[i] != x[i]) return x[i];                                                              \
    return m;                                                                                     \
  }                                                                                               \
                                                                                                  \
  static type NAME##_parallel_##suffix(const type *x, size_t n) {                                 \
    type partial[MAX_THREADS];                                                                    \
    int used[MAX_THREADS] = {0};                                                                  \
    int chunks;                                                                                   \
    FOR_EACH_CHUNK(                                                                               \
        n, chunks, if (count) {                                                                   \
          partial[slot] = NAME##_simd_##suffix(x + first, count);                                 \
          used[slot] = 1;                                                                         \
        });                                                                                       \
    type m = x[0];                                                                                \
    for (int k = 0; k < chunks; ++k)                                                              \
      if (used[k]) m = PICK(m, partial[k]);                                                       \
    return m;                                                                                     \
  }

DEFINE_EXTREMES(float, f32, min, MIN_NAN)
DEFINE_EXTREMES(double, f64, min, MIN_NAN)
DEFINE_EXTREMES(int, i32, min, MIN_NAN)
DEFINE_EXTREMES(float, f32, max, MAX_NAN)
DEFINE_EXTREMES(double, f64, max, MAX_NAN)
DEFINE_EXTREMES(int, i32, max, MAX_NAN)

/* ---- dispatch ---- */

#define REDUCE_CASE(type, acc_t, suffix)                         \
  {                                                              \
    const type *xt = x;                                          \
    if (op == GLC_REDUCE_SUM) {                                  \
      acc_t s = variant == 100   ? sum_serial_##suffix(xt, n)    \
                : variant == 101 ? sum_pairwise_##suffix(xt, n)  \
                                 : sum_parallel_##suffix(xt, n); \
      memcpy(result, &s, sizeof s);                              \
      return 0;                                                  \
    }                                                            \
    type m;                                                      \
    if (op == GLC_REDUCE_MIN)                                    \
      m = variant == 100   ? min_serial_##suffix(xt, n)          \
          : variant == 101 ? min_pairwise_##suffix(xt, n)        \
                           : min_parallel_##suffix(xt, n);       \
    else                                                         \
      m = variant == 100   ? max_serial_##suffix(xt, n)          \
          : variant == 101 ? max_pairwise_##suffix(xt, n)        \
                           : max_parallel_##suffix(xt, n);       \
    memcpy(result, &m, sizeof m);                                \
    return 0;                                                    \
  }

int glcpu_reduce(int variant, int op, int dtype, size_t n, const void *x, void *result) {
  if (variant < 100 || variant > 103 || op < GLC_REDUCE_SUM || op > GLC_REDUCE_MAX) return -1;
  if (n == 0) {
    if (op != GLC_REDUCE_SUM) return -1;
    memset(result, 0, dtype == GLC_F32 ? 4 : 8);
    return 0;
  }
  if (variant == 102) { /* Kahan: float sums only */
    if (op != GLC_REDUCE_SUM) return -1;
    if (dtype == GLC_F32) {
      float s = sum_kahan_f32(x, n);
      memcpy(result, &s, sizeof s);
      return 0;
    }
    if (dtype == GLC_F64) {
      double s = sum_kahan_f64(x, n);
      memcpy(result, &s, sizeof s);
      return 0;
    }
    return -1;
  }
  switch (dtype) {
    case GLC_F32:
      REDUCE_CASE(float, float, f32)
    case GLC_F64:
      REDUCE_CASE(double, double, f64)
    case GLC_I32:
      REDUCE_CASE(int, long long, i32)
    default:
      return -1;
  }
}

/* ---- dot and norm2: float64 accumulation (float32 products are exact in it) ---- */

#define DEFINE_DOT(type, suffix)                                                                \
  static double dot_chunk_##suffix(const type *x, const type *y, size_t n) {                    \
    double s = 0;                                                                               \
    _Pragma("omp simd reduction(+ : s)") for (size_t i = 0; i < n; ++i) s +=                    \
        (double)x[i] * (double)y[i];                                                            \
    return s;                                                                                   \
  }                                                                                             \
  static double dot_##suffix(const type *x, const type *y, size_t n) {                          \
    double partial[MAX_THREADS];                                                                \
    int chunks;                                                                                 \
    FOR_EACH_CHUNK(n, chunks, partial[slot] = dot_chunk_##suffix(x + first, y + first, count)); \
    double s = 0;                                                                               \
    for (int k = 0; k < chunks; ++k) s += partial[k];                                           \
    return s;                                                                                   \
  }

DEFINE_DOT(float, f32)
DEFINE_DOT(double, f64)

static int store_dot(int dtype, double value, void *result) {
  if (dtype == GLC_F32) {
    float f = (float)value;
    memcpy(result, &f, sizeof f);
  } else {
    memcpy(result, &value, sizeof value);
  }
  return 0;
}

int glcpu_dot(int dtype, size_t n, const void *x, const void *y, void *result) {
  switch (dtype) {
    case GLC_F32:
      return store_dot(dtype, dot_f32(x, y, n), result);
    case GLC_F64:
      return store_dot(dtype, dot_f64(x, y, n), result);
    default:
      return -1;
  }
}

int glcpu_norm2(int dtype, size_t n, const void *x, void *result) {
  switch (dtype) {
    case GLC_F32:
      return store_dot(dtype, sqrt(dot_f32(x, x, n)), result);
    case GLC_F64:
      return store_dot(dtype, sqrt(dot_f64(x, x, n)), result);
    default:
      return -1;
  }
}
