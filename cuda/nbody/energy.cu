// Total energy of an n-body system on the device: kinetic sum_i m_i v_i^2 / 2 and the softened
// potential -G sum_{i<j} m_i m_j / sqrt(r_ij^2 + eps2), each pair counted once (the sum over
// i != j, halved). Pair terms are float32; every sum is float64, in a fixed order (per-block
// partial sums, then one block adds them up), so the result is deterministic.
#include <cuda_runtime.h>

#include <cfloat>
#include <cmath>
#include <cstddef>

#include "cuda/core/errors.cuh"
#include "nbody.h"
#include "cuda/core/launch.cuh"

namespace {

constexpr int energy_block = 256;
// Blocks of the first pass at most (a grid-stride loop covers larger n).
constexpr int energy_max_blocks = 4096;

// Sums v[0..block) of the block into v[0] (double, fixed tree order).
__device__ void block_sum(double *v) {
  for (int half = energy_block / 2; half > 0; half /= 2) {
    __syncthreads();
    if (threadIdx.x < half) v[threadIdx.x] += v[threadIdx.x + half];
  }
  __syncthreads();
}

// partial[2 b] = kinetic and partial[2 b + 1] = sum_i m_i sum_{j != i} m_j / r_ij of block b's
// bodies.
__global__ void __launch_bounds__(energy_block)
    nbody_energy_partial(int n, const float *__restrict__ pos, const float *__restrict__ vel,
                         const float *__restrict__ mass, float eps2, double *__restrict__ partial) {
  __shared__ double kin[energy_block], pot[energy_block];
  double k_sum = 0.0, p_sum = 0.0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    float xi = pos[3 * i], yi = pos[3 * i + 1], zi = pos[3 * i + 2];
    double phi = 0.0;
    for (int j = 0; j < n; ++j) {
      if (j == i) continue;
      float dx = pos[3 * j] - xi, dy = pos[3 * j + 1] - yi, dz = pos[3 * j + 2] - zi;
      float r2 = fmaf(dx, dx, fmaf(dy, dy, fmaf(dz, dz, eps2)));
      phi += static_cast<double>(mass[j]) / static_cast<double>(sqrtf(r2));
    }
    double m = mass[i];
    double vx = vel[3 * i], vy = vel[3 * i + 1], vz = vel[3 * i + 2];
    k_sum += 0.5 * m * (vx * vx + vy * vy + vz * vz);
    p_sum += m * phi;
  }
  kin[threadIdx.x] = k_sum;
  pot[threadIdx.x] = p_sum;
  block_sum(kin);
  block_sum(pot);
  if (threadIdx.x == 0) {
    partial[2 * blockIdx.x] = kin[0];
    partial[2 * blockIdx.x + 1] = pot[0];
  }
}

// out[0] = kinetic, out[1] = -G/2 * the potential sums of the blocks.
__global__ void __launch_bounds__(energy_block)
    nbody_energy_total(int blocks, const double *__restrict__ partial, double G,
                       double *__restrict__ out) {
  __shared__ double kin[energy_block], pot[energy_block];
  double k_sum = 0.0, p_sum = 0.0;
  for (int b = threadIdx.x; b < blocks; b += blockDim.x) {
    k_sum += partial[2 * b];
    p_sum += partial[2 * b + 1];
  }
  kin[threadIdx.x] = k_sum;
  pot[threadIdx.x] = p_sum;
  block_sum(kin);
  block_sum(pot);
  if (threadIdx.x == 0) {
    out[0] = kin[0];
    out[1] = -0.5 * G * pot[0];
  }
}

}  // namespace

extern "C" int glc_nbody_energy(size_t n, const float *pos, const float *vel, const float *mass,
                                float eps2, double G, double *energy, glc_stream stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (!std::isfinite(eps2) || eps2 < FLT_MIN || !std::isfinite(G) || n > (size_t{1} << 24) ||
      !glc_all_aligned(sizeof(double), energy))
    return glc_fail(cudaErrorInvalidValue, "glc_nbody_energy(arguments)");
  if (n == 0) return GLC_CUDA(cudaMemsetAsync, energy, 0, 2 * sizeof(double), s);
  if (!glc_all_aligned(sizeof(float), pos, vel, mass))
    return glc_fail(cudaErrorInvalidValue, "glc_nbody_energy(pointers)");
  size_t blocks = glc_blocks_to_cover(n, energy_block);
  if (blocks > energy_max_blocks) blocks = energy_max_blocks;
  double *partial = nullptr;
  int code = glc_malloc_async(reinterpret_cast<void **>(&partial), 2 * blocks * sizeof(double), s);
  if (code != cudaSuccess) return code;
  code = glc_launch(nbody_energy_partial, "nbody_energy_partial", static_cast<unsigned>(blocks),
                    energy_block, s, static_cast<int>(n), pos, vel, mass, eps2, partial);
  if (code == cudaSuccess)
    code = glc_launch(nbody_energy_total, "nbody_energy_total", 1, energy_block, s,
                      static_cast<int>(blocks), partial, G, energy);
  int freed = glc_free_async(partial, s);
  return code != cudaSuccess ? code : freed;
}
