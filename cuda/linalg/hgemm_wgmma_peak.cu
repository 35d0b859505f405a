// The device's dense tensor-core ceiling (issue 34): the rate at which an SM's tensor cores run
// wgmma.mma_async when nothing else limits them, for float16, bfloat16 and TF32 operands with
// FP32 accumulation. gl.ceilings() reports it (tensor_*_gflops) and the roofline draws it as the
// roof of the tensor-core rungs, which issue the same instruction, from shared memory, with the
// same FP32 accumulators. A reference line, not a variant: it computes nothing anyone reads.
//
// What runs. One block an SM (or as many as its registers hold), whose warpgroups each own a
// 64 x 256 FP32 accumulator set (128 registers a thread) and issue, slice after slice, four
// wgmma back to back on the same operands: m64n256k16 for f16 and bf16, m64n256k8 for tf32
// (2 * 64 * 256 * 16 and 2 * 64 * 256 * 8 flops), each slice committed as a group with at most
// one group left pending, as the rungs do. A single wgmma.m64n256 keeps all four of an SM's
// tensor cores busy (a warpgroup is one warp a sub-partition) for about 128 cycles at the
// datasheet's rate (H100/H200 SXM: 989 dense f16 TFLOP/s = 132 SMs x 2048 multiply-adds a cycle
// x 2 flops x 1.83 GHz; tf32 half of that), so three warpgroups an SM (three accumulator chains
// in flight, the most its 64K registers hold at n = 256) leave the tensor cores no gap to wait
// on. A and B stay in shared memory for the whole launch: zeroed once, so every product is 0
// and the math is well defined whatever the slice count; K-major with the 128-byte swizzle, as
// the rungs' A (a 128-byte row of k is four k steps of 32 bytes). Shared reads are 10 KiB a
// wgmma (2 KiB of A, 8 KiB of B), 80 bytes a cycle at the full rate, within the 128 an SM
// serves. The accumulators' sum is stored where it is not 0 (never), so no work is dead code;
// the wgmma are volatile asm as well.
//
// Timing. glc_tensor_peak launches a grid of whole waves (the SM count times the blocks an SM
// holds; every block does the same work) twice untimed, then `repeats` times between CUDA
// events, and returns the median's rate: about 1.7 ms a launch at the defaults, on any SM count.
//
// Like hgemm_wgmma.cu, this file is built for sm_90a (setup.py's SM90A_PREFIX); in every other
// target the kernel's body is empty and glc_tensor_peak returns cudaErrorNotSupported, having
// read glc_tensor_peak_built from the image the device loaded.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "cuda/core/launch.cuh"
#include "sm90a.cuh"
#include "hgemm_wgmma_peak.h"

// 1 in the device pass for sm_90a, where wgmma exists; 0 elsewhere.
#if defined(__CUDA_ARCH__) && (defined(__CUDA_ARCH_FEAT_SM90_ALL) || \
                               (defined(__CUDA_ARCH_SPECIFIC__) && __CUDA_ARCH_SPECIFIC__ == 900))
#define GLC_TENSOR_PEAK_BUILT 1
#else
#define GLC_TENSOR_PEAK_BUILT 0
#endif

// Read by glc_tensor_peak (once a device) to learn whether the image loaded has the kernel.
__device__ int glc_tensor_peak_built = GLC_TENSOR_PEAK_BUILT;
// Written only where an accumulator sum is not 0, which zero operands never give.
__device__ float glc_tensor_peak_sink;

namespace {

// The operand types: f16 and bf16 (wgmma k = 16), tf32 (k = 8).
enum peak_type { PEAK_F16 = 0, PEAK_BF16 = 1, PEAK_TF32 = 2 };

constexpr int peak_steps = 4;                 // wgmma a slice: a 128-byte row of k, 32 bytes a step
constexpr unsigned peak_a_bytes = 64 * 128;   // a warpgroup's A: 64 rows (m) of 128 bytes (k)
constexpr unsigned peak_b_bytes = 256 * 128;  // B: 256 rows (n) of 128 bytes (k), K-major

// Dynamic shared memory of a block: 1024 bytes to align the base, A per warpgroup, one B.
constexpr unsigned peak_shared_bytes(int warpgroups) {
  return 1024 + warpgroups * peak_a_bytes + peak_b_bytes;
}

// Flops of one wgmma of a warpgroup: 2 m n k.
constexpr double peak_wgmma_flops(int type) {
  return 2.0 * 64 * 256 * (type == PEAK_TF32 ? 8 : 16);
}

#if !defined(__CUDA_ARCH__) || GLC_TENSOR_PEAK_BUILT

// Shared-memory matrix descriptor of a K-major operand at `address` (1024-aligned groups of 8
// rows of 128 bytes, 128-byte swizzle): start address >> 4 (bits 0-13), leading byte offset 16
// (bits 16-29; unused when k fits one swizzled row), stride byte offset 1024 between groups of 8
// rows (bits 32-45), base offset 0 (bits 49-51), swizzle mode 1 = 128 bytes (bits 62-63).
__device__ __forceinline__ uint64_t peak_desc(unsigned address) {
  return static_cast<uint64_t>((address & 0x3FFFF) >> 4) | static_cast<uint64_t>(16 >> 4) << 16 |
         static_cast<uint64_t>(1024 >> 4) << 32 | 1ull << 62;
}

__device__ __forceinline__ void peak_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void peak_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

template <int PENDING>
__device__ __forceinline__ void peak_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(PENDING) : "memory");
}

// Keeps the compiler from moving accesses of the accumulators across the fences and waits
// (the asynchronous wgmma writes them behind its back).
__device__ __forceinline__ void peak_fence_operands(float (&d)[128]) {
#pragma unroll
  for (int i = 0; i < 128; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// The 128 accumulators as asm operands, and as the instruction names them.
#define PEAK_D8(i)                                                                            \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
      "+f"(d[i + 6]), "+f"(d[i + 7])
#define PEAK_D32(i) PEAK_D8(i), PEAK_D8(i + 8), PEAK_D8(i + 16), PEAK_D8(i + 24)
#define PEAK_D128 PEAK_D32(0), PEAK_D32(32), PEAK_D32(64), PEAK_D32(96)
#define PEAK_R128                                                                        \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, "     \
  "%18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, "     \
  "%34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, "     \
  "%50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, "     \
  "%66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, "     \
  "%82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, "     \
  "%98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "   \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, " \
  "%126, %127"
// One wgmma: D[64 x 256] += A[64 x K] B[K x 256], A and B K-major from descriptors %128 and
// %129, scale-d from %130. TAIL: the 16-bit types' imm-trans-a and imm-trans-b (0: K-major);
// tf32 has none (its operands are K-major only).
#define PEAK_WGMMA(SHAPE_TYPES, TAIL)                            \
  asm volatile(                                                  \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"              \
      "wgmma.mma_async.sync.aligned." SHAPE_TYPES " {" PEAK_R128 \
      "}, %128, %129, p, "                                       \
      "1, 1" TAIL ";\n}\n"                                       \
      : PEAK_D128                                                \
      : "l"(desc_a), "l"(desc_b), "r"(scale_d))

template <int TYPE>
__device__ __forceinline__ void peak_wgmma(float (&d)[128], uint64_t desc_a, uint64_t desc_b,
                                           int scale_d) {
  if constexpr (TYPE == PEAK_F16)
    PEAK_WGMMA("m64n256k16.f32.f16.f16", ", 0, 0");
  else if constexpr (TYPE == PEAK_BF16)
    PEAK_WGMMA("m64n256k16.f32.bf16.bf16", ", 0, 0");
  else
    PEAK_WGMMA("m64n256k8.f32.tf32.tf32", "");
}

#undef PEAK_WGMMA
#undef PEAK_R128
#undef PEAK_D128
#undef PEAK_D32
#undef PEAK_D8

#endif  // !defined(__CUDA_ARCH__) || GLC_TENSOR_PEAK_BUILT

// Each of the block's WARPGROUPS warpgroups issues `slices` slices of four wgmma into its own
// accumulators, on its own A (zeros) and the block's B (zeros). Blocks an SM: as many as the
// registers hold (three of one warpgroup, one of two or three).
template <int TYPE, int WARPGROUPS>
__global__ void __launch_bounds__(WARPGROUPS * 128, WARPGROUPS == 1 ? 3 : 1)
    tensor_peak_kernel(int slices) {
#if GLC_TENSOR_PEAK_BUILT
  extern __shared__ __align__(1024) unsigned char peak_shared[];
  const unsigned raw = static_cast<unsigned>(__cvta_generic_to_shared(peak_shared));
  const unsigned base = (raw + 1023u) & ~1023u;
  // Zero the operands with ordinary stores, then make them visible to the async proxy that
  // wgmma reads shared memory through, before any warpgroup issues one.
  uint4 *const zero = reinterpret_cast<uint4 *>(peak_shared + (base - raw));
  constexpr unsigned vectors = (WARPGROUPS * peak_a_bytes + peak_b_bytes) / 16;
  for (unsigned i = threadIdx.x; i < vectors; i += blockDim.x) zero[i] = make_uint4(0, 0, 0, 0);
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();

  const unsigned wg = threadIdx.x / 128;
  const uint64_t desc_a = peak_desc(base + wg * peak_a_bytes);
  const uint64_t desc_b = peak_desc(base + WARPGROUPS * peak_a_bytes);
  float d[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) d[i] = 0.0f;
  peak_fence_operands(d);
  for (int s = 0; s < slices; ++s) {
    peak_fence();
#pragma unroll
    for (int kk = 0; kk < peak_steps; ++kk)  // 32 bytes a step: 2 in the address field
      peak_wgmma<TYPE>(d, desc_a + 2 * kk, desc_b + 2 * kk, 1);
    peak_commit();
    peak_wait<1>();  // at most one slice's group pending, as the rungs keep it
  }
  peak_wait<0>();
  peak_fence_operands(d);
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < 128; ++i) sum += d[i];
  if (sum != 0.0f) glc_tensor_peak_sink = sum;
#endif
}

// Whether the current device runs the kernel (sm90a.cuh).
int tensor_peak_supported(bool *yes) {
  static std::atomic<int> cached[glc_cached_devices] = {};
  return glc_sm90a_kernels_loaded(&glc_tensor_peak_built, cached, yes);
}

// Two timing events, destroyed however the measurement ends.
struct peak_events {
  cudaEvent_t start = nullptr, stop = nullptr;
  ~peak_events() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  }
};

// The median launch time (ms) of tensor_peak_kernel<TYPE, WARPGROUPS> over `repeats` timed
// launches of a grid of whole waves, and the flops of one launch.
template <int TYPE, int WARPGROUPS>
int peak_time(int slices, int repeats, cudaStream_t stream, double *ms, double *flops) {
  auto *kernel = tensor_peak_kernel<TYPE, WARPGROUPS>;
  constexpr unsigned shared = peak_shared_bytes(WARPGROUPS);
  constexpr int threads = WARPGROUPS * 128;
  int code = GLC_CUDA(cudaFuncSetAttribute, kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                      static_cast<int>(shared));
  if (code) return code;
  int per_sm = 0, sm_count = 0;
  code = GLC_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor, &per_sm, kernel, threads,
                  static_cast<size_t>(shared));
  if (code) return code;
  if (per_sm < 1) return glc_fail(cudaErrorInvalidConfiguration, "tensor_peak_kernel(occupancy)");
  code = glc_current_sm_count(&sm_count);
  if (code) return code;
  const unsigned grid = static_cast<unsigned>(sm_count * per_sm);
  *flops = peak_wgmma_flops(TYPE) * peak_steps * static_cast<double>(slices) * WARPGROUPS * grid;

  peak_events events;
  code = GLC_CUDA(cudaEventCreate, &events.start);
  if (code) return code;
  code = GLC_CUDA(cudaEventCreate, &events.stop);
  if (code) return code;
  auto launch = [&] {
    return glc_launch_shared(kernel, "tensor_peak_kernel", dim3(grid), dim3(threads), shared,
                             stream, slices);
  };
  for (int i = 0; i < 2; ++i) {  // untimed: the first launch's setup, and the clocks' ramp
    code = launch();
    if (code) return code;
  }
  float times[GLC_TENSOR_PEAK_MAX_REPEATS];
  for (int r = 0; r < repeats; ++r) {
    code = GLC_CUDA(cudaEventRecord, events.start, stream);
    if (code) return code;
    code = launch();
    if (code) return code;
    code = GLC_CUDA(cudaEventRecord, events.stop, stream);
    if (code) return code;
    code = GLC_CUDA(cudaEventSynchronize, events.stop);
    if (code) return code;
    code = GLC_CUDA(cudaEventElapsedTime, &times[r], events.start, events.stop);
    if (code) return code;
  }
  std::sort(times, times + repeats);
  *ms = repeats % 2 ? times[repeats / 2] : 0.5 * (times[repeats / 2 - 1] + times[repeats / 2]);
  return cudaSuccess;
}

template <int TYPE>
int peak_dispatch(int warpgroups, int slices, int repeats, cudaStream_t stream, double *ms,
                  double *flops) {
  switch (warpgroups) {
    case 1:
      return peak_time<TYPE, 1>(slices, repeats, stream, ms, flops);
    case 2:
      return peak_time<TYPE, 2>(slices, repeats, stream, ms, flops);
    case 3:
      return peak_time<TYPE, 3>(slices, repeats, stream, ms, flops);
    default:
      return glc_fail(cudaErrorInvalidValue, "glc_tensor_peak(warpgroups)");
  }
}

}  // namespace

extern "C" int glc_tensor_peak(int dtype, int warpgroups, int slices, int repeats, double *gflops,
                               double *ms, glc_stream stream) {
  if (warpgroups == 0) warpgroups = GLC_TENSOR_PEAK_DEFAULT_WARPGROUPS;
  if (slices == 0) slices = GLC_TENSOR_PEAK_DEFAULT_SLICES;
  if (repeats == 0) repeats = GLC_TENSOR_PEAK_DEFAULT_REPEATS;
  if (gflops == nullptr || warpgroups < 1 || warpgroups > GLC_TENSOR_PEAK_MAX_WARPGROUPS ||
      slices < 1 || repeats < 1 || repeats > GLC_TENSOR_PEAK_MAX_REPEATS)
    return glc_fail(cudaErrorInvalidValue, "glc_tensor_peak(arguments)");
  if (dtype != GLC_F16 && dtype != GLC_BF16 && dtype != GLC_F32)
    return glc_fail(cudaErrorInvalidValue, "glc_tensor_peak(dtype)");
  bool supported = false;
  int code = tensor_peak_supported(&supported);
  if (code) return code;
  if (!supported)
    return glc_fail(cudaErrorNotSupported,
                    "tensor_peak_kernel(sm_90a build, compute capability 9.0)");
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  double median_ms = 0, flops = 0;
  code = dtype == GLC_F16
             ? peak_dispatch<PEAK_F16>(warpgroups, slices, repeats, s, &median_ms, &flops)
         : dtype == GLC_BF16
             ? peak_dispatch<PEAK_BF16>(warpgroups, slices, repeats, s, &median_ms, &flops)
             : peak_dispatch<PEAK_TF32>(warpgroups, slices, repeats, s, &median_ms, &flops);
  if (code) return code;
  if (!(median_ms > 0)) return glc_fail(cudaErrorUnknown, "glc_tensor_peak(time)");
  *gflops = flops / median_ms / 1e6;
  if (ms) *ms = median_ms;
  return cudaSuccess;
}
