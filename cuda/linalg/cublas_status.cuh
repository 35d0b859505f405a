// Internal to cuda/linalg/: cuBLAS and cuBLASLt statuses (cublas.cu, cublaslt.cu) as the CUDA
// error codes the rest of gpulab reports; call names the function that failed.
#ifndef GPULAB_CUDA_LINALG_CUBLAS_STATUS_CUH
#define GPULAB_CUDA_LINALG_CUBLAS_STATUS_CUH

#include <cublas_api.h>
#include <cuda_runtime.h>

#include "cuda/core/errors.cuh"

inline int glc_cublas_status(cublasStatus_t status, const char *call) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return cudaSuccess;
    case CUBLAS_STATUS_ALLOC_FAILED:
      return glc_fail(cudaErrorMemoryAllocation, call);
    case CUBLAS_STATUS_INVALID_VALUE:
      return glc_fail(cudaErrorInvalidValue, call);
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return glc_fail(cudaErrorNoKernelImageForDevice, call);
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return glc_fail(cudaErrorNotSupported, call);
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return glc_fail(cudaErrorInitializationError, call);
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return glc_fail(cudaErrorLaunchFailure, call);
    default:
      return glc_fail(cudaErrorUnknown, call);
  }
}

#endif
