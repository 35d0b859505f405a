/* The saxpy lab on the host: out = a*x + y, a serial baseline (100) and OpenMP + SIMD (101);
 * and C = A + B, row-major, the serial baseline (100). */
#include "cpu.h"

/* Below this many elements the fork/join of a parallel region costs more than the loop. */
#define SAXPY_PARALLEL_MIN_ELEMENTS ((size_t)32768)

/* The "parallel:" modifier matters: since OpenMP 5.0 a bare if() also applies to simd and
 * would turn vectorization off for small n. The clause names the function parameter n. */
#ifdef _OPENMP
#define PRAGMA_OMP_PARALLEL_FOR_SIMD_IF_LARGE_N \
  _Pragma("omp parallel for simd schedule(static) if(parallel: n >= SAXPY_PARALLEL_MIN_ELEMENTS)")
#else
#define PRAGMA_OMP_PARALLEL_FOR_SIMD_IF_LARGE_N
#endif

/* out is deliberately not restrict: callers may pass out == x or out == y, which is safe
 * because every element is read before it is written, but restrict would be a lie. */
#define DEFINE_SAXPY(type, suffix)                                                                 \
  static void saxpy_serial_##suffix(size_t n, type a, const type *x, const type *y, type *out) {   \
    for (size_t i = 0; i < n; ++i) out[i] = a * x[i] + y[i];                                       \
  }                                                                                                \
                                                                                                   \
  static void saxpy_omp_simd_##suffix(size_t n, type a, const type *x, const type *y, type *out) { \
    PRAGMA_OMP_PARALLEL_FOR_SIMD_IF_LARGE_N                                                        \
    for (size_t i = 0; i < n; ++i) out[i] = a * x[i] + y[i];                                       \
  }

DEFINE_SAXPY(float, f32)
DEFINE_SAXPY(double, f64)

int glcpu_saxpy(int variant, int dtype, size_t n, double a, const void *x, const void *y,
                void *out) {
  if (variant != 100 && variant != 101) return -1;
  const int parallel = (variant == 101);
  switch (dtype) {
    case GLC_F32:
      if (parallel)
        saxpy_omp_simd_f32(n, (float)a, x, y, out);
      else
        saxpy_serial_f32(n, (float)a, x, y, out);
      return 0;
    case GLC_F64:
      if (parallel)
        saxpy_omp_simd_f64(n, a, x, y, out);
      else
        saxpy_serial_f64(n, a, x, y, out);
      return 0;
    default:
      return -1;
  }
}

#define DEFINE_MATADD_SERIAL(type, suffix)                                                   \
  static void matadd_serial_##suffix(size_t rows, size_t cols, const type *a, const type *b, \
                                     type *c) {                                              \
    for (size_t row = 0; row < rows; ++row) {                                                \
      const size_t row_start = row * cols;                                                   \
      for (size_t col = 0; col < cols; ++col)                                                \
        c[row_start + col] = a[row_start + col] + b[row_start + col];                        \
    }                                                                                        \
  }

DEFINE_MATADD_SERIAL(float, f32)
DEFINE_MATADD_SERIAL(double, f64)

int glcpu_matadd(int variant, int dtype, size_t rows, size_t cols, const void *a, const void *b,
                 void *c) {
  if (variant != 100) return -1;
  switch (dtype) {
    case GLC_F32:
      matadd_serial_f32(rows, cols, a, b, c);
      return 0;
    case GLC_F64:
      matadd_serial_f64(rows, cols, a, b, c);
      return 0;
    default:
      return -1;
  }
}
