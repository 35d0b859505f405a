// The kernels of conjugate gradients (cg.cu's glc_cg drives them): the solve's device state,
// the reductions to it, and the vector passes of each variant, plain and fused. Included by cg.cu
// alone, so the kernels stay in an anonymous namespace.
#ifndef GPULAB_CUDA_SPARSE_CG_KERNELS_CUH
#define GPULAB_CUDA_SPARSE_CG_KERNELS_CUH

#include <cmath>

#include "kernels.cuh"
#include "merge_path.cuh"

namespace {

// The solve's scalars, in device memory for variants 1-3 (variant 0 keeps its own on the host and
// uses dots only). rz: r.z (z = M^-1 r; r.r without M; pipelined: gamma = r.u); pq: p.Ap
// (pipelined: delta = u.Au).
struct CgState {
  double rz, rr, pq, alpha, beta, tol2;
  double dots[2];  // variant 0: the dots the host reads back
  long long iterations;
  unsigned long long zero_row;  // the least row with a zero diagonal, or ULLONG_MAX
  int done;                     // 0 running, 1 converged, 2 breakdown
};

// The stages of cg_scalars: what a reduction point computes from its dots.
enum CgStage { kInit = 0, kAlpha = 1, kBeta = 2, kPipelinedInit = 3, kPipelined = 4 };
// Partial-sum slots: each reduction kernel writes one per block into slot q of the partials.
enum CgSlot { kSlotRz = 0, kSlotRr = 1, kSlotPq = 2, kSlotBb = 3, kSlots = 4 };
enum CgPhase { kOperator = 0, kReductions = 1, kUpdates = 2 };

constexpr unsigned kReduceBlocksMax = 1024;  // grid-stride vector kernels: about one wave

// The block's sum of v, in thread 0. Every thread calls it; it may be called twice in a kernel
// (the first barrier keeps warp 0's reads of one call before the next call's stores).
__device__ double block_sum(double v) {
  __shared__ double warp_sums[32];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_sum(v);
  __syncthreads();
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) v = warp_sum(lane < blockDim.x / 32 ? warp_sums[lane] : 0.0);
  return v;
}

// A kernel's "is the solve over": read by every thread before any barrier, and never written
// while a kernel that reads it runs, so a block leaves whole.
__device__ __forceinline__ bool finished(const CgState *state) {
  return state != nullptr && state->done != 0;
}

// dinv[i] = 1 / A[i, i] (the sum of row i's entries in column i: device matrices may repeat
// columns); a zero diagonal records its row.
template <typename I, typename T>
__global__ void cg_inverse_diagonal(long long rows, const I *indptr, const I *indices,
                                    const T *data, T *dinv, CgState *state) {
  const long long row = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (row >= rows) return;
  T diagonal = 0;
  for (I k = indptr[row]; k < indptr[row + 1]; k++)
    if (static_cast<long long>(indices[k]) == row) diagonal += data[k];
  if (diagonal == T(0)) atomicMin(&state->zero_row, static_cast<unsigned long long>(row));
  dinv[row] = diagonal == T(0) ? T(0) : T(1) / diagonal;
}

// r = b - r, where r holds A x0.
template <typename T>
__global__ void cg_residual_init(long long n, const T *b, T *r) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) r[i] = b[i] - r[i];
}

// Block partials of a . b into partials[blockIdx.x] (grid-stride).
template <typename T>
__global__ void cg_dot_partials(long long n, const T *a, const T *b, double *partials,
                                const CgState *state) {
  if (finished(state)) return;
  double sum = 0;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    sum += static_cast<double>(a[i]) * static_cast<double>(b[i]);
  sum = block_sum(sum);
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

// The sum of count partials, by one block in a fixed order, into the block's thread 0.
__device__ double sum_partials(const double *partials, int count) {
  double sum = 0;
  for (int i = threadIdx.x; i < count; i += blockDim.x) sum += partials[i];
  return block_sum(sum);
}

// Variant 0's second stage: one dot into *out, which the host copies back.
__global__ void cg_dot_finish(const double *partials, int count, double *out) {
  const double sum = sum_partials(partials, count);
  if (threadIdx.x == 0) *out = sum;
}

// A reduction point of variants 1-3, one block: the slots' sums (counts[q] partials in slot q,
// stride apart), then the scalars of the stage. Convergence is tested here, every iteration.
__global__ void cg_scalars(int stage, const double *partials, int stride, int count_rz,
                           int count_rr, int count_pq, int count_bb, double rtol, double atol,
                           CgState *state) {
  if (stage != kInit && stage != kPipelinedInit && finished(state)) return;
  const double rz = sum_partials(partials + kSlotRz * stride, count_rz);
  const double rr = count_rr ? sum_partials(partials + kSlotRr * stride, count_rr) : rz;
  const double pq = sum_partials(partials + kSlotPq * stride, count_pq);
  const double bb = sum_partials(partials + kSlotBb * stride, count_bb);
  if (threadIdx.x != 0) return;
  CgState &s = *state;
  const bool pq_bad = !(pq != 0.0) || !isfinite(pq);
  switch (stage) {
    case kInit:
    case kPipelinedInit: {
      const double tol = fmax(rtol * sqrt(bb), atol);
      s.tol2 = tol * tol;
      s.rz = rz;
      s.rr = rr;
      s.iterations = 0;
      s.beta = 0;
      s.done = rr <= s.tol2 ? 1 : 0;
      if (stage == kPipelinedInit) {
        s.pq = pq;
        s.alpha = rz / pq;
        if (!s.done && pq_bad) s.done = 2;
      }
      break;
    }
    case kAlpha:
      s.pq = pq;
      s.alpha = s.rz / pq;
      if (pq_bad) s.done = 2;
      break;
    case kBeta:
      s.beta = rz / s.rz;
      s.rz = rz;
      s.rr = rr;
      s.iterations++;
      if (rr <= s.tol2) s.done = 1;
      break;
    case kPipelined: {
      // Chronopoulos and Gear: beta = gamma_new / gamma, alpha = gamma_new / (delta - beta *
      // gamma_new / alpha), from the dots of one reduction point.
      s.beta = rz / s.rz;
      const double denominator = pq - s.beta * rz / s.alpha;
      s.alpha = rz / denominator;
      s.rz = rz;
      s.rr = rr;
      s.pq = pq;
      s.iterations++;
      if (rr <= s.tol2)
        s.done = 1;
      else if (!(denominator != 0.0) || !isfinite(denominator))
        s.done = 2;
      break;
    }
  }
}

// y += sign * coefficient * x; the coefficient by value (variant 0) or from device memory.
template <typename T>
__global__ void cg_axpy(long long n, T coefficient, const double *device_coefficient, T sign,
                        const T *x, T *y, const CgState *state) {
  if (finished(state)) return;
  const T a = sign * (device_coefficient ? static_cast<T>(*device_coefficient) : coefficient);
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}

// p = z + beta p; beta by value (variant 0) or from device memory.
template <typename T>
__global__ void cg_xpby(long long n, T beta, const double *device_beta, const T *z, T *p,
                        const CgState *state) {
  if (finished(state)) return;
  const T b = device_beta ? static_cast<T>(*device_beta) : beta;
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) p[i] = z[i] + b * p[i];
}

// z = M^-1 r for the Jacobi preconditioner.
template <typename T>
__global__ void cg_jacobi(long long n, const T *dinv, const T *r, T *z, const CgState *state) {
  if (finished(state)) return;
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) z[i] = dinv[i] * r[i];
}

// q = A p by merge path (q zeroed before), skipped once the solve is over.
template <typename I, typename T>
__global__ void cg_spmv(long long rows, long long nnz, const I *indptr, const I *indices,
                        const T *data, const T *p, T *q, const CgState *state) {
  if (finished(state)) return;
  const long long thread = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  merge_path_share(thread, rows, nnz, indptr, indices, data, p,
                   [&](long long i, T sum, bool whole) {
                     if (whole)
                       q[i] = sum;
                     else
                       atomicAdd(&q[i], sum);
                   });
}

// q = A p fused with the block partials of p . q: p . Ap = sum_i p_i (A p)_i is linear in the
// parts of each row, so every part a share emits adds p_i times itself, cut rows included, and
// q is never read back. S3 11.5's "fuse reduction outputs into the update step".
template <typename I, typename T>
__global__ void cg_spmv_dot(long long rows, long long nnz, const I *indptr, const I *indices,
                            const T *data, const T *p, T *q, double *partials,
                            const CgState *state) {
  if (finished(state)) return;
  const long long thread = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  double dot = 0;
  merge_path_share(thread, rows, nnz, indptr, indices, data, p,
                   [&](long long i, T sum, bool whole) {
                     if (whole)
                       q[i] = sum;
                     else
                       atomicAdd(&q[i], sum);
                     dot += static_cast<double>(p[i]) * static_cast<double>(sum);
                   });
  dot = block_sum(dot);
  if (threadIdx.x == 0) partials[blockIdx.x] = dot;
}

// The block partials of an update pass's r . r and r . z (z = M^-1 r; without M, r . z is r . r),
// into the slots cg_scalars sums. Every thread calls it.
template <bool Jacobi>
__device__ void store_residual_partials(double rr, double rz, double *partials, int stride) {
  rr = block_sum(rr);
  if (Jacobi) rz = block_sum(rz);
  if (threadIdx.x == 0) {
    partials[kSlotRr * stride + blockIdx.x] = rr;
    partials[kSlotRz * stride + blockIdx.x] = Jacobi ? rz : rr;
  }
}

// r -= alpha q (and, with UpdateX, x += alpha p) in one pass, z = M^-1 r beside it (Jacobi), and
// the block partials of r . z and r . r (only r . r without M): variant 2's first update and,
// without x, variant 4's second pass (cg_dia_kernels.cuh).
template <typename T, bool Jacobi, bool UpdateX>
__device__ __forceinline__ void update_residual(long long n, T *x, T *r, const T *p, const T *q,
                                                const T *dinv, T *z, double *partials, int stride,
                                                const CgState *state) {
  const T alpha = static_cast<T>(state->alpha);
  double rz = 0, rr = 0;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    if (UpdateX) x[i] += alpha * p[i];
    const T ri = r[i] - alpha * q[i];
    r[i] = ri;
    rr += static_cast<double>(ri) * static_cast<double>(ri);
    if (Jacobi) {
      const T zi = dinv[i] * ri;
      z[i] = zi;
      rz += static_cast<double>(ri) * static_cast<double>(zi);
    }
  }
  store_residual_partials<Jacobi>(rr, rz, partials, stride);
}

// Variant 2's first update: x += alpha p and r -= alpha q in one pass, z = M^-1 r beside them
// (Jacobi), and the block partials of r . z and r . r (only r . r without M).
template <typename T, bool Jacobi>
__global__ void cg_update_xr(long long n, T *x, T *r, const T *p, const T *q, const T *dinv, T *z,
                             double *partials, int stride, const CgState *state) {
  if (finished(state)) return;
  update_residual<T, Jacobi, true>(n, x, r, p, q, dinv, z, partials, stride, state);
}

// Variant 2's second update: p = z + beta p, and q zeroed for the next merge-path SpMV (it adds
// the rows cut between shares into q), in the pass that writes p anyway.
template <typename T>
__global__ void cg_update_p(long long n, const T *z, T *p, T *q, const CgState *state) {
  if (finished(state)) return;
  const T beta = static_cast<T>(state->beta);
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) {
    p[i] = z[i] + beta * p[i];
    q[i] = 0;
  }
}

// Variant 3's one vector pass: p = u + beta p, s = w + beta s (s = A p by recurrence), x +=
// alpha p, r -= alpha s, u = M^-1 r; w zeroed for the SpMV that follows; the block partials of
// gamma = r . u and r . r. delta = u . Au comes from that SpMV, and both meet in one cg_scalars.
template <typename T, bool Jacobi>
__global__ void cg_pipelined_update(long long n, T *x, T *r, T *u, T *w, T *p, T *s, const T *dinv,
                                    double *partials, int stride, const CgState *state) {
  if (finished(state)) return;
  const T alpha = static_cast<T>(state->alpha), beta = static_cast<T>(state->beta);
  double gamma = 0, rr = 0;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const T pi = u[i] + beta * p[i];
    const T si = w[i] + beta * s[i];
    p[i] = pi;
    s[i] = si;
    w[i] = 0;
    x[i] += alpha * pi;
    const T ri = r[i] - alpha * si;
    r[i] = ri;
    rr += static_cast<double>(ri) * static_cast<double>(ri);
    if (Jacobi) {
      const T ui = dinv[i] * ri;
      u[i] = ui;
      gamma += static_cast<double>(ri) * static_cast<double>(ui);
    }
  }
  store_residual_partials<Jacobi>(rr, gamma, partials, stride);
}

}  // namespace

#endif
