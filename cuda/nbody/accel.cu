// Softened all-pairs accelerations: the n-body ladder (S0 ch. 7, GPU Gems 3 ch. 31). Every variant
// computes, for each body i of the padded state,
//   acc_i = G * sum_j m_j (r_j - r_i) / (|r_j - r_i|^2 + eps2)^(3/2)
// summing j in increasing order within each thread (variant 7: in an order fixed by its blocks),
// so that each variant is deterministic. The i = j term is zero (r_j - r_i = 0 and eps2 > 0;
// variant 6 takes its own back out), and so are the zero-mass padding bodies.
#include <cuda_runtime.h>

#include <cfloat>
#include <cstddef>
#include <initializer_list>
#include <utility>

#include "cuda/core/errors.cuh"
#include "nbody.h"
#include "cuda/core/launch.cuh"
#include "state.cuh"

namespace {

// One interaction, in the GPU Gems form: 3 FADD (the difference), 3 FFMA (r^2 + eps2), one
// rsqrt, 3 FMUL (m / r^3) and 3 FFMA (the accumulation). rsqrtf is the MUFU approximation.
__device__ __forceinline__ void interact(float xi, float yi, float zi, float xj, float yj, float zj,
                                         float mj, float eps2, float &ax, float &ay, float &az) {
  float dx = xj - xi, dy = yj - yi, dz = zj - zi;
  float r2 = fmaf(dx, dx, fmaf(dy, dy, fmaf(dz, dz, eps2)));
  float inv = rsqrtf(r2);
  float s = mj * (inv * inv * inv);
  ax = fmaf(dx, s, ax);
  ay = fmaf(dy, s, ay);
  az = fmaf(dz, s, az);
}

__device__ __forceinline__ void interact(float4 bi, float4 bj, float eps2, float &ax, float &ay,
                                         float &az) {
  interact(bi.x, bi.y, bi.z, bj.x, bj.y, bj.z, bj.w, eps2, ax, ay, az);
}

// ---- variant 0: one thread per body, every j body read from global memory (through L1) ----
__global__ void nbody_naive(const float4 *__restrict__ pos, float4 *__restrict__ acc, int n_pad,
                            float eps2, float G) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float4 bi = pos[i];
  float ax = 0.f, ay = 0.f, az = 0.f;
  for (int j = 0; j < n_pad; ++j) interact(bi, pos[j], eps2, ax, ay, az);
  acc[i] = make_float4(G * ax, G * ay, G * az, 0.f);
}

// ---- variant 1: variant 0 with the j loop unrolled U times (n_pad is a multiple of U) ----
template <int U>
__global__ void nbody_naive_unrolled(const float4 *__restrict__ pos, float4 *__restrict__ acc,
                                     int n_pad, float eps2, float G) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float4 bi = pos[i];
  float ax = 0.f, ay = 0.f, az = 0.f;
  for (int j = 0; j < n_pad; j += U) {
#pragma unroll
    for (int k = 0; k < U; ++k) interact(bi, pos[j + k], eps2, ax, ay, az);
  }
  acc[i] = make_float4(G * ax, G * ay, G * az, 0.f);
}

// ---- variants 2 and 3: the block stages nbody_tile bodies at a time in shared memory, and
// every thread reads them from there (a broadcast: all threads read the same address) ----
template <int U>
__global__ void nbody_tiled(const float4 *__restrict__ pos, float4 *__restrict__ acc, int n_pad,
                            float eps2, float G) {
  __shared__ float4 tile[nbody_tile];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float4 bi = pos[i];
  float ax = 0.f, ay = 0.f, az = 0.f;
  for (int base = 0; base < n_pad; base += nbody_tile) {
    for (int t = threadIdx.x; t < nbody_tile; t += blockDim.x) tile[t] = pos[base + t];
    __syncthreads();
    for (int k = 0; k < nbody_tile; k += U) {
#pragma unroll
      for (int u = 0; u < U; ++u) interact(bi, tile[k + u], eps2, ax, ay, az);
    }
    __syncthreads();  // the tile is overwritten next
  }
  acc[i] = make_float4(G * ax, G * ay, G * az, 0.f);
}

// ---- variant 4: variant 3 on the SoA state (x[], y[], z[], m[]): four 4-byte loads per body
// from global and four LDS.32 per j from shared, where AoS needs one 16-byte access ----
template <int U>
__global__ void nbody_tiled_soa(const float *__restrict__ state, float *__restrict__ acc, int n_pad,
                                float eps2, float G) {
  __shared__ float sx[nbody_tile], sy[nbody_tile], sz[nbody_tile], sm[nbody_tile];
  const float *x = state, *y = state + n_pad, *z = state + 2 * n_pad, *m = state + 3 * n_pad;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float xi = x[i], yi = y[i], zi = z[i];
  float ax = 0.f, ay = 0.f, az = 0.f;
  for (int base = 0; base < n_pad; base += nbody_tile) {
    for (int t = threadIdx.x; t < nbody_tile; t += blockDim.x) {
      sx[t] = x[base + t];
      sy[t] = y[base + t];
      sz[t] = z[base + t];
      sm[t] = m[base + t];
    }
    __syncthreads();
    for (int k = 0; k < nbody_tile; k += U) {
#pragma unroll
      for (int u = 0; u < U; ++u)
        interact(xi, yi, zi, sx[k + u], sy[k + u], sz[k + u], sm[k + u], eps2, ax, ay, az);
    }
    __syncthreads();
  }
  acc[i] = G * ax;
  acc[n_pad + i] = G * ay;
  acc[2 * n_pad + i] = G * az;
  acc[3 * n_pad + i] = 0.f;
}

// ---- variant 5: B bodies per thread, each j body loaded once from shared memory and used B
// times (B independent FMA chains), MUFU rsqrt without the denormal fix-up (ftz), and the j
// range split over blockIdx.y so that enough blocks fill the GPU even at small n ----

// rsqrt.approx.ftz: one MUFU.RSQ. rsqrtf() without -ftz adds a range check and rescale around it
// for denormal inputs, which r^2 + eps2 >= eps2 never is (eps2 is checked to be normal).
__device__ __forceinline__ float rsqrt_ftz(float x) {
  float y;
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// Threads of a block of variant 5 at most: the launch bound lets ptxas give each thread up to
// 255 registers, which B = 8 bodies (24 accumulators and coordinates) needs. Naming one block an
// SM as the minimum lets ptxas schedule for latency instead of occupancy: at B = 2 it takes 60
// registers, not 39 (4 blocks an SM, not 6), and ran 3.8% faster on the H200.
constexpr int v5_max_block = 256;

// Thread t of block b holds the bodies b * blockDim.x * B + t + k * blockDim.x, k < B (so that
// its loads and stores are coalesced), and zeroes their sums.
template <int B>
__device__ __forceinline__ void load_bodies(const float4 *__restrict__ pos, size_t first,
                                            float (&xi)[B], float (&yi)[B], float (&zi)[B],
                                            float (&ax)[B], float (&ay)[B], float (&az)[B]) {
#pragma unroll
  for (int k = 0; k < B; ++k) {
    float4 b = pos[first + k * blockDim.x];
    xi[k] = b.x;
    yi[k] = b.y;
    zi[k] = b.z;
    ax[k] = ay[k] = az[k] = 0.f;
  }
}

// Block b, split s owns bodies [b * blockDim.x * B, (b + 1) * blockDim.x * B) and the tiles
// [s * tiles_per_split, min(tiles, (s + 1) * tiles_per_split)). Thread t holds the bodies
// b * blockDim.x * B + t + k * blockDim.x, k < B (so that its loads and stores are coalesced).
// out is acc (one split: scale = G) or the partial sums of split s at out + s * n_pad (scale 1).
template <int B, int U>
__global__ void __launch_bounds__(v5_max_block, 1)
    nbody_multibody(const float4 *__restrict__ pos, float4 *__restrict__ out, int n_pad, int tiles,
                    int tiles_per_split, float eps2, float scale) {
  __shared__ float4 tile[nbody_tile];
  size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x * B + threadIdx.x;
  float xi[B], yi[B], zi[B], ax[B], ay[B], az[B];
  load_bodies<B>(pos, first, xi, yi, zi, ax, ay, az);
  int t0 = blockIdx.y * tiles_per_split;
  int t1 = min(tiles, t0 + tiles_per_split);
  for (int t = t0; t < t1; ++t) {
    for (int s = threadIdx.x; s < nbody_tile; s += blockDim.x)
      tile[s] = pos[static_cast<size_t>(t) * nbody_tile + s];
    __syncthreads();
#pragma unroll U
    for (int j = 0; j < nbody_tile; ++j) {
      float4 bj = tile[j];
#pragma unroll
      for (int k = 0; k < B; ++k) {
        float dx = bj.x - xi[k], dy = bj.y - yi[k], dz = bj.z - zi[k];
        float r2 = fmaf(dx, dx, fmaf(dy, dy, fmaf(dz, dz, eps2)));
        float inv = rsqrt_ftz(r2);
        float s = bj.w * inv * (inv * inv);
        ax[k] = fmaf(dx, s, ax[k]);
        ay[k] = fmaf(dy, s, ay[k]);
        az[k] = fmaf(dz, s, az[k]);
      }
    }
    __syncthreads();
  }
  float4 *dst = out + static_cast<size_t>(blockIdx.y) * n_pad;
#pragma unroll
  for (int k = 0; k < B; ++k)
    dst[first + k * blockDim.x] = make_float4(scale * ax[k], scale * ay[k], scale * az[k], 0.f);
}

// ---- variant 6: variant 5 with the mass folded into the j body's coordinates ----
// With a = sign(m) / sqrt|m|, d = a (r_j - r_i) and q = |d|^2 + a^2 eps2 = (|r_j - r_i|^2 + eps2)
// / |m|, the term m (r_j - r_i) / (|r_j - r_i|^2 + eps2)^(3/2) is d q^(-3/2): the difference is
// one FFMA on the scaled j body (a x_j - a x_i), and m / r^3 costs 2 FMUL instead of 3. That is
// 12 instructions an interaction instead of 13. Zero (and denormal) masses get a = 0 and
// a^2 eps2 = inf, so their term is 0 * 0.

// One interaction on the scaled j body (a x_j, a, a y_j, a z_j, e): d = a (r_j - r_i) and
// s = q^(-3/2); the term is d s. The loop and the i = j term both use it, so they agree bitwise.
__device__ __forceinline__ float scaled_term(float xj, float aj, float yj, float zj, float ej,
                                             float xi, float yi, float zi, float &dx, float &dy,
                                             float &dz) {
  dx = fmaf(-aj, xi, xj);
  dy = fmaf(-aj, yi, yj);
  dz = fmaf(-aj, zi, zj);
  float inv = rsqrt_ftz(fmaf(dx, dx, fmaf(dy, dy, fmaf(dz, dz, ej))));
  return inv * (inv * inv);
}

// The scaled j body: a = sign(m) / sqrt|m| and e = a^2 eps2 = eps2 / |m|; NaN masses stay NaN.
__device__ __forceinline__ void nbody_scale(float m, float eps2, float &a, float &e) {
  float am = fabsf(m);
  a = 0.f;
  e = __int_as_float(0x7f800000);
  if (!(am < FLT_MIN)) {
    a = copysignf(1.0f / sqrtf(am), m);
    e = eps2 / am;
  }
}

// Variant 5's blocks, splits and bodies. The tile holds (a x, a, a y, a z) and the tile_e a^2
// eps2. In this order ptxas leaves no FFMA of the loop reading three registers of one bank; in
// (a x, a y, a z, a) it left 0.6 an interaction (a and a y share a bank, and often y_i too) and
// ran 4% slower on the H200 (docs/labs/nbody.md). The i = j term is not zero here: a x_i
// rounds, so d is its rounding error. The block whose split holds body i's tile computes that
// term the same way and takes it back out.
template <int B, int U>
__global__ void __launch_bounds__(v5_max_block, 1)
    nbody_scaled(const float4 *__restrict__ pos, float4 *__restrict__ out, int n_pad, int tiles,
                 int tiles_per_split, float eps2, float scale) {
  __shared__ float4 tile[nbody_tile];
  __shared__ __align__(16) float tile_e[nbody_tile];
  size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x * B + threadIdx.x;
  float xi[B], yi[B], zi[B], ax[B], ay[B], az[B];
  load_bodies<B>(pos, first, xi, yi, zi, ax, ay, az);
  int t0 = blockIdx.y * tiles_per_split;
  int t1 = min(tiles, t0 + tiles_per_split);
  for (int t = t0; t < t1; ++t) {
    for (int s = threadIdx.x; s < nbody_tile; s += blockDim.x) {
      float4 b = pos[static_cast<size_t>(t) * nbody_tile + s];
      float a, e;
      nbody_scale(b.w, eps2, a, e);
      tile[s] = make_float4(a * b.x, a, a * b.y, a * b.z);
      tile_e[s] = e;
    }
    __syncthreads();
#pragma unroll U
    for (int j = 0; j < nbody_tile; ++j) {
      float4 bj = tile[j];
      float xj = bj.x, aj = bj.y, yj = bj.z, zj = bj.w, ej = tile_e[j];
#pragma unroll
      for (int k = 0; k < B; ++k) {
        float dx, dy, dz;
        float s = scaled_term(xj, aj, yj, zj, ej, xi[k], yi[k], zi[k], dx, dy, dz);
        ax[k] = fmaf(dx, s, ax[k]);
        ay[k] = fmaf(dy, s, ay[k]);
        az[k] = fmaf(dz, s, az[k]);
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int k = 0; k < B; ++k) {
    size_t i = first + k * blockDim.x;
    int tile_i = static_cast<int>(i / nbody_tile);
    if (tile_i >= t0 && tile_i < t1) {
      float4 b = pos[i];
      float a, e;
      nbody_scale(b.w, eps2, a, e);
      float dx, dy, dz;
      float s = scaled_term(a * b.x, a, a * b.y, a * b.z, e, b.x, b.y, b.z, dx, dy, dz);
      // Rounded product, then difference: a lone body's sum is round(dx s), and this gives 0.
      ax[k] = __fsub_rn(ax[k], __fmul_rn(dx, s));
      ay[k] = __fsub_rn(ay[k], __fmul_rn(dy, s));
      az[k] = __fsub_rn(az[k], __fmul_rn(dz, s));
    }
  }
  float4 *dst = out + static_cast<size_t>(blockIdx.y) * n_pad;
#pragma unroll
  for (int k = 0; k < B; ++k)
    dst[first + k * blockDim.x] = make_float4(scale * ax[k], scale * ay[k], scale * az[k], 0.f);
}

// acc_i = G * sum over splits s (in order) of partial[s][i].
__global__ void nbody_sum_splits(const float4 *__restrict__ partial, float4 *__restrict__ acc,
                                 int n_pad, int splits, float G) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n_pad) return;
  float ax = 0.f, ay = 0.f, az = 0.f;
  for (int s = 0; s < splits; ++s) {
    float4 p = partial[static_cast<size_t>(s) * n_pad + i];
    ax += p.x;
    ay += p.y;
    az += p.z;
  }
  acc[i] = make_float4(G * ax, G * ay, G * az, 0.f);
}

// ---- variant 7: each pair once (Newton's third law) ----
// The force of j on i and of i on j share the difference, r^2 + eps2, the rsqrt and r^-3, so
// one pair costs 17 instructions for two interactions: 3 FADD, 3 FFMA, one MUFU, 4 FMUL (r^-3,
// then m_j r^-3 and m_i r^-3) and 6 FFMA (both sums). The cost is where the second sum goes.
// Chunks of pair_chunk bodies (32 lanes x 8) make bands of S chunks, M bands in all. Block
// (R, K), R <= K, takes every pair between band R (rows) and band K (columns): each lane holds
// 8 column bodies and their sums in registers, and one row body a lane circulates through the
// warp by shuffles, carrying its own sum, so that after 32 steps every row body of the slice has
// met every column body of the warp and is back on its lane: 7 shuffles every 8 pairs.
// Row sums of block (R, K) go to partial slot K and column sums to slot R: each slot of each
// body has one writer, in an order fixed by the block's barriers, and nbody_sum_splits adds the
// M slots in order, so the result is deterministic.
constexpr int pair_lane_bodies = 8;
constexpr int pair_chunk = 32 * pair_lane_bodies;
static_assert(pair_chunk == nbody_tile, "n_pad is a whole number of chunks");

// The column bodies of one lane: positions, masses and sums.
struct PairColumns {
  float x[pair_lane_bodies], y[pair_lane_bodies], z[pair_lane_bodies], m[pair_lane_bodies];
  float ax[pair_lane_bodies], ay[pair_lane_bodies], az[pair_lane_bodies];
};

// d = r_j - r_k for row body j and column body k, and (|d|^2 + eps2)^(-3/2): what the two
// terms of a pair share.
__device__ __forceinline__ float pair_inv3(float xj, float yj, float zj, const PairColumns &c,
                                           int k, float eps2, float &dx, float &dy, float &dz) {
  dx = xj - c.x[k];
  dy = yj - c.y[k];
  dz = zj - c.z[k];
  float inv = rsqrt_ftz(fmaf(dx, dx, fmaf(dy, dy, fmaf(dz, dz, eps2))));
  return inv * (inv * inv);
}

// Every pair between row chunk p and the warp's column chunk, both sums; slot[b] += row b's sum.
__device__ __forceinline__ void pair_rows(const float4 *__restrict__ pos, float4 *__restrict__ slot,
                                          int p, int lane, PairColumns &c, float eps2) {
  const int next = (lane + 1) & 31;
  for (int s = 0; s < pair_lane_bodies; ++s) {
    size_t b = static_cast<size_t>(p) * pair_chunk + s * 32 + lane;
    float4 row = pos[b];
    float xj = row.x, yj = row.y, zj = row.z, mj = row.w, axj = 0.f, ayj = 0.f, azj = 0.f;
    // Unroll 2: 4 ran 5% slower, 8 2% slower on the H200 (C probes, N = 131072).
#pragma unroll 2
    for (int step = 0; step < 32; ++step) {
#pragma unroll
      for (int k = 0; k < pair_lane_bodies; ++k) {
        float dx, dy, dz;
        float inv3 = pair_inv3(xj, yj, zj, c, k, eps2, dx, dy, dz);
        float on_column = mj * inv3, on_row = c.m[k] * inv3;
        c.ax[k] = fmaf(on_column, dx, c.ax[k]);
        c.ay[k] = fmaf(on_column, dy, c.ay[k]);
        c.az[k] = fmaf(on_column, dz, c.az[k]);
        axj = fmaf(-on_row, dx, axj);
        ayj = fmaf(-on_row, dy, ayj);
        azj = fmaf(-on_row, dz, azj);
      }
      xj = __shfl_sync(0xffffffffu, xj, next);
      yj = __shfl_sync(0xffffffffu, yj, next);
      zj = __shfl_sync(0xffffffffu, zj, next);
      mj = __shfl_sync(0xffffffffu, mj, next);
      axj = __shfl_sync(0xffffffffu, axj, next);
      ayj = __shfl_sync(0xffffffffu, ayj, next);
      azj = __shfl_sync(0xffffffffu, azj, next);
    }
    float4 sum = slot[b];
    slot[b] = make_float4(sum.x + axj, sum.y + ayj, sum.z + azj, 0.f);
  }
}

// The warp's column chunk against itself: the column sums only (the i = j term is 0).
__device__ __forceinline__ void pair_own_chunk(const float4 *__restrict__ pos, int q, int lane,
                                               PairColumns &c, float eps2) {
  const int next = (lane + 1) & 31;
  for (int s = 0; s < pair_lane_bodies; ++s) {
    float4 row = pos[static_cast<size_t>(q) * pair_chunk + s * 32 + lane];
    float xj = row.x, yj = row.y, zj = row.z, mj = row.w;
    for (int step = 0; step < 32; ++step) {
#pragma unroll
      for (int k = 0; k < pair_lane_bodies; ++k) {
        float dx, dy, dz;
        float on_column = mj * pair_inv3(xj, yj, zj, c, k, eps2, dx, dy, dz);
        c.ax[k] = fmaf(on_column, dx, c.ax[k]);
        c.ay[k] = fmaf(on_column, dy, c.ay[k]);
        c.az[k] = fmaf(on_column, dz, c.az[k]);
      }
      xj = __shfl_sync(0xffffffffu, xj, next);
      yj = __shfl_sync(0xffffffffu, yj, next);
      zj = __shfl_sync(0xffffffffu, zj, next);
      mj = __shfl_sync(0xffffffffu, mj, next);
    }
  }
}

// Block (R, K) of the M (M + 1) / 2 in row-major order of the upper triangle; W warps hold W
// column chunks of band K at a time and take band R's chunks in turn, warp w starting at chunk
// w so that no two warps add to one row chunk in a round, with a barrier between rounds. The
// launch bound keeps 128 registers a thread (123 used): 16 warps an SM.
template <int W>
__global__ void __launch_bounds__(32 * W, 16 / W)
    nbody_pairs(const float4 *__restrict__ pos, float4 *__restrict__ partial, int n_pad,
                int band_chunks, int bands, float eps2) {
  const int chunks = n_pad / pair_chunk, S = band_chunks;
  int R = 0, rest = static_cast<int>(blockIdx.x);
  while (rest >= bands - R) rest -= bands - R++;
  const int K = R + rest;
  const bool diagonal = R == K;
  const int w = static_cast<int>(threadIdx.x) >> 5, lane = static_cast<int>(threadIdx.x) & 31;
  float4 *row_slot = partial + static_cast<size_t>(K) * n_pad;
  float4 *column_slot = partial + static_cast<size_t>(R) * n_pad;
  const size_t rows_first = static_cast<size_t>(R) * S * pair_chunk;
  for (size_t i = threadIdx.x; i < static_cast<size_t>(S) * pair_chunk; i += blockDim.x)
    if (rows_first + i < static_cast<size_t>(n_pad))
      row_slot[rows_first + i] = make_float4(0.f, 0.f, 0.f, 0.f);
  __syncthreads();
  for (int batch = 0; batch * W < S; ++batch) {
    const int q = K * S + batch * W + w;
    const bool has_column = batch * W + w < S && q < chunks;
    PairColumns c;
#pragma unroll
    for (int k = 0; k < pair_lane_bodies; ++k) {
      float4 b = has_column ? pos[static_cast<size_t>(q) * pair_chunk + k * 32 + lane]
                            : make_float4(0.f, 0.f, 0.f, 0.f);
      c.x[k] = b.x;
      c.y[k] = b.y;
      c.z[k] = b.z;
      c.m[k] = b.w;
      c.ax[k] = c.ay[k] = c.az[k] = 0.f;
    }
    for (int round = 0; round < S; ++round) {
      const int p = R * S + (w + round) % S;
      if (has_column && p < chunks && (!diagonal || p <= q)) {
        if (p == q)
          pair_own_chunk(pos, q, lane, c, eps2);
        else
          pair_rows(pos, row_slot, p, lane, c, eps2);
      }
      __syncthreads();
    }
    if (has_column) {
#pragma unroll
      for (int k = 0; k < pair_lane_bodies; ++k) {
        size_t b = static_cast<size_t>(q) * pair_chunk + k * 32 + lane;
        float4 sum = make_float4(c.ax[k], c.ay[k], c.az[k], 0.f);
        if (diagonal) {  // the slot also holds this chunk's row sums
          float4 rows = column_slot[b];
          sum = make_float4(rows.x + sum.x, rows.y + sum.y, rows.z + sum.z, 0.f);
        }
        column_slot[b] = sum;
      }
    }
    __syncthreads();  // a diagonal block's next batch adds to these rows
  }
}

// ---- variants 5 and 6's instances: bodies per thread B and j unroll U ----
using MultibodyKernel = void (*)(const float4 *, float4 *, int, int, int, float, float);
using ResidentBlocks = int (*)(int block, size_t *blocks);

struct MultibodyInstance {
  int bodies, unroll;
  MultibodyKernel kernel;
  ResidentBlocks resident;
};

template <int B, int U>
constexpr MultibodyInstance multibody_instance() {
  return {B, U, nbody_multibody<B, U>, glc_full_wave_blocks<nbody_multibody<B, U>>};
}

template <int B, int U>
constexpr MultibodyInstance scaled_instance() {
  return {B, U, nbody_scaled<B, U>, glc_full_wave_blocks<nbody_scaled<B, U>>};
}

constexpr MultibodyInstance multibody_instances[] = {
    multibody_instance<1, 1>(), multibody_instance<1, 2>(), multibody_instance<1, 4>(),
    multibody_instance<1, 8>(), multibody_instance<2, 1>(), multibody_instance<2, 2>(),
    multibody_instance<2, 4>(), multibody_instance<2, 8>(), multibody_instance<4, 1>(),
    multibody_instance<4, 2>(), multibody_instance<4, 4>(), multibody_instance<4, 8>(),
    multibody_instance<8, 1>(), multibody_instance<8, 2>(), multibody_instance<8, 4>(),
    multibody_instance<8, 8>(),
};

constexpr MultibodyInstance scaled_instances[] = {
    scaled_instance<1, 4>(), scaled_instance<1, 8>(), scaled_instance<2, 4>(),
    scaled_instance<2, 8>(), scaled_instance<4, 4>(), scaled_instance<4, 8>(),
    scaled_instance<8, 4>(), scaled_instance<8, 8>(),
};

template <size_t N>
const MultibodyInstance *find_instance(const MultibodyInstance (&table)[N], int bodies,
                                       int unroll) {
  for (const MultibodyInstance &m : table)
    if (m.bodies == bodies && m.unroll == unroll) return &m;
  return nullptr;
}

const MultibodyInstance *find_multibody(int variant, int bodies, int unroll) {
  return variant == 6 ? find_instance(scaled_instances, bodies, unroll)
                      : find_instance(multibody_instances, bodies, unroll);
}

// Variant 5's defaults, the fastest of benchmarks/nbody_tune.cu's sweep on the H200 at both
// N = 131072 and 16384 (docs/labs/nbody.md): 8 bodies a thread and 128 threads (the table's
// defaults), the j loop unrolled 4 times at 8 bodies and 8 times below. Variant 6 unrolls 8 times
// (4 ran 2% slower on the H200).
constexpr int v5_default_bodies = 8;
constexpr int v5_default_unroll(int variant, int bodies) {
  return variant == 6 || bodies < 8 ? 8 : 4;
}
constexpr int default_unroll = 4;  // variants 1, 3, 4

// The j split of variant 5: the number of parts s (1 <= s <= tiles, at most max_splits) that
// keeps the GPU busiest, counting whole waves of resident blocks and whole tiles per part.
// More parts mean more blocks but also more partial sums to write and add up.
constexpr int max_splits = 64;

int choose_splits(const MultibodyInstance &m, int block, size_t i_blocks, int tiles, int *splits) {
  size_t resident = 0;
  int code = m.resident(block, &resident);
  if (code != cudaSuccess) return code;
  double best = -1.0;
  *splits = 1;
  for (int s = 1; s <= max_splits && s <= tiles; ++s) {
    int per_split = (tiles + s - 1) / s;
    if (s > 1 && (tiles + per_split - 1) / per_split != s) continue;  // an empty part
    double waves = static_cast<double>(i_blocks) * s / static_cast<double>(resident);
    double wave_use = waves / static_cast<double>(static_cast<size_t>(waves + 0.999999));
    double tile_use = static_cast<double>(tiles) / (static_cast<double>(s) * per_split);
    double use = wave_use * tile_use;
    if (use > best + 1e-3) {  // ties go to fewer parts
      best = use;
      *splits = s;
    }
  }
  return cudaSuccess;
}

bool one_of(int value, std::initializer_list<int> allowed) {
  for (int a : allowed)
    if (a == value) return true;
  return false;
}

size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

// The unrolled kernels of variants 1, 3 and 4, by unroll factor.
struct NaiveUnrolled {
  template <int U>
  static constexpr auto kernel = nbody_naive_unrolled<U>;
};
struct Tiled {
  template <int U>
  static constexpr auto kernel = nbody_tiled<U>;
};
struct TiledSoa {
  template <int U>
  static constexpr auto kernel = nbody_tiled_soa<U>;
};

// Launches K::kernel<U> for the U of Us that equals p.unroll (nbody_plan admits no other).
template <typename K, int... Us, typename S, typename A>
int launch_unrolled(std::integer_sequence<int, Us...>, const NBodyPlan &p, const char *name,
                    unsigned grid, cudaStream_t stream, S state, A acc, float eps2, float G) {
  int code = cudaSuccess;
  int n_pad = static_cast<int>(p.n_pad);
  bool launched =
      ((p.unroll == Us && ((code = glc_launch(K::template kernel<Us>, name, grid, p.block, stream,
                                              state, acc, n_pad, eps2, G)),
                           true)) ||
       ...);
  return launched ? code : glc_fail(cudaErrorInvalidValue, name);
}

template <typename K, typename S, typename A>
int launch_unrolled(const NBodyPlan &p, const char *name, unsigned grid, cudaStream_t stream,
                    S state, A acc, float eps2, float G) {
  return launch_unrolled<K>(std::integer_sequence<int, 1, 2, 4, 8, 16>{}, p, name, grid, stream,
                            state, acc, eps2, G);
}

// Variant 7's shape: at most pair_max_bands bands (M (M + 1) / 2 blocks: 2080 at 64, about 8
// waves of 2 blocks of 8 warps an SM on the H200) and at most pair_max_partial_bytes of partial
// sums (1 KiB a body at 64 bands), which leaves 32 bands at 2^24 bodies: 528 blocks, still two
// waves (16 would make 136, one block on most SMs and two on four). Blocks have as many warps
// (up to 8) as divide the chunks of a band, so that no warp waits out a batch.
constexpr size_t pair_max_bands = 64;
constexpr size_t pair_max_partial_bytes = size_t{1} << 33;

int pair_plan(int block, int unroll, int bodies, size_t n, NBodyPlan *plan) {
  if (block != 0) return glc_fail(cudaErrorInvalidValue, "glc_nbody(block)");
  if (unroll != 0) return glc_fail(cudaErrorInvalidValue, "glc_nbody(unroll)");
  if (bodies != 0) return glc_fail(cudaErrorInvalidValue, "glc_nbody(bodies)");
  size_t n_pad = round_up(n, pair_chunk), chunks = n_pad / pair_chunk;
  size_t max_bands = pair_max_partial_bytes / (n_pad * sizeof(float4));
  if (max_bands > pair_max_bands) max_bands = pair_max_bands;
  size_t band_chunks = (chunks + max_bands - 1) / max_bands;
  int bands = static_cast<int>((chunks + band_chunks - 1) / band_chunks);
  int warps = band_chunks % 8 == 0 ? 8 : band_chunks % 4 == 0 ? 4 : band_chunks % 2 == 0 ? 2 : 1;
  *plan = NBodyPlan{7, 32 * warps, 1, 1, n, n_pad, bands, 4, 1, static_cast<int>(band_chunks)};
  return cudaSuccess;
}

int launch_pairs(const NBodyPlan &p, const float4 *pos, float4 *partial, float eps2,
                 cudaStream_t stream) {
  unsigned blocks = static_cast<unsigned>(p.splits * (p.splits + 1) / 2);
  int n_pad = static_cast<int>(p.n_pad);
  auto launch = [&](auto kernel) {
    return glc_launch(kernel, "nbody_pairs", blocks, p.block, stream, pos, partial, n_pad,
                      p.band_chunks, p.splits, eps2);
  };
  switch (p.block / 32) {
    case 1:
      return launch(nbody_pairs<1>);
    case 2:
      return launch(nbody_pairs<2>);
    case 4:
      return launch(nbody_pairs<4>);
    case 8:
      return launch(nbody_pairs<8>);
    default:
      return glc_fail(cudaErrorInvalidValue, "nbody_pairs(block)");
  }
}

}  // namespace

int nbody_plan(int variant, int block, int unroll, int bodies, size_t n, NBodyPlan *plan) {
  const char *call = "glc_nbody(arguments)";
  if (variant < 0 || variant > 7) return glc_fail(cudaErrorInvalidValue, "glc_nbody(variant)");
  if (n == 0 || n > nbody_max_bodies) return glc_fail(cudaErrorInvalidValue, call);
  if (variant == 7) return pair_plan(block, unroll, bodies, n, plan);
  bool multibody = variant == 5 || variant == 6;
  int max_block = multibody ? v5_max_block : 1024;
  if (block < 32 || block > max_block || (block & (block - 1)) != 0)
    return glc_fail(cudaErrorInvalidValue, "glc_nbody(block)");
  bool unrolled = variant == 1 || variant == 3 || variant == 4 || multibody;
  if (bodies == 0) bodies = multibody ? v5_default_bodies : 1;
  if (unroll == 0)
    unroll = !unrolled ? 1 : multibody ? v5_default_unroll(variant, bodies) : default_unroll;
  if (!unrolled && unroll != 1) return glc_fail(cudaErrorInvalidValue, "glc_nbody(unroll)");
  if (!multibody && bodies != 1) return glc_fail(cudaErrorInvalidValue, "glc_nbody(bodies)");
  if (multibody ? !find_multibody(variant, bodies, unroll) : !one_of(unroll, {1, 2, 4, 8, 16}))
    return glc_fail(cudaErrorInvalidValue, "glc_nbody(unroll)");
  *plan = NBodyPlan{variant, block, unroll, bodies, n, 0, 1, 4, 1, 0};
  // Both are powers of two, so the larger is a multiple of the other; a tile is a multiple of
  // every unroll.
  size_t block_span = static_cast<size_t>(block) * bodies;
  plan->n_pad = round_up(n, block_span > nbody_tile ? block_span : nbody_tile);
  if (variant == 4) {
    plan->body_stride = 1;
    plan->comp_stride = plan->n_pad;
  }
  if (multibody) {
    int tiles = static_cast<int>(plan->n_pad / nbody_tile);
    return choose_splits(*find_multibody(variant, bodies, unroll), block, plan->n_pad / block_span,
                         tiles, &plan->splits);
  }
  return cudaSuccess;
}

int nbody_accel_state(const NBodyPlan &p, const float *state, float *acc, float *partial,
                      float eps2, float G, cudaStream_t stream) {
  const float4 *pos = reinterpret_cast<const float4 *>(state);
  float4 *acc4 = reinterpret_cast<float4 *>(acc);
  int n_pad = static_cast<int>(p.n_pad);
  constexpr int sum_block = 256;
  auto sum_splits = [&](const float4 *partial4) {
    return glc_launch(nbody_sum_splits, "nbody_sum_splits",
                      static_cast<unsigned>(glc_blocks_to_cover(p.n_pad, sum_block)), sum_block,
                      stream, partial4, acc4, n_pad, p.splits, G);
  };
  if (p.variant == 7) {
    if (partial == nullptr) return glc_fail(cudaErrorInvalidValue, "nbody_accel_state(partial)");
    float4 *partial4 = reinterpret_cast<float4 *>(partial);
    int code = launch_pairs(p, pos, partial4, eps2, stream);
    return code != cudaSuccess ? code : sum_splits(partial4);
  }
  unsigned grid = static_cast<unsigned>(p.n_pad / (static_cast<size_t>(p.block) * p.bodies));
  switch (p.variant) {
    case 0:
      return glc_launch(nbody_naive, "nbody_naive", grid, p.block, stream, pos, acc4, n_pad, eps2,
                        G);
    case 1:
      return launch_unrolled<NaiveUnrolled>(p, "nbody_naive_unrolled", grid, stream, pos, acc4,
                                            eps2, G);
    case 2:
      return glc_launch(nbody_tiled<1>, "nbody_tiled", grid, p.block, stream, pos, acc4, n_pad,
                        eps2, G);
    case 3:
      return launch_unrolled<Tiled>(p, "nbody_tiled", grid, stream, pos, acc4, eps2, G);
    case 4:
      return launch_unrolled<TiledSoa>(p, "nbody_tiled_soa", grid, stream, state, acc, eps2, G);
    default:
      break;
  }
  const MultibodyInstance *m = find_multibody(p.variant, p.bodies, p.unroll);
  const char *name = p.variant == 6 ? "nbody_scaled" : "nbody_multibody";
  int tiles = n_pad / nbody_tile;
  int per_split = (tiles + p.splits - 1) / p.splits;
  dim3 grid2(grid, static_cast<unsigned>(p.splits));
  if (p.splits == 1)
    return glc_launch(m->kernel, name, grid2, p.block, stream, pos, acc4, n_pad, tiles, per_split,
                      eps2, G);
  if (partial == nullptr) return glc_fail(cudaErrorInvalidValue, "nbody_accel_state(partial)");
  float4 *partial4 = reinterpret_cast<float4 *>(partial);
  int code = glc_launch(m->kernel, name, grid2, p.block, stream, pos, partial4, n_pad, tiles,
                        per_split, eps2, 1.0f);
  return code != cudaSuccess ? code : sum_splits(partial4);
}
