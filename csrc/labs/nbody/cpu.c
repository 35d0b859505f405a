/* Softened all-pairs accelerations on the host: the naive AoS loop (100), an SoA form that gcc
 * vectorizes (101), and that form on every core (102); plus the leapfrog and the energy.
 *
 * 101 and 102 turn the loop nest around: for a block of i (in L1), the outer loop walks j and the
 * inner loop updates every i of the block, so the vectorized loop has no reduction (gcc vectorizes
 * float reductions only with -ffast-math, which the naive j-inner form would need). Each
 * acceleration is still summed over j in increasing order, so every variant is deterministic.
 * The vectorized loop needs -fno-math-errno (setup.py): a sqrtf that may set errno cannot be
 * vectorized. */
#include "cpu.h"

#include <stdlib.h>
#include <string.h>
#include <math.h>

/* Bodies of one i block of 101/102: 7 arrays of 256 floats (7 KiB) stay in L1 while j walks all
 * n bodies. */
#define NBODY_CPU_BLOCK 256

static void accel_naive(size_t n, const float *pos, const float *mass, float eps2, float G,
                        float *acc) {
  for (size_t i = 0; i < n; ++i) {
    float ax = 0.f, ay = 0.f, az = 0.f;
    for (size_t j = 0; j < n; ++j) {
      float dx = pos[3 * j] - pos[3 * i], dy = pos[3 * j + 1] - pos[3 * i + 1],
            dz = pos[3 * j + 2] - pos[3 * i + 2];
      float r2 = dx * dx + dy * dy + dz * dz + eps2;
      float inv = 1.0f / sqrtf(r2);
      float s = mass[j] * inv * inv * inv;
      ax += dx * s;
      ay += dy * s;
      az += dz * s;
    }
    acc[3 * i] = G * ax;
    acc[3 * i + 1] = G * ay;
    acc[3 * i + 2] = G * az;
  }
}

typedef struct {
  float *x, *y, *z, *m;
} soa_bodies;

/* Accelerations of bodies [i0, i1) (at most NBODY_CPU_BLOCK) into acc (n x 3), by a function
 * `name` whose vectorized i loop carries `loop_pragma`: nothing for 101 (gcc's own
 * auto-vectorizer), 'omp simd' for 102. */
#define DEFINE_ACCEL_SOA_BLOCK(name, loop_pragma)                                             \
  static void name(const soa_bodies *b, size_t n, size_t i0, size_t i1, float eps2, float G,  \
                   float *acc) {                                                              \
    float ax[NBODY_CPU_BLOCK], ay[NBODY_CPU_BLOCK], az[NBODY_CPU_BLOCK];                      \
    const float *restrict xi = b->x + i0, *restrict yi = b->y + i0, *restrict zi = b->z + i0; \
    size_t count = i1 - i0;                                                                   \
    memset(ax, 0, sizeof ax);                                                                 \
    memset(ay, 0, sizeof ay);                                                                 \
    memset(az, 0, sizeof az);                                                                 \
    for (size_t j = 0; j < n; ++j) {                                                          \
      const float xj = b->x[j], yj = b->y[j], zj = b->z[j], mj = b->m[j];                     \
      loop_pragma for (size_t i = 0; i < count; ++i) {                                        \
        float dx = xj - xi[i], dy = yj - yi[i], dz = zj - zi[i];                              \
        float r2 = dx * dx + dy * dy + dz * dz + eps2;                                        \
        float s = mj / (r2 * sqrtf(r2));                                                      \
        ax[i] += dx * s;                                                                      \
        ay[i] += dy * s;                                                                      \
        az[i] += dz * s;                                                                      \
      }                                                                                       \
    }                                                                                         \
    for (size_t i = 0; i < count; ++i) {                                                      \
      acc[3 * (i0 + i)] = G * ax[i];                                                          \
      acc[3 * (i0 + i) + 1] = G * ay[i];                                                      \
      acc[3 * (i0 + i) + 2] = G * az[i];                                                      \
    }                                                                                         \
  }

DEFINE_ACCEL_SOA_BLOCK(accel_soa_block_auto, )
DEFINE_ACCEL_SOA_BLOCK(accel_soa_block_simd, _Pragma("omp simd"))

static int accel_soa(size_t n, const float *pos, const float *mass, float eps2, float G,
                     int parallel, float *acc) {
  float *block = malloc(4 * n * sizeof(float));
  if (!block) return -1;
  soa_bodies b = {block, block + n, block + 2 * n, block + 3 * n};
  for (size_t i = 0; i < n; ++i) {
    b.x[i] = pos[3 * i];
    b.y[i] = pos[3 * i + 1];
    b.z[i] = pos[3 * i + 2];
    b.m[i] = mass[i];
  }
  long blocks = (long)((n + NBODY_CPU_BLOCK - 1) / NBODY_CPU_BLOCK);
  if (parallel) {
#pragma omp parallel for schedule(dynamic, 1)
    for (long k = 0; k < blocks; ++k) {
      size_t i0 = (size_t)k * NBODY_CPU_BLOCK, i1 = i0 + NBODY_CPU_BLOCK;
      accel_soa_block_simd(&b, n, i0, i1 < n ? i1 : n, eps2, G, acc);
    }
  } else {
    for (long k = 0; k < blocks; ++k) {
      size_t i0 = (size_t)k * NBODY_CPU_BLOCK, i1 = i0 + NBODY_CPU_BLOCK;
      accel_soa_block_auto(&b, n, i0, i1 < n ? i1 : n, eps2, G, acc);
    }
  }
  free(block);
  return 0;
}

int glcpu_nbody_accel(int variant, size_t n, const float *pos, const float *mass, float eps2,
                      float G, float *acc) {
  switch (variant) {
    case 100:
      accel_naive(n, pos, mass, eps2, G, acc);
      return 0;
    case 101:
    case 102:
      return accel_soa(n, pos, mass, eps2, G, variant == 102, acc);
    default:
      return -1;
  }
}

int glcpu_nbody_step(int variant, size_t n, const float *pos, const float *vel, const float *mass,
                     float dt, float eps2, float G, long long steps, float *pos_out,
                     float *vel_out) {
  if (variant < 100 || variant > 102) return -1;
  if (pos_out != pos) memmove(pos_out, pos, 3 * n * sizeof(float));
  if (vel_out != vel) memmove(vel_out, vel, 3 * n * sizeof(float));
  if (steps <= 0 || n == 0) return 0;
  float *acc = malloc(3 * n * sizeof(float));
  if (!acc) return -1;
  float half_dt = 0.5f * dt;
  int rc = glcpu_nbody_accel(variant, n, pos_out, mass, eps2, G, acc);
  for (long long s = 0; rc == 0 && s < steps; ++s) {
    for (size_t k = 0; k < 3 * n; ++k) {
      vel_out[k] += acc[k] * half_dt;
      pos_out[k] += vel_out[k] * dt;
    }
    rc = glcpu_nbody_accel(variant, n, pos_out, mass, eps2, G, acc);
    for (size_t k = 0; rc == 0 && k < 3 * n; ++k) vel_out[k] += acc[k] * half_dt;
  }
  free(acc);
  return rc;
}

void glcpu_nbody_energy(size_t n, const float *pos, const float *vel, const float *mass, float eps2,
                        double G, double *kinetic, double *potential) {
  double kin = 0.0, pot = 0.0;
  long count = (long)n;
#pragma omp parallel for reduction(+ : kin, pot) schedule(dynamic, 64)
  for (long i = 0; i < count; ++i) {
    double phi = 0.0;
    for (long j = 0; j < count; ++j) {
      if (j == i) continue;
      double dx = (double)pos[3 * j] - pos[3 * i], dy = (double)pos[3 * j + 1] - pos[3 * i + 1],
             dz = (double)pos[3 * j + 2] - pos[3 * i + 2];
      phi += mass[j] / sqrt(dx * dx + dy * dy + dz * dz + eps2);
    }
    double vx = vel[3 * i], vy = vel[3 * i + 1], vz = vel[3 * i + 2];
    kin += 0.5 * mass[i] * (vx * vx + vy * vy + vz * vz);
    pot += mass[i] * phi;
  }
  *kinetic = kin;
  *potential = -0.5 * G * pot;
}
