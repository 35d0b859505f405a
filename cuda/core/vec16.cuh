// The 16-byte vector of T (one 128-bit load or store: LDG.128, STG.128, LDS.128) and how many T
// it holds: one definition for the vectorized kernels of every lab (saxpy, reduce, scan,
// matvec, stencils), which each kept their own copy before.
#ifndef GPULAB_CUDA_CORE_VEC16_CUH
#define GPULAB_CUDA_CORE_VEC16_CUH

#include <cuda_runtime.h>

template <typename T>
struct glc_vec16;
template <>
struct glc_vec16<float> {
  using type = float4;
  static constexpr int lanes = 4;
};
template <>
struct glc_vec16<double> {
  using type = double2;
  static constexpr int lanes = 2;
};
template <>
struct glc_vec16<int> {
  using type = int4;
  static constexpr int lanes = 4;
};
template <>
struct glc_vec16<long long> {
  using type = longlong2;
  static constexpr int lanes = 2;
};

#endif
