// The half-precision GEMM ladder's Hopper rungs (issue 34, rungs 3 and 4): C[m x n] = A[m x k]
// B[k x n] for float16 or bfloat16 A and B, each row-major or given as its transpose's storage
// (glc_matmul_layout), FP32 accumulation, C stored as the input type or as float32, on sm_90a's
// warpgroup MMA (wgmma.mma_async) fed by the tensor memory accelerator (TMA). The structure follows
// the public Hopper GEMM designs (CUTLASS's sm90 TMA warp-specialized kernels, the PTX ISA's wgmma
// and tensor-map sections); the code is our own.
//
// Tiles. A block computes a 128 x BN tile of C (BN = 128 or 256) with two consumer warpgroups,
// each one 64 x BN half: one wgmma.m64nBNk16 a k step of 16, BN / 2 FP32 accumulators a thread.
// A k slice is 64 deep, and shared memory holds STAGES slices, each 1024-byte aligned:
//   A: 128 rows (m) of 64 elements (k): 128-byte rows, one TMA box of 64 x 128;
//   B: BN / 64 blocks of 64 columns (n), each 64 rows (k) of 128 bytes: one TMA box of 64 x 64.
// The layout (a template parameter) gives the other two: the TMA copies boxes as they lie, and
// wgmma reads 16-bit operands either way, so a transposed operand costs no copy:
//   A^T (k x m, GLC_MATMUL_A_T): two blocks of 64 columns (m, one a warpgroup), each 64 rows (k)
//     of 128 bytes: B's boxes, 16 KiB as before;
//   B^T (n x k, GLC_MATMUL_B_T): BN rows (n) of 64 elements (k): A's kind, one box of 64 x BN.
// Both tensor maps use the 128-byte swizzle: in each 1024-byte group of 8 rows, 16-byte chunk c
// of row r is stored at chunk c ^ (r % 8). wgmma reads that layout through its shared-memory
// matrix descriptors (64 bits):
//   bits  0-13: start address >> 4      bits 16-29: leading byte offset >> 4
//   bits 32-45: stride byte offset >> 4  bits 49-51: base offset (0: the groups are 1024-aligned)
//   bits 62-63: swizzle mode, 1 = 128-byte swizzle
// A is K-major (imm-trans-a 0): start = the warpgroup's 64 rows + 32 bytes a k step (the
// hardware applies the XOR to the address it forms, so a step inside the 128-byte row is a plain
// offset), stride byte offset 1024 (8 rows of 128 bytes), leading byte offset unused (1). B is
// N-major (imm-trans-b 1: wgmma transposes 16-bit B itself, so row-major B is used as it is):
// start = 16 rows of 128 bytes (2048 bytes) a k step, stride byte offset 1024 (the next 8 k
// rows), leading byte offset 8192 (the next block of 64 columns). A^T is M-major (imm-trans-a
// 1), its descriptor B's N-major kind (start = the warpgroup's box + 2048 bytes a k step, stride
// 1024, leading 8192: unused at m64); B^T is K-major (imm-trans-b 0), its descriptor A's kind.
//
// Pipelines. The rung-3 kernel (hgemm_wgmma_kernel, 256 threads) is not specialized: thread 0
// issues the TMA loads, a "full" mbarrier a stage counts their bytes (arrive.expect_tx, then
// complete_tx from the TMA), every thread waits on it (try_wait.parity), the warpgroups issue
// four wgmma a slice, commit them as a group and wait until at most one group is pending (the
// slice before's), and a block barrier then lets thread 0 refill the stage that slice used.
// The rung-4 kernel (hgemm_wgmma_ws_kernel, 384 threads) is warp-specialized and persistent: a
// producer warpgroup (registers cut to 40 by setmaxnreg.dec) of which one thread issues the TMA
// loads, and two consumer warpgroups (setmaxnreg.inc to 232) that issue wgmma; a stage has a
// full and an "empty" mbarrier (eight arrivals: one a consumer warp once its wgmma that read
// the stage are complete), so nothing waits on a block barrier; each block walks tiles in a
// grouped order (8 row tiles, column by column), and the producer loads the next tile's slices
// while the consumers store the last one's results.
// The rung-5 kernel (hgemm_wgmma_cluster_kernel, 384 threads) is rung 4's in clusters of two
// blocks that share B's slices by TMA multicast, storing C by the TMA: see its section below.
//
// TF32 (matmul's float32 rung `tf32`, issue 34's rung 6): the rung-4 kernel instantiated for float
// operands (wgmma_operand<float, wgmma_tf32_layout>), not a copy; `tf32_cluster` is the rung-5
// kernel's float instantiation, the same in every other respect. wgmma.m64nNk8.f32.tf32.tf32 reads
// the top 19 bits of each float (TF32's 10 mantissa bits; the rest are ignored, a truncation) and
// accumulates in FP32. A k step is 8 floats, the same 32 bytes as 16 halves, so the byte layout is
// unchanged and only the element count halves: a slice is one 128-byte row of 32 floats, a stage is
// the same 16 KiB of A and BN x 128 bytes of B, and the same (bn, stages) fit (bn = 256 with 5
// stages is refused, 5 x 48 KiB). A is K-major as before. B is not: wgmma's transpose operands
// exist for the 16-bit types only, so a 32-bit B must be K-major in shared memory too. Given B^T
// (GLC_MATMUL_B_T), the launcher reads it in place. Otherwise it first writes B^T (n x k,
// row-major: K-major) into a workspace from the stream-ordered pool with the transpose lab's wide
// kernel (transpose_wide: one read and one write of B, 2 x 4 k n bytes; at 4096^3 that is 134 MB
// beside the GEMM's 201 MB of A, B and C, about 28 us at the H200's 4.8 TB/s against about 0.3 ms
// of GEMM at 450 TFLOP/s: about 9%), freed on the stream after the GEMM. B^T's tensor map is A's
// kind: k inner (32-float boxes, 128 bytes, swizzled), n outer, one box of BN rows a stage, at
// (k0, col0). Its stage layout is A's: row j (column col0 + j of C) at 128 j bytes, 16-byte chunk c
// at c ^ (j % 8). So B's descriptor is A's kind too (imm-trans-b does not exist for tf32): start =
// the stage's B + 32 bytes a k step, stride byte offset 1024 (the next 8 rows of n), leading byte
// offset unused (1). B^T's rows are k floats, 16-byte multiples when k % 4 == 0, which A's own map
// needs anyway: where k % 4 != 0, A is not 16-byte aligned, or k is past the transpose's grid (64
// rows a block row, 65535 block rows), glc_sgemm_tma_describes says no, the launcher returns
// cudaErrorNotSupported and matmul's dispatch runs tf32_wmma's kernel instead (which rounds to
// nearest with cvt.rna where this path truncates; the tests' TF32 bound, 2 x 2^-10 a product, holds
// both). Given A^T (GLC_MATMUL_A_T), which 32-bit wgmma cannot read M-major, the launcher writes A
// (m x k) into a second workspace the same way. C's float2 stores need n even (n is any size here),
// rung 5's TMA stores n % 4 == 0.
//
// Shapes. TMA zero-fills the parts of a box outside the matrix, so m, n and k need not be
// multiples of the tiles (zeros in A's and B's k tails add nothing); C's stores are guarded.
// The tensor maps need 16-byte aligned A and B and rows of a multiple of 16 bytes: A's rows (k,
// or m for A^T) and B's (n, or k for B^T) % 8 == 0. Other shapes return cudaErrorNotSupported
// (glc_failed_call names "glc_hgemm_wgmma(A's and B's rows % 8, 16-byte aligned A and B)"); the
// dispatch asks glc_hgemm_tma_describes first and runs the mma.sync rung (hgemm_mma.cu) for those.
// The kernels are compiled only for sm_90a (setup.py builds this file with
// -gencode=arch=compute_90a,code=sm_90a in place of sm_90); elsewhere their bodies are empty and
// the launchers return cudaErrorNotSupported.
#include <cuda.h>  // CUtensorMap and its enums; the encoder is fetched through the runtime
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "cuda/core/launch.cuh"
#include "sm90a.cuh"
#include "cuda/core/resources.cuh"
#include "hgemm_wgmma.h"

// 1 in the device pass for sm_90a, where wgmma and setmaxnreg exist; 0 elsewhere.
#if defined(__CUDA_ARCH__) && (defined(__CUDA_ARCH_FEAT_SM90_ALL) || \
                               (defined(__CUDA_ARCH_SPECIFIC__) && __CUDA_ARCH_SPECIFIC__ == 900))
#define GLC_WGMMA_BUILT 1
#else
#define GLC_WGMMA_BUILT 0
#endif

// Read by the launchers (once a device) to learn whether the image loaded has the kernels.
__device__ int glc_hgemm_wgmma_built = GLC_WGMMA_BUILT;

namespace {

// How a kernel's operands lie in shared memory: as they lie in global memory (the TMA copies
// boxes as they are), so from the kernel's LAYOUT (glc_matmul_layout's bits). A is K-major (rows
// of k, imm-trans-a 0) or, given as A^T, M-major (imm-trans-a 1); B is N-major (row-major B as it
// lies, imm-trans-b 1) or, given as B^T, K-major (imm-trans-b 0). wgmma transposes 16-bit
// operands only, so float (TF32) takes both K-major: its launchers write what is not
// (wgmma_tf32_layout).
template <typename T, int LAYOUT>
struct wgmma_operand {
  static constexpr int K_STEP = 32 / sizeof(T);  // m64nNk16, or m64nNk8.tf32: 32 bytes of k
  static constexpr bool A_M_MAJOR = (LAYOUT & GLC_MATMUL_A_T) != 0;
  static constexpr bool B_K_MAJOR = (LAYOUT & GLC_MATMUL_B_T) != 0;
  static_assert(sizeof(T) == 2 || (!A_M_MAJOR && B_K_MAJOR), "32-bit operands K-major only");
};

// The float kernels' layout: A as it lies and B^T, which the TF32 launchers write where they are
// not given them.
constexpr int wgmma_tf32_layout = GLC_MATMUL_B_T;

template <typename T, int BN_, int STAGES_, int LAYOUT>
struct wgmma_shape : wgmma_operand<T, LAYOUT> {
  using O = wgmma_operand<T, LAYOUT>;
  using Type = T;
  // A k slice is one 128-byte swizzled row deep: 64 halves or 32 floats.
  static constexpr int BM = 128, BN = BN_, BK = 128 / sizeof(T), STAGES = STAGES_;
  // TMA boxes of A a stage: K-major, one box of BM rows (m) of BK elements (128 bytes);
  // M-major, one box a warpgroup of 64 columns (m, 128 bytes) by BK rows of k. 16 KiB either way.
  static constexpr int A_BOXES = O::A_M_MAJOR ? 2 : 1;
  // TMA boxes of B a stage: N-major, BN / 64 boxes of 64 columns (128 bytes) by BK rows of k;
  // K-major, one box of BN rows (n) of BK elements (128 bytes). BN x 128 bytes either way.
  static constexpr int B_BOXES = O::B_K_MAJOR ? 1 : BN / 64;
  static constexpr unsigned A_BYTES = BM * 128, A_BOX_BYTES = A_BYTES / A_BOXES;
  static constexpr unsigned B_BOX_BYTES = BN * 128 / B_BOXES;
  static constexpr unsigned STAGE_BYTES = A_BOXES * A_BOX_BYTES + B_BOXES * B_BOX_BYTES;
  // Slack to round the dynamic shared base up to 1024 bytes, the stages, then 2 x STAGES
  // mbarriers of 8 bytes (full, then empty).
  static constexpr unsigned SHARED_BYTES = 1024 + STAGES * STAGE_BYTES + 16 * STAGES;
  static_assert(BN == 128 || BN == 256, "wgmma n of 128 or 256");
  static_assert(BK == 4 * O::K_STEP, "four wgmma k steps a slice (wgmma_slice)");
  static_assert(STAGES >= 2 && SHARED_BYTES <= 227 * 1024, "the stages fit an SM");
};

// The device helpers exist in the host pass and in the sm_90a device pass only: elsewhere the
// kernels' bodies are empty and nothing would use them.
#if !defined(__CUDA_ARCH__) || GLC_WGMMA_BUILT

// Row tiles per group of the tile order.
constexpr size_t wgmma_group_rows = 8;

__device__ __forceinline__ unsigned wgmma_shared_address(const void *p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// ---- mbarriers -------------------------------------------------------------------------------

__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

// Makes the initialized barriers visible to the other threads and to the async proxy (TMA).
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// One arrival that also expects `bytes` of transactions (the TMA loads' complete_tx).
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// Waits until the phase of parity `parity` has completed (a fresh barrier is in phase 0, so
// waiting for parity 1 returns at once: the "previous" phase counts as complete).
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}

// ---- TMA -------------------------------------------------------------------------------------

// The box of `map` at coordinates (inner, outer) to shared dst; its bytes complete_tx on bar.
__device__ __forceinline__ void tma_load_2d(unsigned dst, const CUtensorMap *map, unsigned bar,
                                            int inner, int outer) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(inner), "r"(outer)
      : "memory");
}

__device__ __forceinline__ void tma_prefetch_map(const CUtensorMap *map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// ---- wgmma -----------------------------------------------------------------------------------

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

// Waits until at most N committed groups of this warp's wgmma are pending.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Keeps the compiler from moving reads or writes of the accumulators across the wgmma fences
// and waits (the asynchronous wgmma writes them behind the compiler's back).
template <int N>
__device__ __forceinline__ void wgmma_fence_operands(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

template <int REGS>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS));
}

template <int REGS>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
}

// Shared-memory matrix descriptor: 128-byte swizzle, base offset 0.
__device__ __forceinline__ uint64_t wgmma_desc(unsigned address, unsigned leading_bytes,
                                               unsigned stride_bytes) {
  return static_cast<uint64_t>((address & 0x3FFFF) >> 4) |
         static_cast<uint64_t>(leading_bytes >> 4 & 0x3FFF) << 16 |
         static_cast<uint64_t>(stride_bytes >> 4 & 0x3FFF) << 32 | 1ull << 62;
}

// ---- the wgmma.mma_async wrappers (FP32 accumulators, A and B from shared-memory
// descriptors; m64nNk16 with the layout's imm-trans-a and imm-trans-b for the 16-bit types;
// m64nNk8.tf32 for float, which takes no transpose operands: A and B K-major); one macro writes
// the instruction, whose operand list (one register per accumulator) is spelled out once ----

// The accumulators as asm operands, 8 at a time from d[i]
#define GLC_WGMMA_D8(i)                                                                       \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
      "+f"(d[i + 6]), "+f"(d[i + 7])
#define GLC_WGMMA_D64                                                                     \
  GLC_WGMMA_D8(0), GLC_WGMMA_D8(8), GLC_WGMMA_D8(16), GLC_WGMMA_D8(24), GLC_WGMMA_D8(32), \
      GLC_WGMMA_D8(40), GLC_WGMMA_D8(48), GLC_WGMMA_D8(56)
#define GLC_WGMMA_D128                                                                   \
  GLC_WGMMA_D64, GLC_WGMMA_D8(64), GLC_WGMMA_D8(72), GLC_WGMMA_D8(80), GLC_WGMMA_D8(88), \
      GLC_WGMMA_D8(96), GLC_WGMMA_D8(104), GLC_WGMMA_D8(112), GLC_WGMMA_D8(120)
// ... and as the instruction names them: %0 ... %63, %64 ... %127
#define GLC_WGMMA_R64                                                                \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "           \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define GLC_WGMMA_R128                                                             \
  GLC_WGMMA_R64                                                                    \
  ", "                                                                             \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, "              \
  "%77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, "              \
  "%90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, "           \
  "%103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, " \
  "%116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
// One wgmma of SHAPE on TYPE operands: REGS and OPERANDS its accumulators; A, B and ACC the
// numbers of the operands that follow them (the two descriptors and the accumulate flag, then
// the transpose immediates TA and TB); TRANS the transpose operands after imm-scale-a and
// imm-scale-b (", %TA, %TB" for the 16-bit types; "" for tf32, which has none).
#define GLC_WGMMA(SHAPE, TYPE, TRANS, REGS, OPERANDS, A, B, ACC)                               \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #ACC                                       \
               ", 0;\n"                                                                        \
               "wgmma.mma_async.sync.aligned." SHAPE ".f32." TYPE "." TYPE " {" REGS "}, %" #A \
               ", %" #B ", p, 1, 1" TRANS ";\n}\n"                                             \
               : OPERANDS                                                                      \
               : "l"(desc_a), "l"(desc_b), "r"(accumulate), "n"(TA), "n"(TB))

// D[64 x 128] (+)= A[64 x K_STEP] B[K_STEP x 128]: 64 accumulators a thread. TA, TB: wgmma's
// imm-trans-a and imm-trans-b (1: M- or N-major), for the 16-bit types.
template <typename T, int TA, int TB>
__device__ __forceinline__ void wgmma_m64n128(float (&d)[64], uint64_t desc_a, uint64_t desc_b,
                                              int accumulate) {
  if constexpr (std::is_same<T, float>::value)
    GLC_WGMMA("m64n128k8", "tf32", "", GLC_WGMMA_R64, GLC_WGMMA_D64, 64, 65, 66);
  else if constexpr (std::is_same<T, __nv_bfloat16>::value)
    GLC_WGMMA("m64n128k16", "bf16", ", %67, %68", GLC_WGMMA_R64, GLC_WGMMA_D64, 64, 65, 66);
  else
    GLC_WGMMA("m64n128k16", "f16", ", %67, %68", GLC_WGMMA_R64, GLC_WGMMA_D64, 64, 65, 66);
}

// D[64 x 256] (+)= A[64 x K_STEP] B[K_STEP x 256]: 128 accumulators a thread.
template <typename T, int TA, int TB>
__device__ __forceinline__ void wgmma_m64n256(float (&d)[128], uint64_t desc_a, uint64_t desc_b,
                                              int accumulate) {
  if constexpr (std::is_same<T, float>::value)
    GLC_WGMMA("m64n256k8", "tf32", "", GLC_WGMMA_R128, GLC_WGMMA_D128, 128, 129, 130);
  else if constexpr (std::is_same<T, __nv_bfloat16>::value)
    GLC_WGMMA("m64n256k16", "bf16", ", %131, %132", GLC_WGMMA_R128, GLC_WGMMA_D128, 128, 129, 130);
  else
    GLC_WGMMA("m64n256k16", "f16", ", %131, %132", GLC_WGMMA_R128, GLC_WGMMA_D128, 128, 129, 130);
}

// A's descriptor for warpgroup wg's 64 rows of m in the stage at shared address `a` (its first k
// step): 8192 bytes a warpgroup either way. K-major: stride byte offset 1024 (the next 8 rows of
// m), leading byte offset unused (1). M-major (as B's N-major): the warpgroup's box of 64
// columns, stride byte offset 1024 (the next 8 rows of k), leading byte offset 8192 (the next
// block of 64 columns, which m64 never reaches).
template <typename S>
__device__ __forceinline__ uint64_t wgmma_desc_a(unsigned a, int wg) {
  const unsigned start = a + wg * 8192;
  return S::A_M_MAJOR ? wgmma_desc(start, 8192, 1024) : wgmma_desc(start, 16, 1024);
}

// B's descriptor for the stage at shared address `b` (its first k step). N-major: leading byte
// offset 8192, the next block of 64 columns; stride byte offset 1024, the next 8 rows of k.
// K-major: as A's, stride byte offset 1024 (the next 8 rows of n), leading byte offset unused
// (1).
template <typename S>
__device__ __forceinline__ uint64_t wgmma_desc_b(unsigned b) {
  return S::B_K_MAJOR ? wgmma_desc(b, 16, 1024) : wgmma_desc(b, 8192, 1024);
}

// One k slice (one 128-byte row of k: four k steps of 32 bytes, 16 halves or 8 floats) of a
// warpgroup's 64 x BN results: desc_a and desc_b describe the slice's first k step (the
// warpgroup's A rows and the whole B slice). The first step of a tile's first slice overwrites
// the accumulators (scale-d 0) instead of adding.
template <typename S>
__device__ __forceinline__ void wgmma_slice(float (&d)[S::BN / 2], uint64_t desc_a, uint64_t desc_b,
                                            bool accumulate) {
  using T = typename S::Type;
  // A k step in the descriptors' address field (bytes >> 4): K-major, 32 bytes along the
  // 128-byte rows (2); MN-major, 16 rows of 128 bytes (2048 bytes, 128).
  constexpr uint64_t A_STEP = S::A_M_MAJOR ? 128 : 2, B_STEP = S::B_K_MAJOR ? 2 : 128;
  // wgmma's imm-trans-a and imm-trans-b: 1 for an MN-major operand (16-bit types only)
  constexpr int TRANS_A = S::A_M_MAJOR ? 1 : 0, TRANS_B = S::B_K_MAJOR ? 0 : 1;
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    const uint64_t a = desc_a + A_STEP * kk, b = desc_b + B_STEP * kk;
    const int scale_d = kk > 0 || accumulate;
    if constexpr (S::BN == 128)
      wgmma_m64n128<T, TRANS_A, TRANS_B>(d, a, b, scale_d);
    else
      wgmma_m64n256<T, TRANS_A, TRANS_B>(d, a, b, scale_d);
  }
  wgmma_commit();
}

// Tile `tile` of the grouped order: wgmma_group_rows row tiles walked column by column, so that
// the blocks resident at once share a few of A's row panels and of B's column panels in L2.
__device__ __forceinline__ void wgmma_tile_origin(size_t tile, size_t tiles_m, size_t tiles_n,
                                                  int bm, int bn, size_t *row0, size_t *col0) {
  const size_t per_group = wgmma_group_rows * tiles_n, group = tile / per_group;
  const size_t first = group * wgmma_group_rows, in_group = tile - group * per_group;
  const size_t rows = tiles_m - first < wgmma_group_rows ? tiles_m - first : wgmma_group_rows;
  *row0 = (first + in_group % rows) * bm;
  *col0 = in_group / rows * bn;
}

// The epilogue's conversions: two adjacent results (p aligned to two elements), or one.
__device__ __forceinline__ void wgmma_store2(float *p, float x, float y) {
  *reinterpret_cast<float2 *>(p) = make_float2(x, y);
}
__device__ __forceinline__ void wgmma_store2(__half *p, float x, float y) {
  *reinterpret_cast<__half2 *>(p) = __floats2half2_rn(x, y);
}
__device__ __forceinline__ void wgmma_store2(__nv_bfloat16 *p, float x, float y) {
  *reinterpret_cast<__nv_bfloat162 *>(p) = __floats2bfloat162_rn(x, y);
}
__device__ __forceinline__ void wgmma_store1(float *p, float x) { *p = x; }
__device__ __forceinline__ void wgmma_store1(__half *p, float x) { *p = __float2half_rn(x); }
__device__ __forceinline__ void wgmma_store1(__nv_bfloat16 *p, float x) {
  *p = __float2bfloat16_rn(x);
}

// A warpgroup's 64 x BN results, rows from row0, columns from col0, from the accumulators:
// thread t (warp w = t / 32, lane l) holds, in d[4 j + 2 h + e], row 16 w + l / 4 + 8 h and
// column 8 j + 2 (l % 4) + e.
template <typename Out, int ACC>
__device__ __forceinline__ void wgmma_store_tile(Out *__restrict__ c, size_t m, size_t n,
                                                 size_t row0, size_t col0, const float (&d)[ACC],
                                                 bool vector_c) {
  const int t = threadIdx.x % 128;
  const size_t r = row0 + t / 32 * 16 + t % 32 / 4, c0 = col0 + t % 4 * 2;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const size_t row = r + 8 * h;
    if (row >= m) continue;
    Out *const c_row = c + row * n;
#pragma unroll
    for (int j = 0; j < ACC / 4; ++j) {
      const size_t col = c0 + 8 * j;
      const float x = d[4 * j + 2 * h], y = d[4 * j + 2 * h + 1];
      if (vector_c) {
        if (col < n) wgmma_store2(c_row + col, x, y);  // n even: both in or both out
      } else {
        if (col < n) wgmma_store1(c_row + col, x);
        if (col + 1 < n) wgmma_store1(c_row + col + 1, y);
      }
    }
  }
}

// Issues the TMA loads of A's part of slice kt, rows from row0, into the stage at shared address
// `stage`, counted by the full barrier `bar`.
template <typename S>
__device__ __forceinline__ void wgmma_load_a(const CUtensorMap *map_a, unsigned stage, unsigned bar,
                                             int kt, int row0) {
  if constexpr (S::A_M_MAJOR) {  // map_a describes A^T (k x m): a box of 64 columns a warpgroup
#pragma unroll
    for (int w = 0; w < S::A_BOXES; ++w)
      tma_load_2d(stage + w * S::A_BOX_BYTES, map_a, bar, row0 + 64 * w, kt * S::BK);
  } else {
    tma_load_2d(stage, map_a, bar, kt * S::BK, row0);
  }
}

// Issues the TMA loads of slice kt of the tile at (row0, col0) into the stage at shared address
// `stage`, counted by the full barrier `bar`.
template <typename S>
__device__ __forceinline__ void wgmma_load_slice(const CUtensorMap *map_a, const CUtensorMap *map_b,
                                                 unsigned stage, unsigned bar, int kt, int row0,
                                                 int col0) {
  mbar_arrive_expect_tx(bar, S::STAGE_BYTES);  // out-of-range parts count too: they are zeros
  wgmma_load_a<S>(map_a, stage, bar, kt, row0);
  if constexpr (S::B_K_MAJOR) {  // map_b describes B^T (n x k): one box of BN rows at col0
    tma_load_2d(stage + S::A_BYTES, map_b, bar, kt * S::BK, col0);
  } else {
#pragma unroll
    for (int j = 0; j < S::B_BOXES; ++j)
      tma_load_2d(stage + S::A_BYTES + j * S::B_BOX_BYTES, map_b, bar, col0 + 64 * j, kt * S::BK);
  }
}

#endif  // !defined(__CUDA_ARCH__) || GLC_WGMMA_BUILT

// Rung 3: two warpgroups, both consumers; thread 0 also issues the loads. One tile a block.
template <typename T, typename Out, int BN, int STAGES, int LAYOUT>
__global__ void __launch_bounds__(256, 1)
    hgemm_wgmma_kernel(const __grid_constant__ CUtensorMap map_a,
                       const __grid_constant__ CUtensorMap map_b, size_t m, size_t n, size_t k,
                       Out *__restrict__ c, int vector_c) {
#if GLC_WGMMA_BUILT
  using S = wgmma_shape<T, BN, STAGES, LAYOUT>;
  constexpr int ACC = BN / 2;  // FP32 accumulators a consumer thread
  extern __shared__ __align__(1024) unsigned char wgmma_shared[];
  const unsigned base = (wgmma_shared_address(wgmma_shared) + 1023u) & ~1023u;
  const unsigned full = base + STAGES * S::STAGE_BYTES;  // full[s] at full + 8 s
  const int tid = threadIdx.x, wg = tid / 128;
  if (tid == 0) {
    tma_prefetch_map(&map_a);
    tma_prefetch_map(&map_b);
    for (int s = 0; s < STAGES; ++s) mbar_init(full + 8 * s, 1);
    mbar_init_fence();
  }
  __syncthreads();
  size_t row0, col0;
  wgmma_tile_origin(blockIdx.x, (m + S::BM - 1) / S::BM, (n + BN - 1) / BN, S::BM, BN, &row0,
                    &col0);
  const int k_tiles = static_cast<int>((k + S::BK - 1) / S::BK);
  auto load = [&](int kt, int s) {
    wgmma_load_slice<S>(&map_a, &map_b, base + s * S::STAGE_BYTES, full + 8 * s, kt,
                        static_cast<int>(row0), static_cast<int>(col0));
  };
  if (tid == 0)
    for (int kt = 0; kt < STAGES - 1 && kt < k_tiles; ++kt) load(kt, kt);
  const uint64_t desc_a = wgmma_desc_a<S>(base, wg);
  const uint64_t desc_b = wgmma_desc_b<S>(base + S::A_BYTES);
  float d[ACC];
#pragma unroll
  for (int i = 0; i < ACC; ++i) d[i] = 0.0f;
  wgmma_fence_operands(d);
  int s = 0, refill = STAGES - 1;  // the stage of slice kt and of slice kt + STAGES - 1
  unsigned phase = 0;
  for (int kt = 0; kt < k_tiles; ++kt) {
    mbar_wait(full + 8 * s, phase);
    const uint64_t offset = s * (S::STAGE_BYTES >> 4);
    wgmma_slice<S>(d, desc_a + offset, desc_b + offset, kt > 0);
    wgmma_wait<1>();  // slice kt - 1's wgmma are complete (this warp's)
    __syncthreads();  // ... and every warp's: its stage, `refill`, may be overwritten
    if (tid == 0 && kt + STAGES - 1 < k_tiles) load(kt + STAGES - 1, refill);
    refill = s;
    if (++s == STAGES) {
      s = 0;
      phase ^= 1;
    }
  }
  wgmma_wait<0>();
  wgmma_fence_operands(d);
  wgmma_store_tile(c, m, n, row0 + 64 * wg, col0, d, vector_c != 0);
#endif
}

// Rung 4: a producer warpgroup (one thread issues the TMA loads) and two consumer warpgroups,
// full and empty barriers a stage; persistent over the tiles in the grouped order.
template <typename T, typename Out, int BN, int STAGES, int LAYOUT>
__global__ void __launch_bounds__(384, 1)
    hgemm_wgmma_ws_kernel(const __grid_constant__ CUtensorMap map_a,
                          const __grid_constant__ CUtensorMap map_b, size_t m, size_t n, size_t k,
                          Out *__restrict__ c, int vector_c) {
#if GLC_WGMMA_BUILT
  using S = wgmma_shape<T, BN, STAGES, LAYOUT>;
  constexpr int ACC = BN / 2;  // FP32 accumulators a consumer thread
  constexpr unsigned CONSUMER_WARPS = 8;
  extern __shared__ __align__(1024) unsigned char wgmma_shared[];
  const unsigned base = (wgmma_shared_address(wgmma_shared) + 1023u) & ~1023u;
  const unsigned full = base + STAGES * S::STAGE_BYTES, empty = full + 8 * STAGES;
  const int tid = threadIdx.x, wg = tid / 128;
  if (tid == 0) {
    tma_prefetch_map(&map_a);
    tma_prefetch_map(&map_b);
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full + 8 * s, 1);
      mbar_init(empty + 8 * s, CONSUMER_WARPS);
    }
    mbar_init_fence();
  }
  __syncthreads();
  const size_t tiles_m = (m + S::BM - 1) / S::BM, tiles_n = (n + BN - 1) / BN;
  const size_t tiles = tiles_m * tiles_n;
  const int k_tiles = static_cast<int>((k + S::BK - 1) / S::BK);
  if (wg == 0) {
    setmaxnreg_dec<40>();
    if (tid == 0) {
      int s = 0;
      unsigned phase = 0;
      for (size_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        size_t row0, col0;
        wgmma_tile_origin(tile, tiles_m, tiles_n, S::BM, BN, &row0, &col0);
        for (int kt = 0; kt < k_tiles; ++kt) {
          mbar_wait(empty + 8 * s, phase ^ 1);  // the consumers have released the stage
          wgmma_load_slice<S>(&map_a, &map_b, base + s * S::STAGE_BYTES, full + 8 * s, kt,
                              static_cast<int>(row0), static_cast<int>(col0));
          if (++s == STAGES) {
            s = 0;
            phase ^= 1;
          }
        }
      }
    }
  } else {
    setmaxnreg_inc<232>();
    const int consumer = wg - 1, lane = tid % 32;
    const uint64_t desc_a = wgmma_desc_a<S>(base, consumer);
    const uint64_t desc_b = wgmma_desc_b<S>(base + S::A_BYTES);
    float d[ACC];
#pragma unroll
    for (int i = 0; i < ACC; ++i) d[i] = 0.0f;
    int s = 0;
    unsigned phase = 0;
    for (size_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      size_t row0, col0;
      wgmma_tile_origin(tile, tiles_m, tiles_n, S::BM, BN, &row0, &col0);
      wgmma_fence_operands(d);
      int previous = 0;
      for (int kt = 0; kt < k_tiles; ++kt) {
        mbar_wait(full + 8 * s, phase);
        const uint64_t offset = s * (S::STAGE_BYTES >> 4);
        wgmma_slice<S>(d, desc_a + offset, desc_b + offset, kt > 0);
        wgmma_wait<1>();  // slice kt - 1's wgmma (this warp's) are complete
        if (kt > 0 && lane == 0) mbar_arrive(empty + 8 * previous);
        previous = s;
        if (++s == STAGES) {
          s = 0;
          phase ^= 1;
        }
      }
      wgmma_wait<0>();
      if (lane == 0) mbar_arrive(empty + 8 * previous);
      wgmma_fence_operands(d);
      wgmma_store_tile(c, m, n, row0 + 64 * consumer, col0, d, vector_c != 0);
    }
  }
#endif
}

// ---- rung 5: clusters of two blocks, B multicast, C through shared memory and the TMA ----------
//
// A cluster of two blocks (cluster dims (2, 1, 1)) computes a 256 x BN cluster tile: block r of
// the cluster (%cluster_ctarank) the 128 x BN rows from row0 + 128 r, with rung 4's warpgroups.
// Both need the same B slice: each block's producer loads its own A box(es) and half of B's
// boxes (N-major: box j where j % 2 == r; K-major: B^T's BN rows in two boxes of BN / 2, box r),
// multicast to both blocks' shared memory (ctaMask 0b11) at the same offset, where it completes
// the same stage's full barrier in each block. So each full barrier
// still expects the whole stage's bytes, half of them written by the other block, and L2 sends
// each B box once to the pair instead of once to each block. A stage may be refilled only when
// the consumers of both blocks are done with it (the other block writes into it too): each
// consumer warp releases it on both blocks' empty barriers (lane 0 on block 0's, lane 1 on block
// 1's, through mapa's shared::cluster addresses), so an empty barrier counts 16 arrivals.
//
// Epilogue: a consumer converts its 64 x BN results into 64-row x 128-byte subtiles (64 columns
// of a 16-bit C, 32 of a float32 C) in shared buffers with the 128-byte swizzle (conflict-free
// stores), and one of its threads stores each by the TMA (cp.async.bulk.tensor, bulk groups);
// the hardware clips the parts of a box outside C, so the m and n tails need no guards. The
// buffers form a ring of C_BUFFERS a consumer; a buffer is rewritten only once the store before
// has read it (cp.async.bulk.wait_group.read), so the consumer goes on to the next tile's slices
// (which the producer is already loading) while its stores leave.

template <typename T, int BN_, int STAGES_, int LAYOUT>
struct cluster_shape : wgmma_shape<T, BN_, STAGES_, LAYOUT> {
  using W = wgmma_shape<T, BN_, STAGES_, LAYOUT>;
  static constexpr unsigned C_BOX_BYTES = 64 * 128;  // a subtile: 64 rows of 128 bytes
  // What is left of an SM's 227 KiB after the alignment slack, the stages and the 2 x STAGES
  // mbarriers, in subtile buffers a consumer (two consumers), at most 4.
  static constexpr unsigned FIXED_BYTES = 1024 + STAGES_ * W::STAGE_BYTES + 16 * STAGES_;
  static constexpr unsigned SPARE = 227 * 1024 - FIXED_BYTES;
  static constexpr int C_BUFFERS =
      SPARE / (2 * C_BOX_BYTES) < 4 ? static_cast<int>(SPARE / (2 * C_BOX_BYTES)) : 4;
  static constexpr unsigned C_BYTES = 2 * C_BUFFERS * C_BOX_BYTES;
  static constexpr unsigned SHARED_BYTES = FIXED_BYTES + C_BYTES;
  static_assert(FIXED_BYTES < 227 * 1024 && C_BUFFERS >= 2, "two C buffers a consumer fit");
  static_assert(SHARED_BYTES <= 227 * 1024, "the stages and C's buffers fit an SM");
};

#if !defined(__CUDA_ARCH__) || GLC_WGMMA_BUILT

__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}

__device__ __forceinline__ unsigned cluster_index() {
  unsigned r;
  asm volatile("mov.u32 %0, %%clusterid.x;\n" : "=r"(r));
  return r;
}

__device__ __forceinline__ unsigned cluster_count() {
  unsigned r;
  asm volatile("mov.u32 %0, %%nclusterid.x;\n" : "=r"(r));
  return r;
}

// Every thread of both blocks: arrives (release), then waits (acquire) for all of them. The warp
// reconverges first (the producer's warp arrives here from its one busy thread's loop).
__device__ __forceinline__ void cluster_sync() {
  __syncwarp();
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}

// The shared::cluster address of the shared variable at `address` in block `rank` of the cluster.
__device__ __forceinline__ unsigned cluster_map(unsigned address, unsigned rank) {
  unsigned out;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(out) : "r"(address), "r"(rank));
  return out;
}

// One arrival on the mbarrier at a shared::cluster address (this block's or the other's). The
// default semantics (release at CTA scope), as a consumer's release needs only its wgmma's reads
// of the stage complete (wgmma.wait_group) before it: .release.cluster would add a GPU-wide
// memory barrier (MEMBAR.ALL.GPU in the SASS) to every slice.
__device__ __forceinline__ void mbar_arrive_cluster(unsigned cluster_bar) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(cluster_bar) : "memory");
}

// mbar_wait with cluster scope: the arrivals it waits for include the other block's.
__device__ __forceinline__ void mbar_wait_cluster(unsigned bar, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}

// tma_load_2d to the same offset dst in every block of `mask`, completing on each one's bar.
__device__ __forceinline__ void tma_load_2d_multicast(unsigned dst, const CUtensorMap *map,
                                                      unsigned bar, int inner, int outer,
                                                      unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%3, %4}], [%2], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(inner), "r"(outer), "h"(mask)
      : "memory");
}

// The box of `map` at (inner, outer) from shared src, in this thread's current bulk group.
__device__ __forceinline__ void tma_store_2d(const CUtensorMap *map, unsigned src, int inner,
                                             int outer) {
  asm volatile(
      "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(
          reinterpret_cast<uint64_t>(map)),
      "r"(src), "r"(inner), "r"(outer)
      : "memory");
}

__device__ __forceinline__ void bulk_commit() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}

// Waits until at most N of this thread's bulk groups still read their shared source.
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}

// Waits until all of this thread's bulk groups are complete (their writes done).
__device__ __forceinline__ void bulk_wait_all() {
  asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}

// Makes this thread's shared-memory writes visible to the async proxy (the TMA's reads).
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// A barrier of `count` threads on hardware barrier `id` (0 is __syncthreads').
__device__ __forceinline__ void named_barrier_sync(unsigned id, unsigned count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

__device__ __forceinline__ void shared_store_pair(unsigned address, __half, float x, float y) {
  const __half2 v = __floats2half2_rn(x, y);
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(address),
               "r"(*reinterpret_cast<const unsigned *>(&v))
               : "memory");
}
__device__ __forceinline__ void shared_store_pair(unsigned address, __nv_bfloat16, float x,
                                                  float y) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(x, y);
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(address),
               "r"(*reinterpret_cast<const unsigned *>(&v))
               : "memory");
}
__device__ __forceinline__ void shared_store_pair(unsigned address, float, float x, float y) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(address), "f"(x), "f"(y) : "memory");
}

// Subtile q of a warpgroup's 64 x BN results (columns q * 128 / sizeof(Out) on) into the
// 128-byte-swizzled buffer at shared address buf: row r at r * 128, its 16-byte chunk c at
// chunk c ^ (r % 8). Thread t (warp w, lane l) holds rows 16 w + l / 4 (+ 8), so r % 8 = l / 4,
// and the pair of columns 8 j + 2 (l % 4): bytes 2 (8 j + 2 (l % 4)) * sizeof(Out) of the row.
// q is a constant once the caller's loop is unrolled (d is indexed by it).
template <typename Out, int ACC>
__device__ __forceinline__ void cluster_stage_subtile(unsigned buf, const float (&d)[ACC], int q,
                                                      int t) {
  constexpr int J = 128 / sizeof(Out) / 8;  // the j of a subtile: 8 (16-bit C) or 4 (float32)
  const int w = t / 32, l = t % 32, swizzle = l / 4;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const unsigned row = buf + (16 * w + l / 4 + 8 * h) * 128;
#pragma unroll
    for (int jj = 0; jj < J; ++jj) {
      const int j = q * J + jj;
      const unsigned byte = (8 * jj + 2 * (l % 4)) * sizeof(Out);
      const unsigned chunk = (byte >> 4) ^ swizzle;
      shared_store_pair(row + (chunk << 4) + (byte & 15), Out{}, d[4 * j + 2 * h],
                        d[4 * j + 2 * h + 1]);
    }
  }
}

// A consumer's 64 x BN results (rows from row0, columns from col0) through its ring of
// C_BUFFERS subtile buffers at shared address bufs and the TMA; count: the subtiles this
// consumer has stored so far (the ring's position). Each subtile: every thread writes its part
// and fences it for the TMA; thread 0 waits until the store that last read the buffer the
// *next* subtile writes is done reading it; a barrier of the warpgroup; thread 0 stores.
template <typename Out, int BN, int C_BUFFERS>
__device__ __forceinline__ void cluster_store_tile(const CUtensorMap *map_c, unsigned bufs,
                                                   unsigned barrier_id, size_t m, size_t n,
                                                   size_t row0, size_t col0,
                                                   const float (&d)[BN / 2], unsigned *count) {
  constexpr int SUB_COLS = 128 / sizeof(Out), SUBTILES = BN / SUB_COLS;
  const int t = threadIdx.x % 128;
  if (row0 >= m) return;  // the warpgroup's rows are all past C (a last cluster tile)
#pragma unroll
  for (int q = 0; q < SUBTILES; ++q) {
    const size_t col = col0 + q * SUB_COLS;
    if (col >= n) break;  // the rest of the tile is past C's columns
    const unsigned buf = bufs + (*count % C_BUFFERS) * (64 * 128);
    cluster_stage_subtile<Out>(buf, d, q, t);
    fence_proxy_async_shared();
    if (t == 0) bulk_wait_read<C_BUFFERS - 2>();
    named_barrier_sync(barrier_id, 128);
    if (t == 0) {
      tma_store_2d(map_c, buf, static_cast<int>(col), static_cast<int>(row0));
      bulk_commit();
    }
    ++*count;
  }
}

#endif  // !defined(__CUDA_ARCH__) || GLC_WGMMA_BUILT

// Rung 5: rung 4's producer and consumers in clusters of two blocks along m that share B's
// slices by multicast; persistent over the 256 x BN cluster tiles in the grouped order; C
// through shared memory and the TMA (tma_c) or, where C or its rows are not 16-byte aligned,
// from registers.
template <typename T, typename Out, int BN, int STAGES, int LAYOUT>
__global__ void __launch_bounds__(384, 1)
    hgemm_wgmma_cluster_kernel(const __grid_constant__ CUtensorMap map_a,
                               const __grid_constant__ CUtensorMap map_b,
                               const __grid_constant__ CUtensorMap map_c, size_t m, size_t n,
                               size_t k, Out *__restrict__ c, int vector_c, int tma_c) {
#if GLC_WGMMA_BUILT
  using S = cluster_shape<T, BN, STAGES, LAYOUT>;
  constexpr int ACC = BN / 2;                      // FP32 accumulators a consumer thread
  constexpr unsigned CLUSTER_CONSUMER_WARPS = 16;  // 8 a block, both blocks release a stage
  extern __shared__ __align__(1024) unsigned char wgmma_shared[];
  const unsigned base = (wgmma_shared_address(wgmma_shared) + 1023u) & ~1023u;
  const unsigned c_bufs = base + STAGES * S::STAGE_BYTES;  // C_BUFFERS a consumer, 8 KiB each
  const unsigned full = c_bufs + S::C_BYTES, empty = full + 8 * STAGES;
  const int tid = threadIdx.x, wg = tid / 128;
  const unsigned rank = cluster_rank();
  if (tid == 0) {
    tma_prefetch_map(&map_a);
    tma_prefetch_map(&map_b);
    if (tma_c) tma_prefetch_map(&map_c);
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full + 8 * s, 1);
      mbar_init(empty + 8 * s, CLUSTER_CONSUMER_WARPS);
    }
    mbar_init_fence();
  }
  // Both blocks' barriers are initialized before either block's TMA or arrivals reach them.
  cluster_sync();
  const size_t tiles_m = (m + 2 * S::BM - 1) / (2 * S::BM), tiles_n = (n + BN - 1) / BN;
  const size_t tiles = tiles_m * tiles_n;  // cluster tiles, 256 x BN
  const size_t first = cluster_index(), stride = cluster_count();
  const int k_tiles = static_cast<int>((k + S::BK - 1) / S::BK);
  if (wg == 0) {
    setmaxnreg_dec<40>();
    if (tid == 0) {
      int s = 0;
      unsigned phase = 0;
      for (size_t tile = first; tile < tiles; tile += stride) {
        size_t row0, col0;
        wgmma_tile_origin(tile, tiles_m, tiles_n, 2 * S::BM, BN, &row0, &col0);
        const int row = static_cast<int>(row0 + S::BM * rank), col = static_cast<int>(col0);
        for (int kt = 0; kt < k_tiles; ++kt) {
          // both blocks' consumers have released the stage (the other block's arrive remotely)
          mbar_wait_cluster(empty + 8 * s, phase ^ 1);
          const unsigned stage = base + s * S::STAGE_BYTES, bar = full + 8 * s;
          // the whole stage: A's boxes from here, B's boxes half from here, half from the other
          mbar_arrive_expect_tx(bar, S::STAGE_BYTES);
          wgmma_load_a<S>(&map_a, stage, bar, kt, row);
          if constexpr (S::B_K_MAJOR) {  // B^T's box of BN rows (n) as two of BN / 2: this block's
            const int half = static_cast<int>(rank);
            tma_load_2d_multicast(stage + S::A_BYTES + half * (S::B_BOX_BYTES / 2), &map_b, bar,
                                  kt * S::BK, col + half * (BN / 2), 0x3);
          } else {
#pragma unroll
            for (int i = 0; i < S::B_BOXES / 2; ++i) {
              const int j = 2 * i + static_cast<int>(rank);
              tma_load_2d_multicast(stage + S::A_BYTES + j * S::B_BOX_BYTES, &map_b, bar,
                                    col + 64 * j, kt * S::BK, 0x3);
            }
          }
          if (++s == STAGES) {
            s = 0;
            phase ^= 1;
          }
        }
      }
      // Until both blocks' consumers have released every stage for the last time: no arrival
      // from the other block is still on its way to this block's barriers.
      for (int i = 0; i < STAGES; ++i) {
        mbar_wait_cluster(empty + 8 * s, phase ^ 1);
        if (++s == STAGES) {
          s = 0;
          phase ^= 1;
        }
      }
    }
  } else {
    setmaxnreg_inc<232>();
    const int consumer = wg - 1, lane = tid % 32;
    const uint64_t desc_a = wgmma_desc_a<S>(base, consumer);
    const uint64_t desc_b = wgmma_desc_b<S>(base + S::A_BYTES);
    // lane 0 releases block 0's empty barriers, lane 1 block 1's
    const unsigned release = cluster_map(empty, lane & 1);
    const unsigned my_bufs = c_bufs + consumer * S::C_BUFFERS * S::C_BOX_BYTES;
    unsigned stored = 0;
    float d[ACC];
#pragma unroll
    for (int i = 0; i < ACC; ++i) d[i] = 0.0f;
    int s = 0;
    unsigned phase = 0;
    for (size_t tile = first; tile < tiles; tile += stride) {
      size_t row0, col0;
      wgmma_tile_origin(tile, tiles_m, tiles_n, 2 * S::BM, BN, &row0, &col0);
      row0 += S::BM * rank + 64 * consumer;
      wgmma_fence_operands(d);
      int previous = 0;
      for (int kt = 0; kt < k_tiles; ++kt) {
        mbar_wait(full + 8 * s, phase);
        const uint64_t offset = s * (S::STAGE_BYTES >> 4);
        wgmma_slice<S>(d, desc_a + offset, desc_b + offset, kt > 0);
        wgmma_wait<1>();  // slice kt - 1's wgmma (this warp's) are complete
        if (kt > 0 && lane < 2) mbar_arrive_cluster(release + 8 * previous);
        previous = s;
        if (++s == STAGES) {
          s = 0;
          phase ^= 1;
        }
      }
      wgmma_wait<0>();
      if (lane < 2) mbar_arrive_cluster(release + 8 * previous);
      wgmma_fence_operands(d);
      if (tma_c)
        cluster_store_tile<Out, BN, S::C_BUFFERS>(&map_c, my_bufs, 1 + consumer, m, n, row0, col0,
                                                  d, &stored);
      else
        wgmma_store_tile(c, m, n, row0, col0, d, vector_c != 0);
    }
    if (tid % 128 == 0) bulk_wait_all();  // C's stores have read their buffers and written C
  }
  // No block leaves while the other may still multicast into it or arrive on its barriers.
  cluster_sync();
#endif
}

// ---- host ------------------------------------------------------------------------------------

// The driver's cuTensorMapEncodeTiled, fetched through the runtime once (no link to libcuda).
using wgmma_encode_tiled = CUresult (*)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                                        const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                                        const cuuint32_t *, CUtensorMapInterleave,
                                        CUtensorMapSwizzle, CUtensorMapL2promotion,
                                        CUtensorMapFloatOOBfill);

wgmma_encode_tiled wgmma_encoder() {
  static const wgmma_encode_tiled entry = [] {
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult found;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault,
                                         &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      fn = nullptr;
    }
    return reinterpret_cast<wgmma_encode_tiled>(fn);
  }();
  return entry;
}

// A row-major outer x inner matrix at base of dtype's elements (GLC_F16, GLC_BF16: 2 bytes;
// GLC_F32: 4), read in boxes of one 128-byte row of inner (64 or 32 elements) x box_outer with
// the 128-byte swizzle; boxes past the edges are zero-filled.
int wgmma_tensor_map(CUtensorMap *map, int dtype, const void *base, size_t inner, size_t outer,
                     unsigned box_outer, const char *call) {
  const wgmma_encode_tiled encode = wgmma_encoder();
  if (encode == nullptr) return glc_fail(cudaErrorNotSupported, "cuTensorMapEncodeTiled");
  const unsigned bytes = dtype == GLC_F32 ? 4 : 2;
  const CUtensorMapDataType type = dtype == GLC_F32    ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                   : dtype == GLC_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                       : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const cuuint64_t dims[2] = {inner, outer}, strides[1] = {inner * bytes};
  const cuuint32_t box[2] = {128 / bytes, box_outer}, element_strides[2] = {1, 1};
  const CUresult result =
      encode(map, type, 2, const_cast<void *>(base), dims, strides, box, element_strides,
             CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
             CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return result == CUDA_SUCCESS ? cudaSuccess : glc_fail(cudaErrorInvalidValue, call);
}

// The rungs' launchers (the 16-bit ones, and the float ones: ws for tf32, cluster for
// tf32_cluster).
enum class WgmmaRung { plain, ws, cluster };

// 0 where the current device runs the kernels (sm90a.cuh), else cudaErrorNotSupported naming
// rung R's kernel.
int wgmma_runs_here(WgmmaRung R) {
  static std::atomic<int> cached[glc_cached_devices] = {};
  bool yes = false;
  const int code = glc_sm90a_kernels_loaded(&glc_hgemm_wgmma_built, cached, &yes);
  if (code || yes) return code;
  return glc_fail(
      cudaErrorNotSupported,
      R == WgmmaRung::cluster ? "hgemm_wgmma_cluster_kernel(sm_90a build, compute capability 9.0)"
      : R == WgmmaRung::ws    ? "hgemm_wgmma_ws_kernel(sm_90a build, compute capability 9.0)"
                              : "hgemm_wgmma_kernel(sm_90a build, compute capability 9.0)");
}

// Whether the TMA's int32 coordinates reach every tile (a tile's origin plus its box stays below
// 2^31).
bool wgmma_coordinates_fit(size_t m, size_t n, size_t k) {
  constexpr size_t limit = INT_MAX - 512;
  return m <= limit && n <= limit && k <= limit;
}

// A launch's arguments beside its kernel's template: A's and B's tensor maps, rung 5's C map
// (where tma_c), the sizes, C and how to store it.
struct WgmmaArgs {
  CUtensorMap map_a, map_b, map_c;
  size_t m, n, k;
  void *c;
  int vector_c, tma_c;
  cudaStream_t stream;

  WgmmaArgs(size_t m_, size_t n_, size_t k_, void *c_, cudaStream_t stream_)
      : map_a{},
        map_b{},
        map_c{},
        m(m_),
        n(n_),
        k(k_),
        c(c_),
        vector_c(0),
        tma_c(0),
        stream(stream_) {}
};

// Rungs 3 and 4.
template <typename T, typename Out, int BN, int STAGES, int LAYOUT, bool WS>
int wgmma_launch(const WgmmaArgs &g) {
  using S = wgmma_shape<T, BN, STAGES, LAYOUT>;
  // only the kernel asked for is instantiated (float has the warp-specialized one alone)
  auto *kernel = [] {
    if constexpr (WS)
      return hgemm_wgmma_ws_kernel<T, Out, BN, STAGES, LAYOUT>;
    else
      return hgemm_wgmma_kernel<T, Out, BN, STAGES, LAYOUT>;
  }();
  const char *name = WS ? "hgemm_wgmma_ws_kernel" : "hgemm_wgmma_kernel";
  const size_t tiles = glc_blocks_to_cover(g.m, S::BM) * glc_blocks_to_cover(g.n, BN);
  size_t grid = tiles;
  if (WS) {  // persistent: one block an SM (the stages take most of its shared memory)
    int sm_count = 0;
    const int code = glc_current_sm_count(&sm_count);
    if (code) return code;
    if (grid > static_cast<size_t>(sm_count)) grid = static_cast<size_t>(sm_count);
  } else if (grid > glc_max_grid_x) {
    return glc_fail(cudaErrorNotSupported, "hgemm_wgmma_kernel(tiles)");
  }
  int code = GLC_CUDA(cudaFuncSetAttribute, kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                      static_cast<int>(S::SHARED_BYTES));
  if (code) return code;
  return glc_launch_shared(kernel, name, dim3(static_cast<unsigned>(grid)), dim3(WS ? 384 : 256),
                           S::SHARED_BYTES, g.stream, g.map_a, g.map_b, g.m, g.n, g.k,
                           static_cast<Out *>(g.c), g.vector_c);
}

// Rung 5: clusters of two blocks, as many as the device holds at once
// (cudaOccupancyMaxActiveClusters, asked once a device) and no more than there are cluster tiles.
template <typename T, typename Out, int BN, int STAGES, int LAYOUT>
int wgmma_cluster_launch(const WgmmaArgs &g) {
  using S = cluster_shape<T, BN, STAGES, LAYOUT>;
  auto *kernel = hgemm_wgmma_cluster_kernel<T, Out, BN, STAGES, LAYOUT>;
  const char *name = "hgemm_wgmma_cluster_kernel";
  int code = GLC_CUDA(cudaFuncSetAttribute, kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                      static_cast<int>(S::SHARED_BYTES));
  if (code) return code;
  cudaLaunchAttribute cluster[1];
  cluster[0].id = cudaLaunchAttributeClusterDimension;
  cluster[0].val.clusterDim.x = 2;
  cluster[0].val.clusterDim.y = 1;
  cluster[0].val.clusterDim.z = 1;
  cudaLaunchConfig_t config = {};
  config.blockDim = dim3(384);
  config.dynamicSmemBytes = S::SHARED_BYTES;
  config.stream = g.stream;
  config.attrs = cluster;
  config.numAttrs = 1;
  static std::atomic<int> cached[glc_cached_devices] = {};  // 0: not asked, else clusters + 1
  int device = 0;
  code = GLC_CUDA(cudaGetDevice, &device);
  if (code) return code;
  const bool cacheable = device >= 0 && device < glc_cached_devices;
  int clusters = cacheable ? cached[device].load(std::memory_order_relaxed) - 1 : -1;
  if (clusters < 0) {
    int sm_count = 0;
    code = glc_current_sm_count(&sm_count);
    if (code) return code;
    config.gridDim = dim3(static_cast<unsigned>(sm_count / 2 * 2));
    code = GLC_CUDA(cudaOccupancyMaxActiveClusters, &clusters, kernel, &config);
    if (code) return code;
    if (clusters > sm_count / 2) clusters = sm_count / 2;
    if (cacheable) cached[device].store(clusters + 1, std::memory_order_relaxed);
  }
  if (clusters < 1)
    return glc_fail(cudaErrorNotSupported, "hgemm_wgmma_cluster_kernel(clusters of 2)");
  const size_t tiles = glc_blocks_to_cover(g.m, 2 * S::BM) * glc_blocks_to_cover(g.n, BN);
  const size_t grid = tiles < static_cast<size_t>(clusters) ? tiles : static_cast<size_t>(clusters);
  config.gridDim = dim3(static_cast<unsigned>(2 * grid));
  glc_note_launch_if_noting(reinterpret_cast<const void *>(kernel), config.gridDim, config.blockDim,
                            S::SHARED_BYTES);
  code = cudaLaunchKernelEx(&config, kernel, g.map_a, g.map_b, g.map_c, g.m, g.n, g.k,
                            static_cast<Out *>(g.c), g.vector_c, g.tma_c);
  return glc_fail(code, name);
}

// The five (bn, stages) instantiations of rung R for one (input, output) type pair and layout.
template <WgmmaRung R, typename T, typename Out, int LAYOUT>
int wgmma_dispatch(const glc_matmul_tunables &t, const WgmmaArgs &g) {
  switch (t.bn << 8 | t.stages) {
#define GLC_HGEMM_WGMMA_CASE(BN, STAGES)                          \
  case BN << 8 | STAGES:                                          \
    if constexpr (R == WgmmaRung::cluster)                        \
      return wgmma_cluster_launch<T, Out, BN, STAGES, LAYOUT>(g); \
    else                                                          \
      return wgmma_launch<T, Out, BN, STAGES, LAYOUT, R == WgmmaRung::ws>(g);
    GLC_HGEMM_WGMMA_CASE(128, 3)
    GLC_HGEMM_WGMMA_CASE(128, 4)
    GLC_HGEMM_WGMMA_CASE(128, 5)
    GLC_HGEMM_WGMMA_CASE(256, 3)
    GLC_HGEMM_WGMMA_CASE(256, 4)
#undef GLC_HGEMM_WGMMA_CASE
    default:
      return glc_fail(cudaErrorInvalidValue, "glc_hgemm_wgmma(tunables)");
  }
}

// Fills a zero *value with fallback; true when the result is one of the allowed values.
bool wgmma_resolve_one(int *value, int fallback, int allowed0, int allowed1 = -1,
                       int allowed2 = -1) {
  if (*value == 0) *value = fallback;
  return *value == allowed0 || *value == allowed1 || *value == allowed2;
}

// C (outer x inner, elements of out_bytes) stored in boxes of 128 bytes (inner) x 64 rows from
// 128-byte-swizzled shared buffers: rung 5's TMA stores.
int wgmma_store_map(CUtensorMap *map, int out_dtype, void *base, size_t inner, size_t outer) {
  const wgmma_encode_tiled encode = wgmma_encoder();
  if (encode == nullptr) return glc_fail(cudaErrorNotSupported, "cuTensorMapEncodeTiled");
  const size_t bytes = out_dtype == GLC_F32 ? 4 : 2;
  const cuuint64_t dims[2] = {inner, outer}, strides[1] = {inner * bytes};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(128 / bytes), 64}, element_strides[2] = {1, 1};
  const CUtensorMapDataType type = out_dtype == GLC_F32    ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                   : out_dtype == GLC_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                           : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const CUresult result =
      encode(map, type, 2, base, dims, strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
             CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return result == CUDA_SUCCESS ? cudaSuccess
                                : glc_fail(cudaErrorInvalidValue, "cuTensorMapEncodeTiled(C)");
}

// How C is stored: two adjacent results at once where n is even and every row of C starts
// aligned to two elements; rung 5 by the TMA where C is 16-byte aligned and its rows 16-byte
// multiples, its store map then in g.map_c.
int wgmma_c_store(WgmmaArgs *g, WgmmaRung rung, int out_dtype) {
  const size_t out_bytes = out_dtype == GLC_F32 ? 4 : 2;
  g->vector_c = g->n % 2 == 0 && glc_all_aligned(2 * out_bytes, g->c) ? 1 : 0;
  g->map_c = CUtensorMap{};
  g->tma_c = rung == WgmmaRung::cluster && glc_all_aligned(16, g->c) && g->n * out_bytes % 16 == 0;
  return g->tma_c ? wgmma_store_map(&g->map_c, out_dtype, g->c, g->n, g->m) : cudaSuccess;
}

// Rung R's kernels on 16-bit operands lying as LAYOUT says: the (input, output) type pair.
template <WgmmaRung R, int LAYOUT>
int wgmma_types(const glc_matmul_tunables &t, int dtype, int out_dtype, const WgmmaArgs &g) {
  const bool to_f32 = out_dtype == GLC_F32;
  if (dtype == GLC_F16)
    return to_f32 ? wgmma_dispatch<R, __half, float, LAYOUT>(t, g)
                  : wgmma_dispatch<R, __half, __half, LAYOUT>(t, g);
  return to_f32 ? wgmma_dispatch<R, __nv_bfloat16, float, LAYOUT>(t, g)
                : wgmma_dispatch<R, __nv_bfloat16, __nv_bfloat16, LAYOUT>(t, g);
}

constexpr int wgmma_layouts = GLC_MATMUL_A_T | GLC_MATMUL_B_T;  // the layout bits there are

// Rungs 3, 4 and 5: the checks, A's and B's tensor maps (as the layout has them), for rung 5
// C's where the TMA can store it, the kernel.
template <WgmmaRung R>
int wgmma_gemm(const glc_matmul_tunables *tunables, int dtype, int out_dtype, int layout, size_t m,
               size_t n, size_t k, const void *a, const void *b, void *c, glc_stream stream) {
  glc_matmul_tunables t;
  int code = glc_hgemm_wgmma_resolve(tunables, &t);
  if (code) return code;
  if (dtype != GLC_F16 && dtype != GLC_BF16)
    return glc_fail(cudaErrorInvalidValue, "glc_hgemm_wgmma(dtype)");
  if (out_dtype != dtype && out_dtype != GLC_F32)
    return glc_fail(cudaErrorInvalidValue, "glc_hgemm_wgmma(out_dtype)");
  if (layout & ~wgmma_layouts) return glc_fail(cudaErrorInvalidValue, "glc_hgemm_wgmma(layout)");
  if (m == 0 || n == 0) return cudaSuccess;
  const size_t out_bytes = out_dtype == GLC_F32 ? 4 : 2;
  if (m > SIZE_MAX / n / out_bytes)
    return glc_fail(cudaErrorInvalidValue, "glc_hgemm_wgmma(sizes)");
  if (!glc_all_aligned(out_bytes, c) || (k && !glc_all_aligned(2, a, b)))
    return glc_fail(cudaErrorInvalidValue, "glc_hgemm_wgmma(alignment)");
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  // k == 0: an empty sum, C = 0 (zero bits are 0.0 in all three types), with no kernel
  if (k == 0) return glc_memset_async(c, 0, m * n * out_bytes, stream);
  code = wgmma_runs_here(R);
  if (code) return code;
  // The tensor maps: 16-byte aligned bases and row strides, and int32 coordinates.
  if (!glc_hgemm_tma_describes(layout, m, n, k, a, b))
    return glc_fail(cudaErrorNotSupported,
                    "glc_hgemm_wgmma(A's and B's rows % 8, 16-byte aligned A and B)");
  if (!wgmma_coordinates_fit(m, n, k))
    return glc_fail(cudaErrorNotSupported, "glc_hgemm_wgmma(m, n, k < 2^31)");
  WgmmaArgs g(m, n, k, c, s);
  // A: 128 rows (m) a box; A^T (k x m): 64 rows (k) of 64 columns (m), a box a warpgroup. B: 64
  // rows (k) of 64 columns (n); B^T (n x k): bn rows (n), bn / 2 for rung 5's halves.
  code = layout & GLC_MATMUL_A_T
             ? wgmma_tensor_map(&g.map_a, dtype, a, m, k, 64, "cuTensorMapEncodeTiled(A^T)")
             : wgmma_tensor_map(&g.map_a, dtype, a, k, m, 128, "cuTensorMapEncodeTiled(A)");
  if (code) return code;
  const unsigned bt_rows = static_cast<unsigned>(R == WgmmaRung::cluster ? t.bn / 2 : t.bn);
  code = layout & GLC_MATMUL_B_T
             ? wgmma_tensor_map(&g.map_b, dtype, b, k, n, bt_rows, "cuTensorMapEncodeTiled(B^T)")
             : wgmma_tensor_map(&g.map_b, dtype, b, n, k, 64, "cuTensorMapEncodeTiled(B)");
  if (code) return code;
  code = wgmma_c_store(&g, R, out_dtype);
  if (code) return code;
  switch (layout) {
    case 0:
      return wgmma_types<R, 0>(t, dtype, out_dtype, g);
    case GLC_MATMUL_A_T:
      return wgmma_types<R, GLC_MATMUL_A_T>(t, dtype, out_dtype, g);
    case GLC_MATMUL_B_T:
      return wgmma_types<R, GLC_MATMUL_B_T>(t, dtype, out_dtype, g);
    default:
      return wgmma_types<R, GLC_MATMUL_A_T | GLC_MATMUL_B_T>(t, dtype, out_dtype, g);
  }
}

// The TF32 launchers (R: ws for glc_sgemm_wgmma_tf32, cluster for glc_sgemm_wgmma_tf32_cluster):
// the checks, A and B^T as the float kernels take them (given, else transposed into workspaces),
// the tensor maps, the kernel.
template <WgmmaRung R>
int wgmma_tf32_gemm(const glc_matmul_tunables *tunables, int layout, size_t m, size_t n, size_t k,
                    const float *a, const float *b, float *c, glc_stream stream) {
  constexpr bool CLUSTER = R == WgmmaRung::cluster;
  // the entry's name and what failed, a string literal either way
#define GLC_TF32_CALL(what) \
  (CLUSTER ? "glc_sgemm_wgmma_tf32_cluster" what : "glc_sgemm_wgmma_tf32" what)
  glc_matmul_tunables t;
  int code = glc_hgemm_wgmma_resolve(tunables, &t);
  if (code) return code;
  if (layout & ~wgmma_layouts) return glc_fail(cudaErrorInvalidValue, GLC_TF32_CALL("(layout)"));
  if (m == 0 || n == 0) return cudaSuccess;
  constexpr size_t f = sizeof(float);
  if (m > SIZE_MAX / n / f || (k && (n > SIZE_MAX / k / f || m > SIZE_MAX / k / f)))
    return glc_fail(cudaErrorInvalidValue, GLC_TF32_CALL("(sizes)"));
  if (!glc_all_aligned(f, c) || (k && !glc_all_aligned(f, a, b)))
    return glc_fail(cudaErrorInvalidValue, GLC_TF32_CALL("(alignment)"));
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  // k == 0: an empty sum, C = 0, with no kernel
  if (k == 0) return glc_memset_async(c, 0, m * n * f, stream);
  code = wgmma_runs_here(R);
  if (code) return code;
  if (!glc_sgemm_tma_describes(layout, k, a, b))
    return glc_fail(
        cudaErrorNotSupported,
        GLC_TF32_CALL("(k % 4, k <= 4194240, 16-byte aligned A and B^T read in place)"));
  if (!wgmma_coordinates_fit(m, n, k))
    return glc_fail(cudaErrorNotSupported, GLC_TF32_CALL("(m, n, k < 2^31)"));
#undef GLC_TF32_CALL
  // A (m x k) and B^T (n x k), row-major (K-major, as wgmma takes 32-bit operands): given, or
  // written by the transpose's best rung into workspaces from the stream-ordered pool, whose
  // rows are k floats (16-byte multiples since k % 4 == 0) and whose blocks are aligned; their
  // destructors free them on the stream, after the kernel that reads them.
  WgmmaArgs g(m, n, k, c, s);
  CUtensorMap &map_a = g.map_a, &map_b = g.map_b;
  // B^T's boxes: bn rows (n), bn / 2 for rung 5's halves
  const unsigned bt_rows = static_cast<unsigned>(CLUSTER ? t.bn / 2 : t.bn);
  GlcDeviceBuffer at, bt;
  const float *a_k = a;
  if (layout & GLC_MATMUL_A_T) {  // A from A^T
    GLC_TRY(code, at.allocate(m * k * f, s));
    GLC_TRY(code, glc_transpose(GLC_TRANSPOSE_WIDE, 0, f, k, m, a, at.ptr, stream));
    a_k = at.as<float>();
  }
  GLC_TRY(code, wgmma_tensor_map(&map_a, GLC_F32, a_k, k, m, 128, "cuTensorMapEncodeTiled(A)"));
  if (layout & GLC_MATMUL_B_T) {
    GLC_TRY(code,
            wgmma_tensor_map(&map_b, GLC_F32, b, k, n, bt_rows, "cuTensorMapEncodeTiled(B^T)"));
  } else {  // B^T from B
    GLC_TRY(code, bt.allocate(n * k * f, s));
    GLC_TRY(code, wgmma_tensor_map(&map_b, GLC_F32, bt.ptr, k, n, bt_rows,
                                   "cuTensorMapEncodeTiled(B^T)"));
    GLC_TRY(code, glc_transpose(GLC_TRANSPOSE_WIDE, 0, f, k, n, b, bt.ptr, stream));
  }
  GLC_TRY(code, wgmma_c_store(&g, R, GLC_F32));
  GLC_TRY(code, (wgmma_dispatch<R, float, float, wgmma_tf32_layout>(t, g)));
  return code;
}

}  // namespace

extern "C" int glc_hgemm_wgmma_resolve(const glc_matmul_tunables *in, glc_matmul_tunables *out) {
  if (out == nullptr) return glc_fail(cudaErrorInvalidValue, "glc_hgemm_wgmma(tunables)");
  glc_matmul_tunables t = in ? *in : glc_matmul_tunables{};
  const bool bm = wgmma_resolve_one(&t.bm, GLC_HGEMM_WGMMA_DEFAULT_BM, 128);
  const bool bn = wgmma_resolve_one(&t.bn, GLC_HGEMM_WGMMA_DEFAULT_BN, 128, 256);
  const bool bk = wgmma_resolve_one(&t.bk, GLC_HGEMM_WGMMA_DEFAULT_BK, 64);
  const bool warps = wgmma_resolve_one(&t.warps, GLC_HGEMM_WGMMA_DEFAULT_WARPS, 8);
  const bool stages = wgmma_resolve_one(&t.stages, GLC_HGEMM_WGMMA_DEFAULT_STAGES, 3, 4, 5);
  *out = t;
  const bool fits = !(t.bn == 256 && t.stages == 5);  // 5 x 48 KiB: past an SM's 227 KiB
  const bool ok =
      bm && bn && bk && warps && stages && fits && t.tile == 0 && t.tm == 0 && t.tn == 0;
  return ok ? cudaSuccess : glc_fail(cudaErrorInvalidValue, "glc_hgemm_wgmma(tunables)");
}

extern "C" int glc_hgemm_wgmma(const glc_matmul_tunables *tunables, int dtype, int out_dtype,
                               int layout, size_t m, size_t n, size_t k, const void *a,
                               const void *b, void *c, glc_stream stream) {
  return wgmma_gemm<WgmmaRung::plain>(tunables, dtype, out_dtype, layout, m, n, k, a, b, c, stream);
}

extern "C" int glc_hgemm_wgmma_ws(const glc_matmul_tunables *tunables, int dtype, int out_dtype,
                                  int layout, size_t m, size_t n, size_t k, const void *a,
                                  const void *b, void *c, glc_stream stream) {
  return wgmma_gemm<WgmmaRung::ws>(tunables, dtype, out_dtype, layout, m, n, k, a, b, c, stream);
}

extern "C" int glc_hgemm_wgmma_cluster(const glc_matmul_tunables *tunables, int dtype,
                                       int out_dtype, int layout, size_t m, size_t n, size_t k,
                                       const void *a, const void *b, void *c, glc_stream stream) {
  return wgmma_gemm<WgmmaRung::cluster>(tunables, dtype, out_dtype, layout, m, n, k, a, b, c,
                                        stream);
}

extern "C" int glc_sgemm_wgmma_tf32(const glc_matmul_tunables *tunables, int layout, size_t m,
                                    size_t n, size_t k, const float *a, const float *b, float *c,
                                    glc_stream stream) {
  return wgmma_tf32_gemm<WgmmaRung::ws>(tunables, layout, m, n, k, a, b, c, stream);
}

extern "C" int glc_sgemm_wgmma_tf32_cluster(const glc_matmul_tunables *tunables, int layout,
                                            size_t m, size_t n, size_t k, const float *a,
                                            const float *b, float *c, glc_stream stream) {
  return wgmma_tf32_gemm<WgmmaRung::cluster>(tunables, layout, m, n, k, a, b, c, stream);
}
