// The kernels of cg variant 4 (dia_fused): A in DIA form (dia.cuh), and an iteration of two
// passes over the vectors where variant 2 (fused) makes three.
//
// Pass 1, cg_dia_step, for each row i: p_i = z_i + beta p'_i from the previous iteration's p'
// (the update variant 2 makes in a pass of its own), x_i += alpha' p'_i (the previous
// iteration's x update, moved here from the pass after the SpMV), and q_i = (A p)_i, where each
// neighbour's p_j = z_j + beta p'_j is computed again from z and p' rather than read back, and
// the block partials of p . q. Pass 2, cg_update_r: r -= alpha q, z = M^-1 r, and the partials of
// r . z and r . r. p and p' are two buffers taking turns (iteration k writes p into buffer k % 2),
// since neighbours read p' while p is written. The last iteration's x update has no next pass to
// ride: cg_dia_finish_x applies it after the loop.
//
// Per iteration and n rows: the k diagonals, z, p', x read and p, x, q written in pass 1; r, q
// read and r written in pass 2 (Jacobi: dinv read and z written besides): (k + 9) n values,
// (k + 11) n with Jacobi. The SpMV's gathers of z and p' at the other diagonals' rows come from
// the caches when the diagonals are few and close; the model counts each vector once.
#ifndef GPULAB_CUDA_SPARSE_CG_DIA_KERNELS_CUH
#define GPULAB_CUDA_SPARSE_CG_DIA_KERNELS_CUH

#include "cg_kernels.cuh"
#include "dia.cuh"

namespace {

// p_j = z_j + beta p'_j, by one fma so that a row's own p and its neighbours' copies agree to the
// bit.
template <typename T, typename Row>
__device__ __forceinline__ T next_direction(const T *z, const T *p_old, T beta, Row j) {
  return fma(beta, p_old[j], z[j]);
}

// Pass 1 for matrices of at most KMax diagonals (offsets.count <= KMax): the diagonal loop is
// unrolled KMax times, the slots past count predicated off, so a row's loads are all in flight
// at once. Row: the row index's type, int where n < 2^31 (32-bit index arithmetic keeps the
// unrolled loop's addresses in fewer registers). beta and alpha are the previous iteration's
// (zero at the first, with p' zeroed).
template <int KMax, typename Row, typename T>
__global__ void cg_dia_step(long long n, DiaOffsets offsets, const T *__restrict__ values,
                            const T *__restrict__ z, const T *__restrict__ p_old, T *__restrict__ p,
                            T *__restrict__ x, T *__restrict__ q, double *partials,
                            const CgState *state) {
  if (finished(state)) return;
  const T beta = static_cast<T>(state->beta), alpha = static_cast<T>(state->alpha);
  const Row rows = static_cast<Row>(n);
  double dot = 0;
  for (Row i = blockIdx.x * blockDim.x + threadIdx.x; i < rows;
       i += static_cast<Row>(gridDim.x) * blockDim.x) {
    T sum = 0;
#pragma unroll
    for (int d = 0; d < KMax; d++) {
      const Row j = i + static_cast<Row>(offsets.offset[d]);
      if (d < offsets.count && j >= 0 && j < rows)
        sum += values[static_cast<long long>(d) * n + i] * next_direction(z, p_old, beta, j);
    }
    const T old = p_old[i];
    const T pi = next_direction(z, p_old, beta, i);
    p[i] = pi;
    q[i] = sum;
    x[i] += alpha * old;
    dot += static_cast<double>(pi) * static_cast<double>(sum);
  }
  dot = block_sum(dot);
  if (threadIdx.x == 0) partials[blockIdx.x] = dot;
}

// Pass 2: r -= alpha q, z = M^-1 r beside it (Jacobi), and the block partials of r . z and r . r.
template <typename T, bool Jacobi>
__global__ void cg_update_r(long long n, T *r, const T *q, const T *dinv, T *z, double *partials,
                            int stride, const CgState *state) {
  if (finished(state)) return;
  update_residual<T, Jacobi, false>(n, nullptr, r, nullptr, q, dinv, z, partials, stride, state);
}

// After the loop: x += alpha p for the last iteration that finished (its p in buffer iterations %
// 2), which no cg_dia_step applied. Nothing after a breakdown (alpha is not valid, and the
// breaking iteration's cg_dia_step applied the one before) or before any iteration.
template <typename T>
__global__ void cg_dia_finish_x(long long n, T *x, const T *p0, const T *p1, const CgState *state) {
  if (state->done == 2 || state->iterations == 0) return;
  const T alpha = static_cast<T>(state->alpha);
  const T *p = state->iterations % 2 ? p1 : p0;
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] += alpha * p[i];
}

}  // namespace

#endif
