/* The dense linear algebra lab's C ABI: matvec (y = A x), matmul (C = A B) and transpose (a
 * C-contiguous copy of A.T). Row-major, C-contiguous operands in device memory (matmul's A and B
 * may also be given transposed: glc_matmul_layout); every function
 * returns a CUDA error code, as cuda/core/gpulab_core.h says. The variant ids below are shared by
 * the ladders (csrc/labs/linalg/variants.c), the dispatch and the CPU variants. */
#ifndef GPULAB_CUDA_LINALG_H
#define GPULAB_CUDA_LINALG_H

#include <stddef.h>

#include "cuda/core/gpulab_core.h"

#ifdef __cplusplus
extern "C" {
#endif

enum glc_matvec_variant {
  GLC_MATVEC_THREAD_PER_ROW = 0, /* S2: one thread per row */
  GLC_MATVEC_WARP_PER_ROW = 1,   /* S2: one warp per row, shuffle reduction */
  GLC_MATVEC_BLOCK_PER_ROW = 2,  /* S2: several warps per row */
  GLC_MATVEC_VECTORIZED = 3,     /* 16-byte loads, bandwidth-tuned */
  GLC_MATVEC_CUBLAS = 4,         /* cuBLAS SGEMV/DGEMV */
  /* CPU ladder (S2) */
  GLC_MATVEC_CPU_ROW_POINTERS = 100, /* double** rows, as S2 allocates them */
  GLC_MATVEC_CPU_CONTIGUOUS = 101,
  GLC_MATVEC_CPU_O0 = 102,
  GLC_MATVEC_CPU_O1 = 103,
  GLC_MATVEC_CPU_O2 = 104,
  GLC_MATVEC_CPU_O3 = 105,
  GLC_MATVEC_CPU_UNROLL2 = 106,
  GLC_MATVEC_CPU_UNROLL4 = 107,
  GLC_MATVEC_CPU_OPENMP_SIMD = 108
};

enum glc_matmul_variant {
  GLC_MATMUL_NAIVE = 0,           /* one thread per C element, threads along M (uncoalesced B) */
  GLC_MATMUL_COALESCED = 1,       /* threads along N: B and C coalesced */
  GLC_MATMUL_SHARED_TILES = 2,    /* tile x tile blocks through shared memory */
  GLC_MATMUL_PADDED_TILES = 3,    /* the same, tiles padded against bank conflicts */
  GLC_MATMUL_REGISTER_1D = 4,     /* each thread a column of TM results */
  GLC_MATMUL_REGISTER_2D = 5,     /* each thread a TM x TN block of results */
  GLC_MATMUL_VECTORIZED = 6,      /* 2D blocking with 16-byte loads, A transposed in shared */
  GLC_MATMUL_WARP_TILING = 7,     /* block tile -> warp tile -> thread tile */
  GLC_MATMUL_DOUBLE_BUFFERED = 8, /* warp tiling with cp.async double-buffered shared tiles */
  GLC_MATMUL_CUBLAS = 9,          /* cuBLAS SGEMM/DGEMM, TF32 off */
  GLC_MATMUL_TF32_WMMA = 10,      /* tensor cores, TF32 inputs, FP32 accumulate */
  GLC_MATMUL_CUBLAS_TF32 = 11,    /* cuBLAS SGEMM with TF32 tensor-op math: variant 10's peer */
  GLC_MATMUL_MULTISTAGE = 12,     /* warp tiles, 2-4 cp.async stages, two 128-row blocks or one
                                   * 256-row block an SM (after 8) */
  /* float16 and bfloat16 on the tensor cores, FP32 accumulation (glc_hgemm, cuda/linalg/hgemm.h) */
  GLC_MATMUL_WMMA = 13,            /* WMMA 16x16x16 from padded shared tiles (S4's API) */
  GLC_MATMUL_WMMA_MULTISTAGE = 14, /* the same fed by a 2-4 stage cp.async pipeline */
  GLC_MATMUL_MMA_SYNC = 15,        /* mma.sync m16n8k16 from ldmatrix on swizzled, unpadded tiles */
  GLC_MATMUL_CUBLASLT = 16,        /* cuBLASLt, its heuristic's best algorithm: the reference */
  GLC_MATMUL_WGMMA = 17,           /* Hopper: wgmma on TMA-filled swizzled stages, mbarriers */
  GLC_MATMUL_WGMMA_WS = 18,        /* the same warp-specialized (TMA producer, two consumer
                                    * warpgroups), persistent over the tiles */
  /* float32 on the tensor cores again (glc_sgemm_wgmma_tf32, cuda/linalg/hgemm_wgmma.h) */
  GLC_MATMUL_TF32 = 19, /* TF32 through variant 18's kernel, B transposed to K-major first */
  GLC_MATMUL_WGMMA_CLUSTER = 20, /* 18 in clusters of two blocks sharing B by TMA multicast, C
                                  * stored through shared memory by the TMA */
  GLC_MATMUL_TF32_CLUSTER = 21,  /* TF32 through variant 20's kernel, B transposed as 19's */
  /* CPU ladder */
  GLC_MATMUL_CPU_IJK = 100,
  GLC_MATMUL_CPU_IKJ = 101,
  GLC_MATMUL_CPU_BLOCKED = 102,
  GLC_MATMUL_CPU_BLOCKED_OPENMP = 103
};

/* Transpose ids start at 1: its ceiling, a copy of the same bytes, is the device-to-device copy
 * that gl.ceilings() measures, a reference line rather than a variant. */
enum glc_transpose_variant {
  GLC_TRANSPOSE_NAIVE = 1,  /* coalesced reads, strided writes */
  GLC_TRANSPOSE_SHARED = 2, /* through a shared tile (bank conflicts on the way out) */
  GLC_TRANSPOSE_PADDED = 3, /* the tile padded by one column: conflict-free */
  GLC_TRANSPOSE_WIDE = 4,   /* several elements per thread, wide accesses (Hopper) */
  GLC_TRANSPOSE_CPU_BLOCKED = 100
};

/* Variant 12's (multistage's) defaults, which glc_matmul_blocked_resolve fills in and the ladder's
 * table (csrc/labs/linalg/variants.c) shows: the fastest of the 18 configurations at both 4096^3
 * and 8192^3 on the H100 (benchmarks/results/linalg_sgemm_grid.json). */
#define GLC_MULTISTAGE_DEFAULT_WARPS 4
#define GLC_MULTISTAGE_DEFAULT_BK 8
#define GLC_MULTISTAGE_DEFAULT_STAGES 2
#define GLC_MULTISTAGE_DEFAULT_BM 128

/* The matmul tunables; 0 means the variant's default. Each variant reads the ones it has. */
typedef struct {
  int tile;       /* variants 2-3: the square shared tile (8, 16 or 32) */
  int bm, bn, bk; /* variants 4-8 and 10: the block tile; 12: bm (128 or 256) and bk */
  int tm, tn;     /* variants 4-8: the thread tile */
  int warps;      /* variant 12: warps per bm x 128 block tile (4 or 8; 8 at bm = 256) */
  int stages;     /* variant 12: shared stages of the cp.async pipeline (2, 3 or 4) */
} glc_matmul_tunables;

/* How matmul's operands lie in memory (bits of a layout argument; 0: both row-major and
 * contiguous). GLC_MATMUL_A_T: A (m x k) is given as the storage of A^T, a row-major k x m array
 * (A[i][p] at a[p m + i]: a transposed view, A.T of a C-contiguous array). GLC_MATMUL_B_T: B
 * (k x n) as the storage of B^T, a row-major n x k array (B[p][j] at b[j k + p]). */
enum glc_matmul_layout { GLC_MATMUL_A_T = 1, GLC_MATMUL_B_T = 2 };

/* y[m] = A[m x n] x[n]; dtype GLC_F32 or GLC_F64. block: threads per block (0: default). */
GLC_API int glc_matvec(int variant, int block, int dtype, size_t m, size_t n, const void *a,
                       const void *x, void *y, glc_stream stream);
/* C[m x n] = A[m x k] B[k x n]; dtype GLC_F32 (GLC_F64 for variant 9). Any m, n, k >= 0; k == 0
 * gives zeros. A and B lie as layout says (glc_matmul_layout bits); C is row-major. The rungs
 * that can read a transposed operand in place do (cuBLAS's op flags, variants 9 and 11; B^T on
 * tf32 and tf32_cluster, 19 and 21, where glc_sgemm_tma_describes holds); every other one reads
 * row-major operands, copied there first on the stream (glc_matmul_row_major,
 * matmul_layout.cuh). */
GLC_API int glc_matmul(int variant, const glc_matmul_tunables *tunables, int dtype, int layout,
                       size_t m, size_t n, size_t k, const void *a, const void *b, void *c,
                       glc_stream stream);
/* out[cols x rows] = A[rows x cols].T for elements of element_bytes 2, 4 or 8 (the transpose
 * ladder's op takes 4- and 8-byte dtypes; matmul's row-major copies of float16 and bfloat16
 * operands take 2); tile 0: default. */
GLC_API int glc_transpose(int variant, int tile, int element_bytes, size_t rows, size_t cols,
                          const void *a, void *out, glc_stream stream);

#ifdef __cplusplus
}
#endif

#endif
