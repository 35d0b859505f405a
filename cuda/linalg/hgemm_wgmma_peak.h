/* The device's dense tensor-core rate (cuda/linalg/hgemm_wgmma_peak.cu): the ceiling that
 * gl.ceilings() reports as tensor_f16_gflops, tensor_bf16_gflops and tensor_tf32_gflops, and
 * that the roofline holds the tensor-core rungs to. Like the other ceilings it is a reference
 * line, not a variant. Returns a CUDA error code, as cuda/core/gpulab_core.h says.
 *
 * It needs a device of compute capability 9.0 and this file's sm_90a build (wgmma.mma_async);
 * elsewhere it returns cudaErrorNotSupported, naming "tensor_peak_kernel(sm_90a build, compute
 * capability 9.0)", and gl.ceilings() leaves the three keys None. */
#ifndef GPULAB_CUDA_LINALG_HGEMM_WGMMA_PEAK_H
#define GPULAB_CUDA_LINALG_HGEMM_WGMMA_PEAK_H

#include "linalg.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Warpgroups a block (one block an SM where the registers allow no more): each holds one
 * 64 x 256 FP32 accumulator set, 128 registers a thread, so an SM's 64K registers hold three. */
#define GLC_TENSOR_PEAK_MAX_WARPGROUPS 3
#define GLC_TENSOR_PEAK_DEFAULT_WARPGROUPS 3
/* k slices (four wgmma each) a warpgroup issues a launch: about 1.7 ms on an H100/H200, at any
 * SM count (each SM does the same work). */
#define GLC_TENSOR_PEAK_DEFAULT_SLICES 2048
/* Timed launches (after two untimed ones); the rate is their median. */
#define GLC_TENSOR_PEAK_DEFAULT_REPEATS 5
#define GLC_TENSOR_PEAK_MAX_REPEATS 64

/* *gflops = the dense tensor-core rate of the current device, in GFLOP/s (2 flops a multiply-
 * add), for dtype GLC_F16 (wgmma m64n256k16 f16), GLC_BF16 (the same, bf16) or GLC_F32 (TF32:
 * m64n256k8 tf32), FP32 accumulation: the median over `repeats` launches timed by CUDA events on
 * `stream`, each a grid of whole waves (the SM count times the blocks an SM holds) whose
 * warpgroups issue `slices` x 4 wgmma on zeroed shared operands. Zeros (0: the defaults above)
 * for warpgroups (1..3), slices (>= 1) and repeats (1..64). *ms, when not null, receives the
 * median launch time. */
GLC_API int glc_tensor_peak(int dtype, int warpgroups, int slices, int repeats, double *gflops,
                            double *ms, glc_stream stream);

#ifdef __cplusplus
}
#endif

#endif
