/* The CPU n-body variants. Plain C, no Python. float32 positions (n x 3), velocities (n x 3) and
 * masses (n); eps2 > 0. Functions return 0, or -1 for an unknown variant or when scratch memory
 * cannot be allocated. */
#ifndef GPULAB_CPU_NBODY_H
#define GPULAB_CPU_NBODY_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* acc_i = G sum_j m_j (r_j - r_i) / (|r_j - r_i|^2 + eps2)^(3/2). variant 100: naive AoS double
 * loop; 101: SoA, blocks of i vectorized by gcc; 102: 101 with OpenMP threads over the blocks and
 * 'omp simd' inside. */
int glcpu_nbody_accel(int variant, size_t n, const float *pos, const float *mass, float eps2,
                      float G, float *acc);

/* `steps` kick-drift-kick leapfrog steps of dt; pos_out and vel_out may be pos and vel. */
int glcpu_nbody_step(int variant, size_t n, const float *pos, const float *vel, const float *mass,
                     float dt, float eps2, float G, long long steps, float *pos_out,
                     float *vel_out);

/* Kinetic and potential energy (pairs once), in float64. */
void glcpu_nbody_energy(size_t n, const float *pos, const float *vel, const float *mass, float eps2,
                        double G, double *kinetic, double *potential);

#ifdef __cplusplus
}
#endif
#endif
