// What a host emulation of a kernel (tools/emulate/*_host.cpp) includes before the kernel's
// source: the CUDA headers' types (dim3) with __global__, __device__ and __forceinline__ made
// plain host C++.
#ifndef GPULAB_TOOLS_EMULATE_EMU_CUDA_H
#define GPULAB_TOOLS_EMULATE_EMU_CUDA_H
#include <cuda_runtime.h>
#undef __global__
#define __global__
#undef __device__
#define __device__
#undef __forceinline__
#define __forceinline__ inline
#endif
