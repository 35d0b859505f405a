// Internal to cuda/nbody/: what the n-body files share. The bodies live on the device in a padded
// "state" of 4 floats per body (x, y, z, mass), either interleaved (AoS, float4) or as four
// arrays of n_pad floats (SoA, variant 4 only). Padding bodies have zero mass and sit at the
// origin: with eps2 > 0 they add exactly zero to every sum, so no kernel needs a tail check.
#ifndef GPULAB_NBODY_CUH
#define GPULAB_NBODY_CUH

#include <cuda_runtime.h>

#include <cstddef>

// Bodies per shared-memory tile of the tiled variants (2..5), whatever the block size: a fixed
// tile keeps the shared memory static (4 KiB) and lets any block size use it.
constexpr int nbody_tile = 256;

// The largest n the lab accepts: 2^24 bodies is already 2.8e14 interactions per evaluation.
constexpr size_t nbody_max_bodies = size_t{1} << 24;

// A checked launch configuration of one variant for n bodies.
struct NBodyPlan {
  int variant;
  int block;
  int unroll;
  int bodies;  // bodies per thread (variants 5 and 6; 1 otherwise)
  size_t n;
  size_t n_pad;  // n rounded up to the i-range of a block and to the tile
  int splits;    // variants 5, 6: parts of the j range summed by separate blocks; 7: bands; else 1
  // Where component k of body i sits in the state: k * comp_stride + i * body_stride floats.
  size_t body_stride, comp_stride;
  int band_chunks;  // variant 7: chunks of 256 bodies a band (its bands are `splits`)
};

// Checks the arguments (variant, block, unroll, bodies, n) and fills *plan, with 0 for unroll
// or bodies meaning the variant's default. Returns cudaErrorInvalidValue (recorded) if refused.
int nbody_plan(int variant, int block, int unroll, int bodies, size_t n, NBodyPlan *plan);

// Floats of one state buffer (4 per padded body), and of variants 5, 6 and 7's partial sums.
inline size_t nbody_state_floats(const NBodyPlan &p) { return 4 * p.n_pad; }
inline size_t nbody_partial_floats(const NBodyPlan &p) {
  return p.splits > 1 || p.variant == 7 ? 4 * p.n_pad * static_cast<size_t>(p.splits) : 0;
}

// acc = G * softened all-pairs acceleration of the bodies in state (same layout as the state;
// the fourth component is zero). partial: nbody_partial_floats(plan) floats of scratch, or null
// when that is zero.
int nbody_accel_state(const NBodyPlan &plan, const float *state, float *acc, float *partial,
                      float eps2, float G, cudaStream_t stream);

#endif
