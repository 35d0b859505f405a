// Internal to cuda/ (every lab may include it): how every file records which call failed, so that
// glc_failed_call() can name it next to the error code.
#ifndef GPULAB_ERRORS_CUH
#define GPULAB_ERRORS_CUH

#include <cuda_runtime.h>

// Returns code unchanged. When code is an error, remembers call (a string literal) as this
// thread's failed call, and clears the runtime's pending copy of the error: the return code is
// the one channel through which errors travel, and a stale pending error would otherwise be
// picked up by the next kernel launch check and blamed on that kernel.
int glc_fail(int code, const char *call);

// GLC_CUDA(cudaMallocAsync, ptr, bytes, s) calls the function and records its name on failure.
#define GLC_CUDA(function, ...) glc_fail((function)(__VA_ARGS__), #function)

#endif
