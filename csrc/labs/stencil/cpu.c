/* The stencil lab's CPU variants (cpu.h). The stencil sums each cell's taps in the order of the
 * weights array, skipping zero weights, in the grid's dtype: the serial and OpenMP + SIMD
 * variants give the same bits (the SIMD lanes run along x, each lane one cell's own sum). */
#include "cpu.h"

#include <stdlib.h>
#include <string.h>

#include "cuda/core/interrupt.h"
#include "cuda/stencil/boundary.h"

typedef struct {
  long n[3], r[3];
  int boundary;
  int count;
  int *offsets; /* 3 per tap */
  double *weights;
} taps;

static int taps_of(const glc_stencil_problem *p, taps *t) {
  const long wz = 2 * p->r[0] + 1, wy = 2 * p->r[1] + 1, wx = 2 * p->r[2] + 1;
  for (int a = 0; a < 3; a++) {
    t->n[a] = (long)p->n[a];
    t->r[a] = p->r[a];
  }
  t->boundary = p->boundary;
  t->count = 0;
  t->offsets = malloc(sizeof(int) * 3 * (size_t)(wz * wy * wx));
  t->weights = malloc(sizeof(double) * (size_t)(wz * wy * wx));
  if (!t->offsets || !t->weights) return -1;
  for (long a = 0; a < wz; a++)
    for (long b = 0; b < wy; b++)
      for (long c = 0; c < wx; c++) {
        double w = p->weights[(a * wy + b) * wx + c];
        if (w == 0.0) continue;
        t->offsets[3 * t->count] = (int)(a - p->r[0]);
        t->offsets[3 * t->count + 1] = (int)(b - p->r[1]);
        t->offsets[3 * t->count + 2] = (int)(c - p->r[2]);
        t->weights[t->count++] = w;
      }
  return 0;
}

static int in_shell(const taps *t, long z, long y, long x) {
  return z < t->r[0] || z >= t->n[0] - t->r[0] || y < t->r[1] || y >= t->n[1] - t->r[1] ||
         x < t->r[2] || x >= t->n[2] - t->r[2];
}

/* STENCIL_ROW(NAME, T): one row (z, y) of out. The cells whose taps all lie inside the grid
 * (x in [lo, hi)) take the SIMD loop, tap by tap over the row; the rest go through the map. */
#define STENCIL_ROW(NAME, T)                                                                      \
  static void NAME(const taps *t, const T *u, T *out, long z, long y, int simd) {                 \
    const long nx = t->n[2], ny = t->n[1], nz = t->n[0];                                          \
    T *row = out + (z * ny + y) * nx;                                                             \
    const int inner_row = z >= t->r[0] && z < nz - t->r[0] && y >= t->r[1] && y < ny - t->r[1];   \
    long lo = t->r[2], hi = nx - t->r[2];                                                         \
    if (!simd || !inner_row || hi <= lo) lo = hi = nx;                                            \
    for (long x = 0; x < nx; x++) {                                                               \
      if (x == lo) x = hi;                                                                        \
      if (x >= nx) break;                                                                         \
      if (t->boundary == GLC_BOUNDARY_FIXED && in_shell(t, z, y, x)) {                            \
        row[x] = u[(z * ny + y) * nx + x];                                                        \
        continue;                                                                                 \
      }                                                                                           \
      T sum = 0;                                                                                  \
      for (int k = 0; k < t->count; k++) {                                                        \
        const int *o = t->offsets + 3 * k;                                                        \
        long mz = glc_map_index((int)(z + o[0]), (int)nz, t->boundary);                           \
        long my = glc_map_index((int)(y + o[1]), (int)ny, t->boundary);                           \
        long mx = glc_map_index((int)(x + o[2]), (int)nx, t->boundary);                           \
        if (mz >= 0 && my >= 0 && mx >= 0) sum += (T)t->weights[k] * u[(mz * ny + my) * nx + mx]; \
      }                                                                                           \
      row[x] = sum;                                                                               \
    }                                                                                             \
    if (hi > lo) {                                                                                \
      for (long x = lo; x < hi; x++) row[x] = 0;                                                  \
      for (int k = 0; k < t->count; k++) {                                                        \
        const int *o = t->offsets + 3 * k;                                                        \
        const T w = (T)t->weights[k];                                                             \
        const T *src = u + ((z + o[0]) * ny + y + o[1]) * nx + o[2];                              \
        _Pragma("omp simd") for (long x = lo; x < hi; x++) row[x] += w * src[x];                  \
      }                                                                                           \
    }                                                                                             \
  }

STENCIL_ROW(stencil_row_f32, float)
STENCIL_ROW(stencil_row_f64, double)

int glcpu_stencil(int variant, int dtype, const glc_stencil_problem *p, const void *u, void *out) {
  if ((variant != GLC_STENCIL_CPU_SERIAL && variant != GLC_STENCIL_CPU_OPENMP_SIMD) ||
      (dtype != GLC_F32 && dtype != GLC_F64))
    return -1;
  taps t;
  int rc = taps_of(p, &t);
  const long rows = (long)(p->n[0] * p->n[1]);
  const int parallel = variant == GLC_STENCIL_CPU_OPENMP_SIMD;
  if (rc == 0) {
#pragma omp parallel for schedule(static) if (parallel && rows * (long)p->n[2] > 65536)
    for (long q = 0; q < rows; q++) {
      const long z = q / (long)p->n[1], y = q % (long)p->n[1];
      if (dtype == GLC_F32)
        stencil_row_f32(&t, u, out, z, y, parallel);
      else
        stencil_row_f64(&t, u, out, z, y, parallel);
    }
  }
  free(t.offsets);
  free(t.weights);
  return rc;
}

/* Cells a Jacobi sweep updates between two looks at Ctrl-C: a row at a time for wide grids (a
 * sweep of a large one takes seconds), every few sweeps for small ones. */
#define JACOBI_CHECK_CELLS (1L << 16)

/* JACOBI(NAME, T): glc_jacobi's solver, serially: sweeps from u into a second grid and back.
 * Returns 0, -1 without memory, or GLC_INTERRUPTED (u then holds a partial sweep). */
#define JACOBI(NAME, T)                                                                           \
  static int NAME(int ndim, const size_t *shape, double h, size_t max_sweeps, double tol,         \
                  size_t check_every, const T *f, const T *u0, T *u, double *residuals,           \
                  size_t capacity, glc_jacobi_result *result) {                                   \
    const long planes = ndim == 3 ? (long)shape[0] : 1, rows = (long)shape[ndim - 2],             \
               cols = (long)shape[ndim - 1];                                                      \
    const size_t n = (size_t)(planes * rows * cols);                                              \
    const long plane = rows * cols;                                                               \
    const T h2 = (T)(h * h);                                                                      \
    T *other = malloc(sizeof(T) * (n ? n : 1));                                                   \
    if (!other) return -1;                                                                        \
    memcpy(u, u0, sizeof(T) * n);                                                                 \
    memcpy(other, u0, sizeof(T) * n);                                                             \
    T *cur = u, *next = other;                                                                    \
    const long z0 = ndim == 3 ? 1 : 0, z1 = ndim == 3 ? planes - 1 : 1;                           \
    long unchecked = 0;                                                                           \
    int status = 0;                                                                               \
    while (!status && result->sweeps < max_sweeps) {                                              \
      size_t count = max_sweeps - result->sweeps;                                                 \
      if (count > check_every) count = check_every;                                               \
      T largest = 0;                                                                              \
      for (size_t s = 0; !status && s < count; s++) {                                             \
        const int last = s + 1 == count;                                                          \
        for (long z = z0; !status && z < z1; z++)                                                 \
          for (long y = 1; y < rows - 1; y++) {                                                   \
            unchecked += cols;                                                                    \
            if (unchecked >= JACOBI_CHECK_CELLS) {                                                \
              unchecked = 0;                                                                      \
              if ((status = glc_check_interrupt())) break;                                        \
            }                                                                                     \
            for (long x = 1; x < cols - 1; x++) {                                                 \
              const long at = z * plane + y * cols + x;                                           \
              const T *p = cur + at;                                                              \
              T value;                                                                            \
              if (ndim == 2)                                                                      \
                value = (p[-cols] + p[cols] + p[-1] + p[1] + h2 * f[at]) * (T)0.25;               \
              else                                                                                \
                value = (p[-plane] + p[plane] + p[-1] + p[1] + p[-cols] + p[cols] + h2 * f[at]) * \
                        ((T)1 / (T)6);                                                            \
              next[at] = value;                                                                   \
              if (last) {                                                                         \
                T d = value > *p ? value - *p : *p - value;                                       \
                if (d > largest || d != d) largest = d;                                           \
              }                                                                                   \
            }                                                                                     \
          }                                                                                       \
        T *swap = cur;                                                                            \
        cur = next;                                                                               \
        next = swap;                                                                              \
      }                                                                                           \
      if (status) break;                                                                          \
      result->sweeps += count;                                                                    \
      const double residual = (double)largest * 2.0 * ndim / (double)h2;                          \
      if (glc_jacobi_record_check(residual, tol, residuals, capacity, &result->checks,            \
                                  &result->converged))                                            \
        break;                                                                                    \
    }                                                                                             \
    if (!status && cur != u) memcpy(u, cur, sizeof(T) * n);                                       \
    free(other);                                                                                  \
    return status;                                                                                \
  }

JACOBI(jacobi_f32, float)
JACOBI(jacobi_f64, double)

int glcpu_jacobi(int variant, int dtype, int ndim, const size_t *shape, double h, size_t max_sweeps,
                 double tol, size_t check_every, const void *f, const void *u0, void *u,
                 double *residuals, size_t capacity, glc_jacobi_result *result) {
  if (variant != GLC_JACOBI_CPU_SERIAL || (ndim != 2 && ndim != 3) || check_every == 0 || !(h > 0))
    return -1;
  result->sweeps = result->checks = 0;
  result->converged = 0;
  size_t n = 1;
  for (int a = 0; a < ndim; a++) n *= shape[a];
  if (n == 0) { /* as glc_jacobi: every sweep and check done at once, its residual 0 */
    result->sweeps = max_sweeps;
    result->checks = max_sweeps / check_every + (max_sweeps % check_every != 0);
    for (size_t i = 0; i < result->checks && i < capacity; i++) residuals[i] = 0.0;
    result->converged = tol > 0 && max_sweeps > 0;
    return 0;
  }
  if (dtype == GLC_F32)
    return jacobi_f32(ndim, shape, h, max_sweeps, tol, check_every, f, u0, u, residuals, capacity,
                      result);
  if (dtype == GLC_F64)
    return jacobi_f64(ndim, shape, h, max_sweeps, tol, check_every, f, u0, u, residuals, capacity,
                      result);
  return -1;
}
