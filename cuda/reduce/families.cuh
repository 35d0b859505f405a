// Internal to cuda/reduce/: the reduce lab's families of variants, which glc_reduce dispatches to.
// Each returns a CUDA error code; (op, dtype) are the glc_reduce_op and glc_dtype codes.
#ifndef GPULAB_REDUCE_VARIANTS_CUH
#define GPULAB_REDUCE_VARIANTS_CUH

#include <cuda_runtime.h>

#include <cstddef>

// Variants 0-6: Harris's kernels, pass after pass (harris.cu).
int glc_reduce_harris(int variant, int block, int op, int dtype, size_t n, const void *x,
                      void *result, cudaStream_t stream);

// Variants 7-10: S1's kernels, which finish with global atomics (atomic.cu).
int glc_reduce_atomic(int variant, int block, int op, int dtype, size_t n, const void *x,
                      void *result, cudaStream_t stream);

// Variant 11: one kernel with a cooperative-groups grid sync (cooperative.cu).
int glc_reduce_cooperative(int block, int op, int dtype, size_t n, const void *x, void *result,
                           cudaStream_t stream);

// Variant 12: 16-byte loads, one pass, the last block finishing (single_pass.cu).
int glc_reduce_single_pass(int block, int op, int dtype, size_t n, const void *x, void *result,
                           cudaStream_t stream);

// Variant 13: CUB's DeviceReduce (cub.cu).
int glc_reduce_cub(int op, int dtype, size_t n, const void *x, void *result, cudaStream_t stream);

#endif
