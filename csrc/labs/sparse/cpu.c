/* The sparse lab's CPU SpMV and SpMM (cpu.h): each row's products summed in the order the row
 * stores them, serially or with the rows shared among OpenMP threads (the same sums: each row is
 * one thread's). */
#include "cpu.h"

/* SPMV_CSR(NAME, I, T): y = A x for index type I and value type T; parallel: over OpenMP
 * threads (when the matrix is large enough to pay for them). */
#define SPMV_CSR(NAME, I, T)                                                                       \
  static void NAME(const glc_csr *a, const T *x, T *y, int parallel) {                             \
    const I *indptr = a->indptr, *indices = a->indices;                                            \
    const T *data = a->data;                                                                       \
    const long long rows = (long long)a->rows;                                                     \
    _Pragma(                                                                                       \
        "omp parallel for schedule(dynamic, 256) if (parallel && a->nnz > 65536)") for (long long  \
                                                                                            i = 0; \
                                                                                        i < rows;  \
                                                                                        i++) {     \
      T sum = 0;                                                                                   \
      for (I k = indptr[i]; k < indptr[i + 1]; k++) sum += data[k] * x[indices[k]];                \
      y[i] = sum;                                                                                  \
    }                                                                                              \
  }

SPMV_CSR(spmv_i32_f32, int, float)
SPMV_CSR(spmv_i32_f64, int, double)
SPMV_CSR(spmv_i64_f32, long long, float)
SPMV_CSR(spmv_i64_f64, long long, double)

/* SPMM_CSR(NAME, I, T): C = A B; row i of C accumulates a_ie times row indices[e] of B, entry
 * after entry (the inner loop runs along B's and C's rows). */
#define SPMM_CSR(NAME, I, T)                                                                    \
  static void NAME(const glc_csr *a, size_t k, const T *b, T *c, int parallel) {                \
    const I *indptr = a->indptr, *indices = a->indices;                                         \
    const T *data = a->data;                                                                    \
    const long long rows = (long long)a->rows;                                                  \
    _Pragma("omp parallel for schedule(dynamic, 64) if (parallel && a->nnz * k > 65536)") for ( \
        long long i = 0; i < rows; i++) {                                                       \
      T *ci = c + (size_t)i * k;                                                                \
      for (size_t j = 0; j < k; j++) ci[j] = 0;                                                 \
      for (I e = indptr[i]; e < indptr[i + 1]; e++) {                                           \
        const T v = data[e];                                                                    \
        const T *be = b + (size_t)indices[e] * k;                                               \
        for (size_t j = 0; j < k; j++) ci[j] += v * be[j];                                      \
      }                                                                                         \
    }                                                                                           \
  }

SPMM_CSR(spmm_i32_f32, int, float)
SPMM_CSR(spmm_i32_f64, int, double)
SPMM_CSR(spmm_i64_f32, long long, float)
SPMM_CSR(spmm_i64_f64, long long, double)

static int known_types(const glc_csr *a) {
  return (a->dtype == GLC_F32 || a->dtype == GLC_F64) &&
         (a->index_dtype == GLC_I32 || a->index_dtype == GLC_I64);
}

int glcpu_spmm(int variant, const glc_csr *a, size_t k, const void *b, void *c) {
  if ((variant != GLC_SPMM_CPU_SERIAL && variant != GLC_SPMM_CPU_OPENMP) || !known_types(a))
    return -1;
  const int parallel = variant == GLC_SPMM_CPU_OPENMP;
  const int i64 = a->index_dtype == GLC_I64, f64 = a->dtype == GLC_F64;
  if (i64)
    f64 ? spmm_i64_f64(a, k, b, c, parallel) : spmm_i64_f32(a, k, b, c, parallel);
  else
    f64 ? spmm_i32_f64(a, k, b, c, parallel) : spmm_i32_f32(a, k, b, c, parallel);
  return 0;
}

int glcpu_spmv(int variant, const glc_csr *a, const void *x, void *y) {
  if ((variant != GLC_SPMV_CPU_SERIAL && variant != GLC_SPMV_CPU_OPENMP) || !known_types(a))
    return -1;
  const int parallel = variant == GLC_SPMV_CPU_OPENMP;
  const int i64 = a->index_dtype == GLC_I64, f64 = a->dtype == GLC_F64;
  if (i64)
    f64 ? spmv_i64_f64(a, x, y, parallel) : spmv_i64_f32(a, x, y, parallel);
  else
    f64 ? spmv_i32_f64(a, x, y, parallel) : spmv_i32_f32(a, x, y, parallel);
  return 0;
}
