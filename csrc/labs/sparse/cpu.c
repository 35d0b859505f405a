/* The sparse lab's CPU SpMV (cpu.h): each row's products summed in the order the row stores
 * them, serially or with the rows shared among OpenMP threads (the same sums: each row is one
 * thread's). */
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

int glcpu_spmv(int variant, const glc_csr *a, const void *x, void *y) {
  if (variant != GLC_SPMV_CPU_SERIAL && variant != GLC_SPMV_CPU_OPENMP) return -1;
  if ((a->dtype != GLC_F32 && a->dtype != GLC_F64) ||
      (a->index_dtype != GLC_I32 && a->index_dtype != GLC_I64))
    return -1;
  const int parallel = variant == GLC_SPMV_CPU_OPENMP;
  const int i64 = a->index_dtype == GLC_I64, f64 = a->dtype == GLC_F64;
  if (i64)
    f64 ? spmv_i64_f64(a, x, y, parallel) : spmv_i64_f32(a, x, y, parallel);
  else
    f64 ? spmv_i32_f64(a, x, y, parallel) : spmv_i32_f32(a, x, y, parallel);
  return 0;
}
