/* The sparse lab's CPU SpMV and SpMM (cpu.h): each row's products summed in the order the row
 * stores them, serially or with the rows shared among OpenMP threads (the same sums: each row is
 * one thread's). */
#include "cpu.h"

#include <math.h>
#include <stdlib.h>

#include "cuda/core/interrupt.h"

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

/* CG_SOLVE(NAME, I, T): conjugate gradients as variant 0 does them (glc_cg, cg.cu), serially:
 * vectors in T, every dot accumulated in double, the scalars in double; convergence tested after
 * every iteration, ||r|| recorded at iteration 0, every check_every-th and the last. scratch holds
 * 4 n (r, p, q, z) and, with Jacobi, n more (dinv) values of T. Returns 0, or GLC_INTERRUPTED
 * (Ctrl-C, looked at once an iteration). */
#define CG_SOLVE(NAME, I, T)                                                                \
  static int NAME(const glc_csr *a, const T *b, const T *x0, T *x, const glc_cg_options *o, \
                  glc_cg_result *res, T *scratch) {                                         \
    const I *indptr = a->indptr, *indices = a->indices;                                     \
    const T *data = a->data;                                                                \
    const long long n = (long long)a->rows;                                                 \
    T *r = scratch, *p = r + n, *q = p + n, *z = o->jacobi ? q + n : r, *dinv = q + 2 * n;  \
    if (o->jacobi)                                                                          \
      for (long long i = 0; i < n; i++) {                                                   \
        T d = 0;                                                                            \
        for (I k = indptr[i]; k < indptr[i + 1]; k++)                                       \
          if ((long long)indices[k] == i) d += data[k];                                     \
        if (d == 0) {                                                                       \
          res->zero_diagonal_row = i;                                                       \
          return 0;                                                                         \
        }                                                                                   \
        dinv[i] = 1 / d;                                                                    \
      }                                                                                     \
    for (long long i = 0; i < n; i++) x[i] = x0 ? x0[i] : 0;                                \
    if (x0) {                                                                               \
      spmv_csr_##NAME(a, x0, r);                                                            \
      for (long long i = 0; i < n; i++) r[i] = b[i] - r[i];                                 \
    } else {                                                                                \
      for (long long i = 0; i < n; i++) r[i] = b[i];                                        \
    }                                                                                       \
    double rz = 0, rr = 0, bb = 0;                                                          \
    for (long long i = 0; i < n; i++) {                                                     \
      if (o->jacobi) z[i] = dinv[i] * r[i];                                                 \
      p[i] = z[i];                                                                          \
      rz += (double)r[i] * (double)z[i];                                                    \
      rr += (double)r[i] * (double)r[i];                                                    \
      bb += (double)b[i] * (double)b[i];                                                    \
    }                                                                                       \
    const double tol = fmax(o->rtol * sqrt(bb), o->atol), tol2 = tol * tol;                 \
    RECORD(res, rr);                                                                        \
    if (rr <= tol2) {                                                                       \
      res->converged = 1;                                                                   \
      return 0;                                                                             \
    }                                                                                       \
    for (long long k = 1; k <= o->maxiter; k++) {                                           \
      const int status = glc_check_interrupt();                                             \
      if (status) return status;                                                            \
      spmv_csr_##NAME(a, p, q);                                                             \
      double pq = 0;                                                                        \
      for (long long i = 0; i < n; i++) pq += (double)p[i] * (double)q[i];                  \
      if (!(pq != 0) || !isfinite(pq)) {                                                    \
        res->breakdown = 1;                                                                 \
        return 0;                                                                           \
      }                                                                                     \
      const T alpha = (T)(rz / pq);                                                         \
      double rz_new = 0;                                                                    \
      rr = 0;                                                                               \
      for (long long i = 0; i < n; i++) {                                                   \
        x[i] += alpha * p[i];                                                               \
        r[i] += -alpha * q[i];                                                              \
        if (o->jacobi) z[i] = dinv[i] * r[i];                                               \
        rz_new += (double)r[i] * (double)z[i];                                              \
        rr += (double)r[i] * (double)r[i];                                                  \
      }                                                                                     \
      const T beta = (T)(rz_new / rz);                                                      \
      rz = rz_new;                                                                          \
      res->iterations = k;                                                                  \
      const int converged = rr <= tol2;                                                     \
      if (converged || k % o->check_every == 0 || k == o->maxiter) RECORD(res, rr);         \
      if (converged) {                                                                      \
        res->converged = 1;                                                                 \
        return 0;                                                                           \
      }                                                                                     \
      for (long long i = 0; i < n; i++) p[i] = z[i] + beta * p[i];                          \
    }                                                                                       \
    return 0;                                                                               \
  }

#define RECORD(res, rr)                                                              \
  do {                                                                               \
    if ((res)->count < (res)->capacity) (res)->residuals[(res)->count++] = sqrt(rr); \
  } while (0)

/* CG's SpMV: the serial CSR loop, named after the solve that calls it. */
#define CG_SPMV(NAME, SPMV, T) \
  static void spmv_csr_##NAME(const glc_csr *a, const T *x, T *y) { SPMV(a, x, y, 0); }

CG_SPMV(cg_i32_f32, spmv_i32_f32, float)
CG_SPMV(cg_i32_f64, spmv_i32_f64, double)
CG_SPMV(cg_i64_f32, spmv_i64_f32, float)
CG_SPMV(cg_i64_f64, spmv_i64_f64, double)
CG_SOLVE(cg_i32_f32, int, float)
CG_SOLVE(cg_i32_f64, int, double)
CG_SOLVE(cg_i64_f32, long long, float)
CG_SOLVE(cg_i64_f64, long long, double)

int glcpu_cg(int variant, const glc_csr *a, const void *b, const void *x0, void *x,
             const glc_cg_options *o, glc_cg_result *res) {
  if (variant != GLC_CG_CPU_SERIAL || !known_types(a) || a->rows != a->cols) return -1;
  res->count = 0;
  res->iterations = 0;
  res->zero_diagonal_row = -1;
  res->converged = res->breakdown = 0;
  for (int i = 0; i < 3; i++) res->phase_ms[i] = 0;
  const size_t n = a->rows, itemsize = a->dtype == GLC_F64 ? 8 : 4;
  if (n == 0) {
    res->converged = 1;
    RECORD(res, 0.0);
    return 0;
  }
  void *scratch = malloc(5 * n * itemsize);
  if (scratch == NULL) return -1;
  const int i64 = a->index_dtype == GLC_I64, f64 = a->dtype == GLC_F64;
  int status;
  if (i64)
    status =
        f64 ? cg_i64_f64(a, b, x0, x, o, res, scratch) : cg_i64_f32(a, b, x0, x, o, res, scratch);
  else
    status =
        f64 ? cg_i32_f64(a, b, x0, x, o, res, scratch) : cg_i32_f32(a, b, x0, x, o, res, scratch);
  free(scratch);
  return status;
}
