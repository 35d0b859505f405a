/* The linalg lab's CPU variants (cpu.h). Each ladder is written once for a type T by a macro and
 * expanded for float and double, so that the loops see concrete types.
 *
 * Matvec, S2's ladder (task 1). The same loop at -O0, -O1, -O2 and -O3 comes from GCC's
 * function-level optimize attribute: one function per level, compiled as if the whole file had that
 * flag (objdump -d shows four different bodies). The file itself is built at -O3 without
 * -ffast-math, so no level reassociates the sum: the four give the same sums, in the same order. S2
 * measured its unrolled loops without optimization; so are they here (-O0), and their remainder
 * loop starts where the unrolled one stopped (S2's left `j` uninitialized). */
#include "cpu.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/core/gpulab_core.h"
#include "cuda/linalg/linalg.h"

#define AT_LEVEL(level) __attribute__((optimize(level), noinline))

/* ---- matvec ---- */

/* The contiguous loop, as function matvec_NAME_S, with ATTR (empty, or an optimize level). */
#define DEFINE_MATVEC_LOOP(T, S, NAME, ATTR)                                               \
  ATTR static void matvec_##NAME##_##S(size_t m, size_t n, const T *a, const T *x, T *y) { \
    for (size_t i = 0; i < m; ++i) {                                                       \
      const T *row = a + i * n;                                                            \
      T sum = 0;                                                                           \
      for (size_t j = 0; j < n; ++j) sum += row[j] * x[j];                                 \
      y[i] = sum;                                                                          \
    }                                                                                      \
  }

#define NO_ATTRIBUTE

#define DEFINE_MATVEC(T, S)                                                                        \
  /* 100: S2's T** rows, a pointer per row over one block (generateRandomMatrixContiguous): each   \
   * row is reached through its pointer, a load before the row's first element. */                 \
  static void matvec_row_pointers_##S(size_t m, size_t n, const T *a, const T *x, T *y) {          \
    const T **rows = malloc((m ? m : 1) * sizeof *rows);                                           \
    for (size_t i = 0; i < m; ++i) rows[i] = a + i * n;                                            \
    for (size_t i = 0; i < m; ++i) {                                                               \
      T sum = 0;                                                                                   \
      for (size_t j = 0; j < n; ++j) sum += rows[i][j] * x[j];                                     \
      y[i] = sum;                                                                                  \
    }                                                                                              \
    free(rows);                                                                                    \
  }                                                                                                \
  /* 101: the flat array, row i at a + i * n, at the file's -O3; 102-105: at -O0 ... -O3. */       \
  DEFINE_MATVEC_LOOP(T, S, contiguous, NO_ATTRIBUTE)                                               \
  DEFINE_MATVEC_LOOP(T, S, O0, AT_LEVEL("O0"))                                                     \
  DEFINE_MATVEC_LOOP(T, S, O1, AT_LEVEL("O1"))                                                     \
  DEFINE_MATVEC_LOOP(T, S, O2, AT_LEVEL("O2"))                                                     \
  DEFINE_MATVEC_LOOP(T, S, O3, AT_LEVEL("O3"))                                                     \
  /* 106: unrolled by 2 (at -O0, as S2 measured it); the remainder from where it stopped. */       \
  AT_LEVEL("O0")                                                                                   \
  static void matvec_unroll2_##S(size_t m, size_t n, const T *a, const T *x, T *y) {               \
    for (size_t i = 0; i < m; ++i) {                                                               \
      const T *row = a + i * n;                                                                    \
      T sum = 0;                                                                                   \
      size_t j = 0;                                                                                \
      for (; j + 1 < n; j += 2) sum += row[j] * x[j] + row[j + 1] * x[j + 1];                      \
      for (; j < n; ++j) sum += row[j] * x[j];                                                     \
      y[i] = sum;                                                                                  \
    }                                                                                              \
  }                                                                                                \
  /* 107: unrolled by 4, S2's four products summed before they join the row's sum. */              \
  AT_LEVEL("O0")                                                                                   \
  static void matvec_unroll4_##S(size_t m, size_t n, const T *a, const T *x, T *y) {               \
    for (size_t i = 0; i < m; ++i) {                                                               \
      const T *row = a + i * n;                                                                    \
      T sum = 0;                                                                                   \
      size_t j = 0;                                                                                \
      for (; j + 3 < n; j += 4)                                                                    \
        sum +=                                                                                     \
            row[j] * x[j] + row[j + 1] * x[j + 1] + row[j + 2] * x[j + 2] + row[j + 3] * x[j + 3]; \
      for (; j < n; ++j) sum += row[j] * x[j];                                                     \
      y[i] = sum;                                                                                  \
    }                                                                                              \
  }                                                                                                \
  /* 108: rows over the OpenMP threads, each row's sum over SIMD lanes (a reassociated sum). */    \
  static void matvec_openmp_simd_##S(size_t m, size_t n, const T *a, const T *x, T *y) {           \
    _Pragma("omp parallel for schedule(static) if (m * n > 65536)") for (size_t i = 0; i < m;      \
                                                                         ++i) {                    \
      const T *row = a + i * n;                                                                    \
      T sum = 0;                                                                                   \
      _Pragma("omp simd reduction(+ : sum)") for (size_t j = 0; j < n; ++j) sum += row[j] * x[j];  \
      y[i] = sum;                                                                                  \
    }                                                                                              \
  }                                                                                                \
  /* The ladder in id order, from GLC_MATVEC_CPU_ROW_POINTERS (100). */                            \
  static void (*const matvec_ladder_##S[])(size_t, size_t, const T *, const T *, T *) = {          \
      matvec_row_pointers_##S, matvec_contiguous_##S, matvec_O0_##S,                               \
      matvec_O1_##S,           matvec_O2_##S,         matvec_O3_##S,                               \
      matvec_unroll2_##S,      matvec_unroll4_##S,    matvec_openmp_simd_##S};

DEFINE_MATVEC(float, f32)
DEFINE_MATVEC(double, f64)

int glcpu_matvec(int variant, int dtype, size_t m, size_t n, const void *a, const void *x,
                 void *y) {
  const int k = variant - GLC_MATVEC_CPU_ROW_POINTERS;
  if (k < 0 || k > GLC_MATVEC_CPU_OPENMP_SIMD - GLC_MATVEC_CPU_ROW_POINTERS) return -1;
  if (dtype == GLC_F32)
    matvec_ladder_f32[k](m, n, a, x, y);
  else if (dtype == GLC_F64)
    matvec_ladder_f64[k](m, n, a, x, y);
  else
    return -1;
  return 0;
}

/* ---- matmul (S0, S2 task 2) ---- */

/* The blocked variants' square block: three 64 x 64 tiles of doubles are 96 KiB, within a
 * core's L2. */
#define MATMUL_BLOCK 64

#define MIN_SIZE(a, b) ((a) < (b) ? (a) : (b))

#define DEFINE_MATMUL(T, S)                                                                       \
  /* 100: i-j-k, the textbook loop: B walked down a column, n elements apart at each step. */     \
  static void matmul_ijk_##S(size_t m, size_t n, size_t k, const T *a, const T *b, T *c) {        \
    for (size_t i = 0; i < m; ++i)                                                                \
      for (size_t j = 0; j < n; ++j) {                                                            \
        T sum = 0;                                                                                \
        for (size_t p = 0; p < k; ++p) sum += a[i * k + p] * b[p * n + j];                        \
        c[i * n + j] = sum;                                                                       \
      }                                                                                           \
  }                                                                                               \
  /* 101: i-k-j: the inner loop walks a row of B and a row of C, unit stride (vectorizable). */   \
  static void matmul_ikj_##S(size_t m, size_t n, size_t k, const T *a, const T *b, T *c) {        \
    memset(c, 0, m *n * sizeof(T));                                                               \
    for (size_t i = 0; i < m; ++i)                                                                \
      for (size_t p = 0; p < k; ++p) {                                                            \
        const T aip = a[i * k + p];                                                               \
        for (size_t j = 0; j < n; ++j) c[i * n + j] += aip * b[p * n + j];                        \
      }                                                                                           \
  }                                                                                               \
  /* One block of rows [i0, i1) of C: every (p, j) block of the k and n ranges, i-k-j inside.     \
   * C is zeroed once, before any block adds to it: S0's blocked version added into C again at    \
   * each pass without clearing it (over-accumulation). */                                        \
  static void matmul_rows_blocked_##S(size_t i0, size_t i1, size_t n, size_t k, const T *a,       \
                                      const T *b, T *c) {                                         \
    for (size_t i = i0; i < i1; ++i) memset(c + i * n, 0, n * sizeof(T));                         \
    for (size_t p0 = 0; p0 < k; p0 += MATMUL_BLOCK)                                               \
      for (size_t j0 = 0; j0 < n; j0 += MATMUL_BLOCK) {                                           \
        const size_t p1 = MIN_SIZE(p0 + MATMUL_BLOCK, k), j1 = MIN_SIZE(j0 + MATMUL_BLOCK, n);    \
        for (size_t i = i0; i < i1; ++i)                                                          \
          for (size_t p = p0; p < p1; ++p) {                                                      \
            const T aip = a[i * k + p];                                                           \
            T *ci = c + i * n;                                                                    \
            const T *bp = b + p * n;                                                              \
            _Pragma("omp simd") for (size_t j = j0; j < j1; ++j) ci[j] += aip * bp[j];            \
          }                                                                                       \
      }                                                                                           \
  }                                                                                               \
  /* 102: blocked, one thread. */                                                                 \
  static void matmul_blocked_##S(size_t m, size_t n, size_t k, const T *a, const T *b, T *c) {    \
    for (size_t i0 = 0; i0 < m; i0 += MATMUL_BLOCK)                                               \
      matmul_rows_blocked_##S(i0, MIN_SIZE(i0 + MATMUL_BLOCK, m), n, k, a, b, c);                 \
  }                                                                                               \
  /* 103: the blocks of rows over the OpenMP threads (each writes only its own rows of C). */     \
  static void matmul_blocked_openmp_##S(size_t m, size_t n, size_t k, const T *a, const T *b,     \
                                        T *c) {                                                   \
    const size_t blocks = (m + MATMUL_BLOCK - 1) / MATMUL_BLOCK;                                  \
    _Pragma("omp parallel for schedule(dynamic) if (m * n * k > 262144)") for (size_t ib = 0;     \
                                                                               ib < blocks;       \
                                                                               ++ib) {            \
      const size_t i0 = ib * MATMUL_BLOCK;                                                        \
      matmul_rows_blocked_##S(i0, MIN_SIZE(i0 + MATMUL_BLOCK, m), n, k, a, b, c);                 \
    }                                                                                             \
  }                                                                                               \
  /* The ladder in id order, from GLC_MATMUL_CPU_IJK (100). */                                    \
  static void (*const matmul_ladder_##S[])(size_t, size_t, size_t, const T *, const T *, T *) = { \
      matmul_ijk_##S, matmul_ikj_##S, matmul_blocked_##S, matmul_blocked_openmp_##S};

DEFINE_MATMUL(float, f32)
DEFINE_MATMUL(double, f64)

int glcpu_matmul(int variant, int dtype, size_t m, size_t n, size_t k, const void *a, const void *b,
                 void *c) {
  const int rung = variant - GLC_MATMUL_CPU_IJK;
  if (rung < 0 || rung > GLC_MATMUL_CPU_BLOCKED_OPENMP - GLC_MATMUL_CPU_IJK) return -1;
  if (dtype == GLC_F32)
    matmul_ladder_f32[rung](m, n, k, a, b, c);
  else if (dtype == GLC_F64)
    matmul_ladder_f64[rung](m, n, k, a, b, c);
  else
    return -1;
  return 0;
}

/* ---- matmul of float16 and bfloat16 (the tensor-core rungs' CPU peer) ---- */

/* bfloat16 is the top half of a float32: widening is exact, narrowing rounds to nearest even
 * (NaN stays a quiet NaN). float16 goes through GCC's _Float16, whose conversions round to
 * nearest even too, subnormals included. */
static float bf16_to_float(uint16_t h) {
  const uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static uint16_t float_to_bf16(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((bits >> 16) | 0x40u);
  return (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

static void widen(int dtype, size_t count, const void *in, float *out) {
  if (dtype == GLC_F16) {
    const _Float16 *h = in;
    for (size_t i = 0; i < count; ++i) out[i] = (float)h[i];
  } else {
    const uint16_t *h = in;
    for (size_t i = 0; i < count; ++i) out[i] = bf16_to_float(h[i]);
  }
}

static void narrow(int dtype, size_t count, const float *in, void *out) {
  if (dtype == GLC_F16) {
    _Float16 *h = out;
    for (size_t i = 0; i < count; ++i) h[i] = (_Float16)in[i];
  } else {
    uint16_t *h = out;
    for (size_t i = 0; i < count; ++i) h[i] = float_to_bf16(in[i]);
  }
}

int glcpu_hgemm(int variant, int dtype, int out_dtype, size_t m, size_t n, size_t k, const void *a,
                const void *b, void *c) {
  if (variant != GLC_MATMUL_CPU_BLOCKED_OPENMP || (dtype != GLC_F16 && dtype != GLC_BF16) ||
      (out_dtype != dtype && out_dtype != GLC_F32))
    return -1;
  /* A and B widened to float32 (exactly), the float32 loop (FP32 accumulation, as the tensor
   * cores), C rounded once to the output's dtype */
  float *fa = malloc((m * k + 1) * sizeof *fa);
  float *fb = malloc((k * n + 1) * sizeof *fb);
  float *fc = out_dtype == GLC_F32 ? c : malloc((m * n + 1) * sizeof *fc);
  int rc = fa && fb && fc ? 0 : GLCPU_NO_MEMORY;
  if (!rc) {
    widen(dtype, m * k, a, fa);
    widen(dtype, k * n, b, fb);
    matmul_blocked_openmp_f32(m, n, k, fa, fb, fc);
    if (out_dtype != GLC_F32) narrow(dtype, m * n, fc, c);
  }
  if (fc != c) free(fc);
  free(fb);
  free(fa);
  return rc;
}

/* ---- transpose ---- */

/* 100: 32 x 32 blocks, so that the block of the output being written and the block of the input
 * being read both stay in L1 while a block is turned. */
#define TRANSPOSE_BLOCK 32

#define DEFINE_TRANSPOSE(W)                                                         \
  static void transpose_blocked_##W(size_t rows, size_t cols, const W *a, W *out) { \
    for (size_t r0 = 0; r0 < rows; r0 += TRANSPOSE_BLOCK)                           \
      for (size_t c0 = 0; c0 < cols; c0 += TRANSPOSE_BLOCK) {                       \
        const size_t r1 = MIN_SIZE(r0 + TRANSPOSE_BLOCK, rows);                     \
        const size_t c1 = MIN_SIZE(c0 + TRANSPOSE_BLOCK, cols);                     \
        for (size_t c = c0; c < c1; ++c)                                            \
          for (size_t r = r0; r < r1; ++r) out[c * rows + r] = a[r * cols + c];     \
      }                                                                             \
  }

DEFINE_TRANSPOSE(uint32_t)
DEFINE_TRANSPOSE(uint64_t)

int glcpu_transpose(int variant, int element_bytes, size_t rows, size_t cols, const void *a,
                    void *out) {
  if (variant != GLC_TRANSPOSE_CPU_BLOCKED) return -1;
  if (element_bytes == 4)
    transpose_blocked_uint32_t(rows, cols, a, out);
  else if (element_bytes == 8)
    transpose_blocked_uint64_t(rows, cols, a, out);
  else
    return -1;
  return 0;
}
