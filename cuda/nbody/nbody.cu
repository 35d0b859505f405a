// The n-body ABI: accelerations of (n, 3) positions, and the leapfrog (kick-drift-kick)
// integrator that runs every step on the device. Both pack the caller's (n, 3) and (n,) arrays
// into the padded state of state.cuh, run, and unpack; the kernels are in accel.cu.
#include <cuda_runtime.h>

#include <cfloat>
#include <cmath>
#include <cstddef>

#include "cuda/core/errors.cuh"
#include "nbody.h"
#include "cuda/core/launch.cuh"
#include "state.cuh"

namespace {

constexpr int pack_block = 256;

// state[k * cs + i * bs] = component k of body i: x, y, z from xyz (n x 3) and w from w_of (n),
// or zero without it; zero for the padding bodies i >= n.
__global__ void nbody_pack(int n, int n_pad, const float *__restrict__ xyz,
                           const float *__restrict__ w_of, float *__restrict__ state, size_t bs,
                           size_t cs) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n_pad) return;
  bool real = i < n;
  size_t at = static_cast<size_t>(i) * bs;
  for (int k = 0; k < 3; ++k) state[k * cs + at] = real ? xyz[3 * static_cast<size_t>(i) + k] : 0.f;
  state[3 * cs + at] = real && w_of ? w_of[i] : 0.f;
}

// xyz (n x 3) = components 0..2 of the first n bodies of state.
__global__ void nbody_unpack(int n, const float *__restrict__ state, float *__restrict__ xyz,
                             size_t bs, size_t cs) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  size_t at = static_cast<size_t>(i) * bs;
  for (int k = 0; k < 3; ++k) xyz[3 * static_cast<size_t>(i) + k] = state[k * cs + at];
}

// The first half of a leapfrog step: v += a * dt/2, then x += v * dt (the real bodies only:
// the padding stays at rest at the origin).
__global__ void nbody_kick_drift(int n, float *__restrict__ pos, float *__restrict__ vel,
                                 const float *__restrict__ acc, float half_dt, float dt, size_t bs,
                                 size_t cs) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  size_t at = static_cast<size_t>(i) * bs;
  for (int k = 0; k < 3; ++k) {
    float v = fmaf(acc[k * cs + at], half_dt, vel[k * cs + at]);
    vel[k * cs + at] = v;
    pos[k * cs + at] = fmaf(v, dt, pos[k * cs + at]);
  }
}

// The closing half kick: v += a * dt/2.
__global__ void nbody_kick(int n, float *__restrict__ vel, const float *__restrict__ acc,
                           float half_dt, size_t bs, size_t cs) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  size_t at = static_cast<size_t>(i) * bs;
  for (int k = 0; k < 3; ++k) vel[k * cs + at] = fmaf(acc[k * cs + at], half_dt, vel[k * cs + at]);
}

// eps2 is squared into r^2 + eps2 in every interaction: it must be a positive normal float so
// that the sum is never zero (which would make the i = j term 0 * inf).
bool eps2_ok(float eps2) { return std::isfinite(eps2) && eps2 >= FLT_MIN; }

// The device buffers of one call, from the stream-ordered pool, freed on the same stream.
struct NBodyBuffers {
  float *block = nullptr;
  float *state = nullptr, *vel = nullptr, *acc = nullptr, *partial = nullptr;
  cudaStream_t stream;

  explicit NBodyBuffers(cudaStream_t s) : stream(s) {}
  NBodyBuffers(const NBodyBuffers &) = delete;
  NBodyBuffers &operator=(const NBodyBuffers &) = delete;
  ~NBodyBuffers() {
    if (block) glc_free_async(block, stream);
  }

  int allocate(const NBodyPlan &p, bool with_velocities) {
    size_t floats = nbody_state_floats(p);
    size_t total = floats * (with_velocities ? 3 : 2) + nbody_partial_floats(p);
    int code = glc_malloc_async(reinterpret_cast<void **>(&block), total * sizeof(float), stream);
    if (code != cudaSuccess) return code;
    state = block;
    acc = state + floats;
    vel = with_velocities ? acc + floats : nullptr;
    float *end = acc + floats * (with_velocities ? 2 : 1);
    partial = nbody_partial_floats(p) ? end : nullptr;
    return cudaSuccess;
  }
};

unsigned pack_grid(size_t count) {
  return static_cast<unsigned>(glc_blocks_to_cover(count, pack_block));
}

int pack(const NBodyPlan &p, const float *xyz, const float *w, float *state, cudaStream_t s) {
  return glc_launch(nbody_pack, "nbody_pack", pack_grid(p.n_pad), pack_block, s,
                    static_cast<int>(p.n), static_cast<int>(p.n_pad), xyz, w, state, p.body_stride,
                    p.comp_stride);
}

int unpack(const NBodyPlan &p, const float *state, float *xyz, cudaStream_t s) {
  return glc_launch(nbody_unpack, "nbody_unpack", pack_grid(p.n), pack_block, s,
                    static_cast<int>(p.n), state, xyz, p.body_stride, p.comp_stride);
}

}  // namespace

extern "C" int glc_nbody_accel(int variant, int block, int unroll, int bodies, size_t n,
                               const float *pos, const float *mass, float eps2, float G, float *acc,
                               glc_stream stream) {
  if (n == 0) return cudaSuccess;
  NBodyPlan plan;
  int code = nbody_plan(variant, block, unroll, bodies, n, &plan);
  if (code != cudaSuccess) return code;
  if (!eps2_ok(eps2) || !std::isfinite(G) || !glc_all_aligned(sizeof(float), pos, mass, acc))
    return glc_fail(cudaErrorInvalidValue, "glc_nbody_accel(arguments)");
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  NBodyBuffers buf(s);
  if ((code = buf.allocate(plan, false)) != cudaSuccess) return code;
  if ((code = pack(plan, pos, mass, buf.state, s)) != cudaSuccess) return code;
  if ((code = nbody_accel_state(plan, buf.state, buf.acc, buf.partial, eps2, G, s)) != cudaSuccess)
    return code;
  return unpack(plan, buf.acc, acc, s);
}

extern "C" int glc_nbody_step(int variant, int block, int unroll, int bodies, size_t n,
                              const float *pos, const float *vel, const float *mass, float dt,
                              float eps2, float G, long long steps, float *pos_out, float *vel_out,
                              glc_stream stream) {
  if (n == 0) return cudaSuccess;
  NBodyPlan plan;
  int code = nbody_plan(variant, block, unroll, bodies, n, &plan);
  if (code != cudaSuccess) return code;
  if (!eps2_ok(eps2) || !std::isfinite(G) || !std::isfinite(dt) || steps < 0 ||
      !glc_all_aligned(sizeof(float), pos, vel, mass, pos_out, vel_out))
    return glc_fail(cudaErrorInvalidValue, "glc_nbody_step(arguments)");
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  NBodyBuffers buf(s);
  if ((code = buf.allocate(plan, true)) != cudaSuccess) return code;
  if ((code = pack(plan, pos, mass, buf.state, s)) != cudaSuccess) return code;
  if ((code = pack(plan, vel, nullptr, buf.vel, s)) != cudaSuccess) return code;
  int n_int = static_cast<int>(n);
  float half_dt = 0.5f * dt;
  // Each step's closing kick and the next step's opening kick could be fused into one; they are
  // kept apart so that the velocities between calls are the synchronised (full-step) ones.
  if (steps > 0 &&
      (code = nbody_accel_state(plan, buf.state, buf.acc, buf.partial, eps2, G, s)) != cudaSuccess)
    return code;
  for (long long k = 0; k < steps; ++k) {
    code = glc_launch(nbody_kick_drift, "nbody_kick_drift", pack_grid(n), pack_block, s, n_int,
                      buf.state, buf.vel, buf.acc, half_dt, dt, plan.body_stride, plan.comp_stride);
    if (code != cudaSuccess) return code;
    code = nbody_accel_state(plan, buf.state, buf.acc, buf.partial, eps2, G, s);
    if (code != cudaSuccess) return code;
    code = glc_launch(nbody_kick, "nbody_kick", pack_grid(n), pack_block, s, n_int, buf.vel,
                      buf.acc, half_dt, plan.body_stride, plan.comp_stride);
    if (code != cudaSuccess) return code;
  }
  if ((code = unpack(plan, buf.state, pos_out, s)) != cudaSuccess) return code;
  return unpack(plan, buf.vel, vel_out, s);
}
