/* The sparse lab's C ABI: y = A x for a CSR matrix A, by the ladder of formats S3 describes (CSR,
 * ELL, SELL-C-sigma, COO) and cuSPARSE. Operands in device memory; every function returns a CUDA
 * error code, as cuda/core/gpulab_core.h says. The variant ids below are shared by the ladder
 * (csrc/labs/sparse/variants.c), the dispatch (csr.cu, spmm.cu, cg.cu) and the CPU variants;
 * tests/labs/test_sparse.py pins them. */
#ifndef GPULAB_CUDA_SPARSE_H
#define GPULAB_CUDA_SPARSE_H

#include <stddef.h>

#include "cuda/core/gpulab_core.h"

#ifdef __cplusplus
extern "C" {
#endif

enum glc_spmv_variant {
  GLC_SPMV_CSR_SCALAR = 0,       /* S3: one thread per row */
  GLC_SPMV_CSR_VECTOR = 1,       /* one warp per row, shuffle reduction */
  GLC_SPMV_CSR_MERGE_PATH = 2,   /* equal shares of rows + nonzeros per thread (merge path) */
  GLC_SPMV_ELL_COLUMN_MAJOR = 3, /* ELL built in the call, slot k of row i at k * rows + i */
  GLC_SPMV_ELL_ROW_MAJOR = 4,    /* S3's ELL: slot k of row i at i * width + k */
  GLC_SPMV_SELL = 5,             /* SELL-C-sigma, C = 32, sigma = 256, built in the call */
  GLC_SPMV_COO = 6,              /* COO row indices built in the call, warp segmented reduction */
  GLC_SPMV_CUSPARSE = 7,         /* cusparseSpMV (generic API), libcusparse loaded on first use */
  GLC_SPMV_CSR_SUBWARP = 8,      /* a group of 2-32 lanes per row, unrolled gathers */
  GLC_SPMV_CSR_HYBRID = 9,       /* csr_subwarp's groups, rows past 2048 nonzeros cut into chunks */
  GLC_SPMV_CSR_HUB_SORTED = 10,  /* csr_hybrid on columns relabelled by use (a.column_order) */
  /* CPU ladder */
  GLC_SPMV_CPU_SERIAL = 100,
  GLC_SPMV_CPU_OPENMP = 101
};

enum glc_spmm_variant {
  GLC_SPMM_ROW_PER_BLOCK = 0,  /* S3: a block per row of A, its threads over B's columns */
  GLC_SPMM_REGISTER_TILED = 1, /* a thread per 4 columns of a row of C, held in registers */
  GLC_SPMM_CUSPARSE = 2,       /* cusparseSpMM (generic API, row-major B and C) */
  /* CPU ladder */
  GLC_SPMM_CPU_SERIAL = 100,
  GLC_SPMM_CPU_OPENMP = 101
};

enum glc_cg_variant {
  GLC_CG_TEXTBOOK = 0,       /* S3 11.5's baseline: a kernel per operation, scalars on the host */
  GLC_CG_DEVICE_SCALARS = 1, /* the same kernels reading alpha and beta from device memory */
  GLC_CG_FUSED = 2,          /* x, r (and z) in one pass with both dots; SpMV fused with p.Ap */
  GLC_CG_PIPELINED = 3,      /* Chronopoulos-Gear: one reduction point per iteration */
  GLC_CG_DIA_FUSED = 4,      /* A by its diagonals (DIA, built in the call); p's update and the
                                previous x update inside the SpMV: 2 passes an iteration */
  /* CPU ladder */
  GLC_CG_CPU_SERIAL = 100
};

/* A CSR matrix in device memory (host memory for the CPU variants): rows + 1 offsets in indptr,
 * nnz column indices and values. index_dtype GLC_I32 or GLC_I64 (indptr and indices share it;
 * int64 where nnz passes 2^31 - 1); dtype GLC_F32 or GLC_F64. max_row: the longest row's
 * nonzeros (the ELL width), which the caller knows from indptr. Columns within a row may be
 * unsorted or repeated: every variant sums what it is given. */
typedef struct {
  size_t rows, cols, nnz, max_row;
  int index_dtype, dtype;
  const void *indptr, *indices, *data;
  /* spmv variant 10 only (NULL elsewhere): glc_csr_hub_order's output for this matrix */
  const void *column_order;
} glc_csr;

/* csr_hub_sorted's column order of A (device arrays): order receives cols + nnz entries of A's
 * index dtype, new_to_old (the columns by descending nonzero count, ties by column) and then A's
 * indices relabelled (old_to_new[indices[k]]); *top_nonzeros the nonzeros in the `top` most used
 * columns. The call waits for that count. */
GLC_API int glc_csr_hub_order(const glc_csr *a, void *order, size_t top,
                              unsigned long long *top_nonzeros, glc_stream stream);

/* y[rows] = A x[cols]. block: threads per block (0: the variant's default; ignored by 7). lanes:
 * the lanes per row of variants 8, 9 and 10, 0 (chosen from the mean row length) or 2, 4, 8,
 * 16, 32; the other variants take 0. Variant 10 reads a->column_order. */
GLC_API int glc_spmv(int variant, int block, int lanes, const glc_csr *a, const void *x, void *y,
                     glc_stream stream);

/* C[rows x k] = A B[cols x k], B and C dense, row-major and C-contiguous. block: threads per
 * block (0: the variant's default; ignored by 2). */
GLC_API int glc_spmm(int variant, int block, const glc_csr *a, size_t k, const void *b, void *c,
                     glc_stream stream);

/* Conjugate gradients on A x = b (A square, symmetric positive definite), optionally with the
 * Jacobi preconditioner M = diag(A). It stops once ||r||_2 <= max(rtol ||b||_2, atol), tested
 * after every iteration on the device (or the host, variant 0), or after maxiter iterations. */
typedef struct {
  double rtol, atol;
  long long maxiter;
  long long check_every; /* the host learns ||r|| every check_every iterations (>= 1) */
  int jacobi;            /* 1: M = diag(A) */
  int phases;            /* 1: time each phase with events (a host wait per iteration) */
} glc_cg_options;

/* Variant 4 stores A by diagonals: at most this many distinct offsets col - row. */
#define GLC_CG_DIA_MAX_DIAGONALS 32

/* What a solve reports. residuals (the caller's host array of capacity >= maxiter /
 * check_every + 2 entries) receives ||r||_2 at iteration 0, at every check_every-th iteration
 * and at the last one; count says how many. phase_ms: operator, reductions and vector updates
 * (zeros unless options.phases). zero_diagonal_row: -1, or a row whose diagonal is zero (with
 * jacobi, found before any iteration; x is then left unsolved). breakdown: p.Ap was zero or not
 * finite, which stops the solve unconverged. diagonals (variant 4): the distinct diagonals of A,
 * or GLC_CG_DIA_MAX_DIAGONALS + 1 for more; dia_refused: 1 when the variant refused A (more
 * than GLC_CG_DIA_MAX_DIAGONALS diagonals, or DIA arrays of more bytes than the CSR arrays they
 * replace), before any iteration, x left unsolved. */
typedef struct {
  double *residuals;
  size_t capacity, count;
  long long iterations, zero_diagonal_row, diagonals;
  int converged, breakdown, dia_refused;
  double phase_ms[3];
} glc_cg_result;

/* Solves A x = b: x[rows] from x0[rows] (NULL: zeros). b, x0 and x in device memory, a->rows ==
 * a->cols. block: threads per block (0: 256). Synchronizes the stream before it returns. */
GLC_API int glc_cg(int variant, int block, const glc_csr *a, const void *b, const void *x0, void *x,
                   const glc_cg_options *options, glc_cg_result *result, glc_stream stream);

/* Row statistics of a CSR matrix in device memory, computed there by one kernel over indptr
 * (glc_csr_stats): what gl.CSR's choice of variant reads, so that no call copies indptr to the
 * host. A decreasing row (end before start) counts in decreasing_rows only. */
typedef struct {
  long long first, last;              /* indptr[0] and indptr[rows] */
  unsigned long long max_row;         /* the longest row's nonzeros; 0 without rows */
  unsigned long long empty_rows;      /* rows of no entries */
  unsigned long long decreasing_rows; /* rows whose end offset precedes their start */
  double sum_squares;                 /* sum of squared row lengths (exact below 2^53) */
} glc_csr_row_stats;

/* The statistics of a->rows rows from a->indptr (only indptr and index_dtype are read). Waits
 * for the stream: one copy of sizeof(glc_csr_row_stats) bytes comes back. */
GLC_API int glc_csr_stats(const glc_csr *a, glc_csr_row_stats *stats, glc_stream stream);

/* The distinct diagonals (offsets col - row) of A, counted on the device by cg's DIA pass 1
 * (cuda/sparse/dia.cuh): the count, or GLC_CG_DIA_MAX_DIAGONALS + 1 for more. Reads indptr and
 * indices; waits for the stream. */
GLC_API int glc_csr_diagonals(const glc_csr *a, long long *diagonals, glc_stream stream);

/* The Graph500 R-MAT (Kronecker) generator, gl.sparse.rmat: edges draws of scale levels each, a
 * level's two 32-bit draws the halves of splitmix64(edge_key + (32 e + level + 1) * golden); the
 * row bit is draw_hi >= t_ab, the column bit draw_lo >= (row bit ? t_c : t_a) (thresholds in
 * 0..2^32). Labels then go through a Feistel bijection of [0, 2^scale) keyed by perm_key. The
 * host's twin, gpulab/labs/sparse.py's _rmat_host, draws the same numbers. */
#define GLC_RMAT_FEISTEL_ROUNDS 4
typedef struct {
  int scale;                /* 1..31: 2^scale vertices */
  unsigned long long edges; /* >= 1 */
  unsigned long long t_ab, t_a, t_c;
  unsigned long long edge_key, perm_key;
} glc_rmat;

/* Where glc_rmat_edges left the merged edges, inside its workspace: the distinct keys
 * row * 2^scale + col in ascending order, the edges of each (uint32, or uint64 past 2^32 - 1
 * edges), and their number (an unsigned long long in device memory). */
typedef struct {
  const void *keys, *counts;
  const void *count;
} glc_rmat_merged;

/* The device bytes glc_rmat_edges needs as its workspace: two arrays of edges 64-bit keys, the
 * counts, CUB's scratch and the count. */
GLC_API int glc_rmat_workspace_bytes(const glc_rmat *p, size_t *bytes);
/* Draws the edges, sorts their keys (CUB's radix sort on 2 scale bits) and merges repeats
 * (CUB's reduce-by-key), in workspace (device memory of glc_rmat_workspace_bytes, 256-byte
 * aligned); asynchronous on stream. */
GLC_API int glc_rmat_edges(const glc_rmat *p, void *workspace, size_t workspace_bytes,
                           glc_rmat_merged *merged, glc_stream stream);
/* The CSR of the nnz merged edges: indptr (2^scale + 1 offsets, a binary search of each row's
 * first key), indices (each key's column) and data (its edges), index_dtype GLC_I32 or GLC_I64,
 * dtype GLC_F32 or GLC_F64; asynchronous on stream. */
GLC_API int glc_rmat_csr(const glc_rmat *p, const glc_rmat_merged *merged, size_t nnz,
                         int index_dtype, int dtype, void *indptr, void *indices, void *data,
                         glc_stream stream);

#ifdef __cplusplus
}
#endif

#endif
