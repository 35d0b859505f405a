/* S3 6.4's boundary policies as one index map (S3: "implement the policy in one place, then
 * reuse it"), shared by the CUDA kernels (cuda/stencil/grid.cuh) and the CPU variants
 * (csrc/labs/stencil/cpu.c), so that both read the same cells. Plain C, host and device. */
#ifndef GPULAB_CUDA_STENCIL_BOUNDARY_H
#define GPULAB_CUDA_STENCIL_BOUNDARY_H

#include "cuda/stencil/stencil.h"

#ifdef __CUDACC__
#define GLC_STENCIL_HD __host__ __device__
#else
#define GLC_STENCIL_HD
#endif

/* The index along an axis of n cells that i (possibly outside) reads under policy (enum
 * glc_boundary), or -1 for a zero. fixed never reads outside (its edge cells are copied), so it
 * maps to -1 too. */
static inline GLC_STENCIL_HD int glc_map_index(int i, int n, int policy) {
  if (i >= 0 && i < n) return i;
  switch (policy) {
    case GLC_BOUNDARY_CLAMP:
      return i < 0 ? 0 : n - 1;
    case GLC_BOUNDARY_PERIODIC: {
      int m = i % n;
      return m < 0 ? m + n : m;
    }
    case GLC_BOUNDARY_REFLECT: { /* period 2n, the second half mirrored (numpy "symmetric") */
      int period = 2 * n;
      int m = i % period;
      if (m < 0) m += period;
      return m < n ? m : period - 1 - m;
    }
    default:
      return -1;
  }
}

#endif
