/* The n-body lab's C ABI: accelerations, leapfrog steps and energy.
 * Every function returns a CUDA error code, as cuda/core/gpulab_core.h says. */
#ifndef GPULAB_CUDA_NBODY_H
#define GPULAB_CUDA_NBODY_H

#include "cuda/core/gpulab_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Softened all-pairs accelerations:
 *   acc_i = G * sum_j m_j (r_j - r_i) / (|r_j - r_i|^2 + eps2)^(3/2),
 * where the i = j term vanishes because eps2 > 0 (a positive normal float). pos and acc are
 * n x 3 row-major, mass is n; all float32, 1 <= n <= 2^24 (n = 0 does nothing).
 * variant 0 naive AoS, 1 naive + unrolled j loop, 2 shared-memory tiles, 3 tiles + unroll,
 * 4 tiles on an SoA layout, 5 several bodies per thread, 6 variant 5 on mass-scaled coordinates,
 * 7 each pair once (both bodies' sums from one interaction).
 * block: threads per block (powers of two, 32..1024; variants 5 and 6 32..256; variant 7 takes 0
 * and picks its own). unroll: the j-loop unroll of variants 1, 3, 4 (1..16), 5 (1..8) and 6 (4,
 * 8), 0 for the variant's default, 1 for variants 0 and 2, 0 for 7. bodies: bodies per thread of
 * variants 5 and 6 (1, 2, 4, 8), 0 for the default, 1 for variants 0-4, 0 for 7. Asynchronous on
 * stream. */
GLC_API int glc_nbody_accel(int variant, int block, int unroll, int bodies, size_t n,
                            const float *pos, const float *mass, float eps2, float G, float *acc,
                            glc_stream stream);
/* `steps` leapfrog (kick-drift-kick) steps of dt with the accelerations of glc_nbody_accel, all on
 * the device: pos_out, vel_out (n x 3; they may be pos and vel themselves) receive the state
 * after the last step. steps >= 0. Asynchronous on stream. */
GLC_API int glc_nbody_step(int variant, int block, int unroll, int bodies, size_t n,
                           const float *pos, const float *vel, const float *mass, float dt,
                           float eps2, float G, long long steps, float *pos_out, float *vel_out,
                           glc_stream stream);
/* energy (device memory, 2 doubles) = {kinetic, potential}: sum m v^2 / 2 and
 * -G sum_{i<j} m_i m_j / sqrt(r_ij^2 + eps2), accumulated in float64. Asynchronous on stream. */
GLC_API int glc_nbody_energy(size_t n, const float *pos, const float *vel, const float *mass,
                             float eps2, double G, double *energy, glc_stream stream);

#ifdef __cplusplus
}
#endif
#endif
