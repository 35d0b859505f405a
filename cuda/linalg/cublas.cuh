// Internal to cuda/linalg/: the lab's cuBLAS references (matvec 4, matmul 9 and 11), called
// through libcublas loaded on first use (cublas.cu), so that gpulab imports and runs its other
// variants on machines without libcublas. Operands as the lab's ABI has them (row-major; matmul's
// may be given transposed).
#ifndef GPULAB_CUDA_LINALG_CUBLAS_CUH
#define GPULAB_CUDA_LINALG_CUBLAS_CUH

#include <cuda_runtime.h>

#include <cstddef>

// y[m] = A[m x n] x[n] with SGEMV (dtype GLC_F32) or DGEMV (GLC_F64); m, n >= 1.
int glc_cublas_gemv(int dtype, size_t m, size_t n, const void *a, const void *x, void *y,
                    cudaStream_t stream);
// C[m x n] = A[m x k] B[k x n] with SGEMM or DGEMM; m, n, k >= 1. tf32: SGEMM with TF32
// tensor-op math (float32 only); otherwise cuBLAS's default math, which keeps FP32 in FP32. A and
// B lie as layout says (glc_matmul_layout, linalg.h): an operand given transposed is read in
// place, through cuBLAS's op flag (C row-major either way).
int glc_cublas_gemm(int dtype, bool tf32, int layout, size_t m, size_t n, size_t k, const void *a,
                    const void *b, void *c, cudaStream_t stream);

#endif
