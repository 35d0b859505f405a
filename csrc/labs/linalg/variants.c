/* The linalg lab's ladders: matvec, S2's ladder on the CPU and the GPU up to cuBLAS's GEMV; matmul,
 * from the naive kernel to warp tiling and cuBLAS, two TF32 tensor-core rungs, and the float16 and
 * bfloat16 tensor-core ladder (WMMA, then cuBLASLt); transpose, from
 * strided writes to wide tiles, measured against the device-to-device copy (gl.ceilings()). Ids
 * come from cuda/linalg/linalg.h's enums; the CPU's start at 100. */
#include "variants.h"

#include "cuda/linalg/hgemm.h"
#include "cuda/linalg/hgemm_mma.h"
#include "cuda/linalg/hgemm_wgmma.h"
#include "cuda/linalg/linalg.h"

#define BLOCK_TUNABLE                \
  {                                  \
    { "block", GL_BLOCKS_POW2, 256 } \
  }

/* ---- matvec ---- */

#define S2_CPU(ID, NAME, SUMMARY)                                                               \
  {                                                                                             \
    .id = ID, .name = NAME, .backend = GL_BACKEND_CPU, .summary = SUMMARY, .seed = "S2 task 1", \
    .dtypes = GL_FLOATS, .flags = GL_DETERMINISTIC                                              \
  }

static const gl_variant matvec_variants[] = {
    {.id = GLC_MATVEC_THREAD_PER_ROW,
     .name = "thread_per_row",
     .backend = GL_BACKEND_CUDA,
     .summary = "S2's first kernel: one thread per row walks it alone; a warp's loads are N "
                "elements apart (uncoalesced).",
     .seed = "S2 task 3",
     .kernels = "matvec_thread_per_row",
     .dtypes = GL_FLOATS,
     .flags = GL_DETERMINISTIC,
     .tunables = BLOCK_TUNABLE},
    {.id = GLC_MATVEC_WARP_PER_ROW,
     .name = "warp_per_row",
     .backend = GL_BACKEND_CUDA,
     .summary = "One warp per row: coalesced loads along the row, a shuffle tree for the sum.",
     .seed = "S2 task 3",
     .kernels = "matvec_warp_per_row",
     .dtypes = GL_FLOATS,
     .flags = GL_DETERMINISTIC,
     .tunables = BLOCK_TUNABLE},
    {.id = GLC_MATVEC_BLOCK_PER_ROW,
     .name = "block_per_row",
     .backend = GL_BACKEND_CUDA,
     .summary = "Several warps per row (a block per row): warp sums, then one warp adds them.",
     .seed = "S2 task 3",
     .kernels = "matvec_block_per_row",
     .dtypes = GL_FLOATS,
     .flags = GL_DETERMINISTIC,
     .tunables = BLOCK_TUNABLE},
    {.id = GLC_MATVEC_VECTORIZED,
     .name = "vectorized",
     .backend = GL_BACKEND_CUDA,
     .summary = "A block per row with 16-byte streaming loads of A, four in flight per thread; "
                "scalar where rows are not 16-byte aligned.",
     .seed = "S2 task 3; bandwidth tuning",
     .kernels = "matvec_vectorized",
     .dtypes = GL_FLOATS,
     .flags = GL_BEST | GL_DETERMINISTIC,
     .tunables = BLOCK_TUNABLE},
    {.id = GLC_MATVEC_CUBLAS,
     .name = "cublas",
     .backend = GL_BACKEND_CUDA,
     .summary = "cuBLAS SGEMV/DGEMV (row-major A as the transposed column-major matrix), the "
                "reference; libcublas is loaded on first use.",
     .seed = "cuBLAS",
     .kernels = "glc_cublas_gemv",
     .library = "cuBLAS SGEMV/DGEMV",
     .dtypes = GL_FLOATS},
    S2_CPU(GLC_MATVEC_CPU_ROW_POINTERS, "row_pointers",
           "S2's baseline: the rows through a T** table of row pointers, at -O3."),
    S2_CPU(GLC_MATVEC_CPU_CONTIGUOUS, "contiguous",
           "The flat array, row i at A + i N, at -O3 (no -ffast-math: the sum keeps its order)."),
    S2_CPU(GLC_MATVEC_CPU_O0, "O0", "The contiguous loop compiled at -O0 (optimize attribute)."),
    S2_CPU(GLC_MATVEC_CPU_O1, "O1", "The contiguous loop compiled at -O1."),
    S2_CPU(GLC_MATVEC_CPU_O2, "O2", "The contiguous loop compiled at -O2."),
    S2_CPU(GLC_MATVEC_CPU_O3, "O3", "The contiguous loop compiled at -O3."),
    S2_CPU(GLC_MATVEC_CPU_UNROLL2, "unroll2",
           "Unrolled by 2 at -O0 as S2 measured it, the remainder handled."),
    S2_CPU(GLC_MATVEC_CPU_UNROLL4, "unroll4",
           "Unrolled by 4 at -O0, the remainder handled (S2's left j uninitialized)."),
    {.id = GLC_MATVEC_CPU_OPENMP_SIMD,
     .name = "openmp_simd",
     .backend = GL_BACKEND_CPU,
     .summary = "Rows over OpenMP threads, each row's sum over SIMD lanes (reassociated).",
     .seed = "S2 task 1",
     .dtypes = GL_FLOATS,
     .flags = GL_BEST | GL_DETERMINISTIC},
};

/* ---- matmul ---- */

#define TILE_TUNABLE               \
  {                                \
    { "tile", {8, 16, 32, 0}, 32 } \
  }
#define BLOCK_TILE_TUNABLES                                                       \
  {                                                                               \
    {"bm", {64, 128, 0}, 128}, {"bn", {64, 128, 0}, 128}, { "bk", {8, 16, 0}, 8 } \
  }

static const gl_variant matmul_variants[] = {
    {.id = GLC_MATMUL_NAIVE,
     .name = "naive",
     .backend = GL_BACKEND_CUDA,
     .summary = "One thread per element of C, threadIdx.x along M: a warp reads A K apart and "
                "writes C N apart.",
     .seed = "S3 2.3",
     .kernels = "sgemm_naive (transpose_wide)",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_DETERMINISTIC,
     .tunables = TILE_TUNABLE},
    {.id = GLC_MATMUL_COALESCED,
     .name = "coalesced",
     .backend = GL_BACKEND_CUDA,
     .summary = "The same loop with threadIdx.x along N: B and C coalesced, A broadcast.",
     .seed = "S3 2.3",
     .kernels = "sgemm_coalesced (transpose_wide)",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_DETERMINISTIC,
     .tunables = TILE_TUNABLE},
    {.id = GLC_MATMUL_SHARED_TILES,
     .name = "shared_tiles",
     .backend = GL_BACKEND_CUDA,
     .summary = "tile x tile tiles of A and B in shared memory, each loaded element used tile "
                "times; A's tile stored k-major with bank conflicts.",
     .seed = "S3 4.2",
     .kernels = "sgemm_shared_tiles (transpose_wide)",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_DETERMINISTIC,
     .tunables = TILE_TUNABLE},
    {.id = GLC_MATMUL_PADDED_TILES,
     .name = "padded_tiles",
     .backend = GL_BACKEND_CUDA,
     .summary = "The shared tiles padded by one word a row: the k-major stores of A "
                "conflict-free.",
     .seed = "S3 4.2",
     .kernels = "sgemm_padded_tiles (transpose_wide)",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_DETERMINISTIC,
     .tunables = TILE_TUNABLE},
    {.id = GLC_MATMUL_REGISTER_1D,
     .name = "register_1d",
     .backend = GL_BACKEND_CUDA,
     .summary = "1D register blocking: each thread a column of tm results, reusing each B value "
                "tm times from a register.",
     .seed = "SGEMM_CUDA kernel 4",
     .kernels = "sgemm_register_1d (transpose_wide)",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_DETERMINISTIC,
     .tunables = {{"tm", {4, 8, 0}, 8}}},
    {.id = GLC_MATMUL_REGISTER_2D,
     .name = "register_2d",
     .backend = GL_BACKEND_CUDA,
     .summary = "2D register blocking: each thread a tm x tn block of results from a bm x bn "
                "block tile.",
     .seed = "SGEMM_CUDA kernel 5",
     .kernels = "sgemm_register_2d (transpose_wide)",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_DETERMINISTIC,
     .tunables = BLOCK_TILE_TUNABLES},
    {.id = GLC_MATMUL_VECTORIZED,
     .name = "vectorized",
     .backend = GL_BACKEND_CUDA,
     .summary = "2D blocking with 16-byte loads, A transposed into shared memory.",
     .seed = "SGEMM_CUDA kernel 6",
     .kernels = "sgemm_vectorized (transpose_wide)",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_DETERMINISTIC,
     .tunables = BLOCK_TILE_TUNABLES},
    {.id = GLC_MATMUL_WARP_TILING,
     .name = "warp_tiling",
     .backend = GL_BACKEND_CUDA,
     .summary = "Block tile, then warp tile, then thread tile: each warp's operands from a "
                "compact region of shared memory.",
     .seed = "SGEMM_CUDA kernel 10",
     .kernels = "sgemm_warp_tiling (transpose_wide)",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_DETERMINISTIC,
     .tunables = BLOCK_TILE_TUNABLES},
    {.id = GLC_MATMUL_DOUBLE_BUFFERED,
     .name = "double_buffered",
     .backend = GL_BACKEND_CUDA,
     .summary = "Warp tiling with two shared buffers filled by cp.async: the next tile loads "
                "while this one is used.",
     .seed = "SGEMM_CUDA kernel 11; S3 4.2",
     .kernels = "sgemm_double_buffered (transpose_wide)",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_DETERMINISTIC,
     .tunables = BLOCK_TILE_TUNABLES},
    {.id = GLC_MATMUL_MULTISTAGE,
     .name = "multistage",
     .backend = GL_BACKEND_CUDA,
     .summary = "128 x 128 tiles of 8 warps (8 x 8 a thread) or 4 warps (16 x 8), or bm = 256: "
                "256 x 128 tiles of 8 warps (16 x 8, one block an SM, cuBLAS's shape), fed by a "
                "2-4 stage cp.async pipeline with one barrier a slice, operands double-buffered "
                "in registers; whole tiles copy whole slices without guards. Defaults: the "
                "fastest of the 18 on the H100 at both 4096^3 and 8192^3, 4 warps, bk = 8, 2 "
                "stages (0.97x cuBLAS); bm = 256 is slower everywhere.",
     .seed = "SGEMM_CUDA kernels 10-12; CUTLASS SIMT sgemm (sm_80)",
     .kernels = "sgemm_multistage (transpose_wide)",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_BEST | GL_DETERMINISTIC,
     /* bm = 256 takes warps = 8 only (glc_matmul_blocked_resolve refuses 4) */
     .tunables = {{"warps", {4, 8, 0}, GLC_MULTISTAGE_DEFAULT_WARPS},
                  {"bk", {8, 16, 0}, GLC_MULTISTAGE_DEFAULT_BK},
                  {"stages", {2, 3, 4, 0}, GLC_MULTISTAGE_DEFAULT_STAGES},
                  {"bm", {128, 256, 0}, GLC_MULTISTAGE_DEFAULT_BM}}},
    {.id = GLC_MATMUL_CUBLAS,
     .name = "cublas",
     .backend = GL_BACKEND_CUDA,
     .summary = "cuBLAS SGEMM/DGEMM with the default math mode (TF32 off), row-major as "
                "C^T = B^T A^T; the reference. libcublas is loaded on first use.",
     .seed = "cuBLAS",
     .kernels = "glc_cublas_gemm",
     .library = "cuBLAS SGEMM/DGEMM",
     .dtypes = GL_FLOATS},
    {.id = GLC_MATMUL_TF32_WMMA,
     .name = "tf32_wmma",
     .backend = GL_BACKEND_CUDA,
     .summary = "Tensor cores through WMMA: inputs rounded to TF32 (10-bit mantissa), FP32 "
                "accumulation. Not FP32: never the default.",
     .seed = "CUDA C++ Programming Guide, WMMA",
     .kernels = "sgemm_tf32_wmma (transpose_wide)",
     .dtypes = GL_DT(GLC_F32)},
    {.id = GLC_MATMUL_TF32,
     .name = "tf32",
     .backend = GL_BACKEND_CUDA,
     .summary = "float32 through wgmma_ws's kernel (wgmma.m64nNk8.tf32): the tensor cores read "
                "each float's top 19 bits (TF32, truncated), FP32 accumulation. wgmma takes "
                "32-bit B K-major only, so B is first transposed (transpose_wide, one read and "
                "one write of B) into a pool workspace; B given as B.T is K-major and read in "
                "place. Needs an sm_90a device; k % 4 != 0 or an A not 16-byte aligned runs "
                "tf32_wmma's kernel. Not FP32: never the default.",
     .seed = "PTX ISA: wgmma.mma_async .tf32 (no transpose of 32-bit operands)",
     .kernels = "(hgemm_wgmma_ws_kernel) (transpose_wide) (sgemm_tf32_wmma)",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_DETERMINISTIC,
     .tunables = {{"bn", {128, 256, 0}, GLC_HGEMM_WGMMA_DEFAULT_BN},
                  {"stages", {3, 4, 5, 0}, GLC_HGEMM_WGMMA_DEFAULT_STAGES}}},
    {.id = GLC_MATMUL_TF32_CLUSTER,
     .name = "tf32_cluster",
     .backend = GL_BACKEND_CUDA,
     .summary = "tf32 on wgmma_cluster's kernel: clusters of two blocks along M sharing B^T's "
                "tile by TMA multicast (each block loads half of its rows), persistent, C stored "
                "by the TMA. B is transposed first as tf32's is, or read in place given as B.T; "
                "k % 4 != 0 or an A not 16-byte aligned runs tf32_wmma's kernel. Not FP32: never "
                "the default.",
     .seed = "PTX ISA: wgmma.mma_async .tf32, clusters, multicast::cluster",
     .kernels = "(hgemm_wgmma_cluster_kernel) (transpose_wide) (sgemm_tf32_wmma)",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_DETERMINISTIC,
     .tunables = {{"bn", {128, 256, 0}, GLC_HGEMM_WGMMA_DEFAULT_BN},
                  {"stages", {3, 4, 5, 0}, GLC_HGEMM_WGMMA_DEFAULT_STAGES}}},
    {.id = GLC_MATMUL_CUBLAS_TF32,
     .name = "cublas_tf32",
     .backend = GL_BACKEND_CUDA,
     .summary = "cuBLAS SGEMM with CUBLAS_TF32_TENSOR_OP_MATH: variant 10's peer, TF32 "
                "rounding.",
     .seed = "cuBLAS",
     .kernels = "glc_cublas_gemm",
     .library = "cuBLAS SGEMM (TF32 tensor-op math)",
     .dtypes = GL_DT(GLC_F32)},
    /* The tensor-core ladder: float16 and bfloat16 A and B, FP32 accumulation, C in their dtype
     * or out_dtype=float32 (glc_hgemm, cuda/linalg/hgemm.h). */
    {.id = GLC_MATMUL_WMMA,
     .name = "wmma",
     .backend = GL_BACKEND_CUDA,
     .summary = "Tensor cores through WMMA 16x16x16 fragments (FP32 accumulators) from padded "
                "shared tiles: 8 warps a bm x bn tile, each slice copied through registers "
                "between two barriers, so copies and products never overlap.",
     .seed = "S4",
     .kernels = "hgemm_wmma (transpose_wide)",
     .dtypes = GL_HALVES,
     .flags = GL_DETERMINISTIC,
     .tunables = {{"bm", {64, 128, 0}, GLC_WMMA_DEFAULT_BM},
                  {"bn", {64, 128, 0}, GLC_WMMA_DEFAULT_BN},
                  {"bk", {16, 32, 0}, GLC_WMMA_DEFAULT_BK}}},
    {.id = GLC_MATMUL_WMMA_MULTISTAGE,
     .name = "wmma_multistage",
     .backend = GL_BACKEND_CUDA,
     .summary = "wmma's tiles fed by a ring of 2-4 shared stages filled by 16-byte cp.async "
                "(zero-filled at the edges; element copies where rows are not 16-byte aligned): "
                "the next slices load while this one multiplies, one barrier a slice.",
     .seed = "S4; CUDA C++ Programming Guide, cp.async; CUTLASS multistage (sm_80)",
     .kernels = "hgemm_wmma_multistage (transpose_wide)",
     .dtypes = GL_HALVES,
     .flags = GL_DETERMINISTIC,
     .tunables = {{"bm", {64, 128, 0}, GLC_WMMA_DEFAULT_BM},
                  {"bn", {64, 128, 0}, GLC_WMMA_DEFAULT_BN},
                  {"bk", {16, 32, 0}, GLC_WMMA_DEFAULT_BK},
                  {"stages", {2, 3, 4, 0}, GLC_WMMA_DEFAULT_STAGES}}},
    {.id = GLC_MATMUL_MMA_SYNC,
     .name = "mma_sync",
     .backend = GL_BACKEND_CUDA,
     .summary = "Tensor cores through mma.sync.m16n8k16 on register fragments loaded by ldmatrix "
                "(.trans for B) from unpadded shared tiles whose 16-byte chunks are XOR-swizzled "
                "(conflict-free copies and loads), a 2-4 stage cp.async ring, 64x64 warp tiles.",
     .seed = "PTX ISA: mma.sync, ldmatrix; CUTLASS sm_80 swizzled layouts",
     .kernels = "hgemm_mma_kernel (transpose_wide)",
     .dtypes = GL_HALVES,
     .flags = GL_DETERMINISTIC,
     .tunables = {{"bm", {64, 128, 0}, GLC_HGEMM_MMA_DEFAULT_BM},
                  {"warps", {4, 8, 0}, GLC_HGEMM_MMA_DEFAULT_WARPS},
                  {"stages", {2, 3, 4, 0}, GLC_HGEMM_MMA_DEFAULT_STAGES}}},
    {.id = GLC_MATMUL_CUBLASLT,
     .name = "cublaslt",
     .backend = GL_BACKEND_CUDA,
     .summary = "cuBLASLt matmul with its heuristic's first algorithm (FP32 compute), row-major "
                "as C^T = B^T A^T: the tensor-core ladder's reference (cublas_tf32 is TF32's). "
                "libcublasLt is loaded on first use.",
     .seed = "cuBLASLt",
     .kernels = "glc_hgemm_cublaslt",
     .library = "cuBLASLt matmul (CUBLAS_COMPUTE_32F)",
     .dtypes = GL_HALVES},
    {.id = GLC_MATMUL_WGMMA,
     .name = "wgmma",
     .backend = GL_BACKEND_CUDA,
     .summary = "Hopper's wgmma.mma_async: two warpgroups multiply 128-byte-swizzled shared stages "
                "that the TMA fills (B read as it lies, N-major), an mbarrier a stage, a block "
                "barrier a k slice. Needs an sm_90a device; rows the TMA cannot describe (k or n "
                "not a multiple of 8) run mma_sync's kernel.",
     .seed = "PTX ISA: wgmma, cp.async.bulk.tensor, mbarrier; CUTLASS sm90 GMMA descriptors",
     .kernels = "(hgemm_wgmma_kernel) (hgemm_mma_kernel) (transpose_wide)",
     .dtypes = GL_HALVES,
     .flags = GL_DETERMINISTIC,
     .tunables = {{"bn", {128, 256, 0}, GLC_HGEMM_WGMMA_DEFAULT_BN},
                  {"stages", {3, 4, 5, 0}, GLC_HGEMM_WGMMA_DEFAULT_STAGES}}},
    {.id = GLC_MATMUL_WGMMA_WS,
     .name = "wgmma_ws",
     .backend = GL_BACKEND_CUDA,
     .summary = "wgmma warp-specialized: a producer warpgroup (40 registers, setmaxnreg) issues "
                "the TMA, two consumer warpgroups (232) issue wgmma, full and empty mbarriers a "
                "stage; persistent, one block an SM walking the tiles in groups of 8 row tiles.",
     .seed = "PTX ISA: setmaxnreg; CUTLASS warp-specialized persistent kernels",
     .kernels = "(hgemm_wgmma_ws_kernel) (hgemm_mma_kernel) (transpose_wide)",
     .dtypes = GL_HALVES,
     .flags = GL_DETERMINISTIC,
     .tunables = {{"bn", {128, 256, 0}, GLC_HGEMM_WGMMA_DEFAULT_BN},
                  {"stages", {3, 4, 5, 0}, GLC_HGEMM_WGMMA_DEFAULT_STAGES}}},
    {.id = GLC_MATMUL_WGMMA_CLUSTER,
     .name = "wgmma_cluster",
     .backend = GL_BACKEND_CUDA,
     .summary = "wgmma_ws in clusters of two blocks along M: each loads its own A and half of the "
                "shared B tile, multicast by the TMA to both, and a stage is refilled once both "
                "blocks' consumers release it; C goes through swizzled shared buffers to TMA "
                "stores that leave while the next tile's slices load.",
     .seed = "PTX ISA: clusters, mapa, multicast::cluster, cp.async.bulk.tensor stores; CUTLASS "
             "sm90 cluster multicast and TMA epilogues",
     .kernels = "(hgemm_wgmma_cluster_kernel) (hgemm_mma_kernel) (transpose_wide)",
     .dtypes = GL_HALVES,
     .flags = GL_BEST_FOR_DTYPES | GL_DETERMINISTIC,
     .tunables = {{"bn", {128, 256, 0}, GLC_HGEMM_WGMMA_DEFAULT_BN},
                  {"stages", {3, 4, 5, 0}, GLC_HGEMM_WGMMA_DEFAULT_STAGES}}},
    {.id = GLC_MATMUL_CPU_IJK,
     .name = "ijk",
     .backend = GL_BACKEND_CPU,
     .summary = "The textbook i-j-k loop: B walked down its columns.",
     .seed = "S0 matrix multiplication; S2 task 2",
     .dtypes = GL_FLOATS,
     .flags = GL_DETERMINISTIC},
    {.id = GLC_MATMUL_CPU_IKJ,
     .name = "ikj",
     .backend = GL_BACKEND_CPU,
     .summary = "Loops reordered i-k-j: unit stride through B and C.",
     .seed = "S0 matrix multiplication",
     .dtypes = GL_FLOATS,
     .flags = GL_DETERMINISTIC},
    {.id = GLC_MATMUL_CPU_BLOCKED,
     .name = "blocked",
     .backend = GL_BACKEND_CPU,
     .summary = "64 x 64 blocks, i-k-j inside; C cleared once (S0's blocked version "
                "over-accumulated).",
     .seed = "S0 matrix multiplication; S2 task 2",
     .dtypes = GL_FLOATS,
     .flags = GL_DETERMINISTIC},
    {.id = GLC_MATMUL_CPU_BLOCKED_OPENMP,
     .name = "blocked_openmp",
     .backend = GL_BACKEND_CPU,
     .summary = "The blocked loop with blocks of rows over OpenMP threads and SIMD inner loops; "
                "float16 and bfloat16 widened to float32, summed in float32, C rounded once.",
     .seed = "S2 task 2",
     .dtypes = GL_FLOATS | GL_HALVES,
     .flags = GL_BEST | GL_DETERMINISTIC},
};

/* ---- transpose ---- */

#define TRANSPOSE_TILE_TUNABLE  \
  {                             \
    { "tile", {16, 32, 0}, 32 } \
  }

static const gl_variant transpose_variants[] = {
    {.id = GLC_TRANSPOSE_NAIVE,
     .name = "naive",
     .backend = GL_BACKEND_CUDA,
     .summary = "Coalesced reads, strided writes (32 sectors a warp store).",
     .seed = "S4 transpose",
     .kernels = "transpose_naive",
     .dtypes = TRANSPOSE_DTYPES,
     .flags = GL_DETERMINISTIC},
    {.id = GLC_TRANSPOSE_SHARED,
     .name = "shared",
     .backend = GL_BACKEND_CUDA,
     .summary = "Through a shared tile: both global accesses coalesced; reading the tile's "
                "columns back conflicts in the banks.",
     .seed = "S4 transpose",
     .kernels = "transpose_shared",
     .dtypes = TRANSPOSE_DTYPES,
     .flags = GL_DETERMINISTIC,
     .tunables = TRANSPOSE_TILE_TUNABLE},
    {.id = GLC_TRANSPOSE_PADDED,
     .name = "padded",
     .backend = GL_BACKEND_CUDA,
     .summary = "The shared tile padded by one column: conflict-free.",
     .seed = "S4 transpose with padding",
     .kernels = "transpose_padded",
     .dtypes = TRANSPOSE_DTYPES,
     .flags = GL_DETERMINISTIC,
     .tunables = TRANSPOSE_TILE_TUNABLE},
    {.id = GLC_TRANSPOSE_WIDE,
     .name = "wide",
     .backend = GL_BACKEND_CUDA,
     .summary = "64 x 64 tiles (4-byte elements) for 256 threads, 16-byte loads and stores, "
                "16 elements a thread; element by element at ragged edges.",
     .seed = "S4 transpose; Hopper tuning",
     .kernels = "transpose_wide",
     .dtypes = TRANSPOSE_DTYPES,
     .flags = GL_BEST | GL_DETERMINISTIC},
    {.id = GLC_TRANSPOSE_CPU_BLOCKED,
     .name = "blocked",
     .backend = GL_BACKEND_CPU,
     .summary = "32 x 32 blocks, so that the rows read and the rows written stay in L1.",
     .seed = "S4 transpose",
     .dtypes = TRANSPOSE_DTYPES,
     .flags = GL_BEST | GL_DETERMINISTIC},
};

const gl_ladder gl_ladder_matvec = {
    .op = "matvec", .variants = matvec_variants, .count = GL_COUNT_OF(matvec_variants)};
const gl_ladder gl_ladder_matmul = {
    .op = "matmul", .variants = matmul_variants, .count = GL_COUNT_OF(matmul_variants)};
const gl_ladder gl_ladder_transpose = {
    .op = "transpose", .variants = transpose_variants, .count = GL_COUNT_OF(transpose_variants)};
