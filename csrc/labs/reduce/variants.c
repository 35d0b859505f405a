/* The reduce lab's ladders: reduce, and dot and norm2 on its best path. */
#include "variants.h"

/* What S1's kernels can do: they finish with atomics, and CUDA's atomic min and max take
 * integers only. In the lab's mode order: sum, min, max. */
#define ATOMIC_SUPPORT \
  { REDUCE_DTYPES, GL_DT(GLC_I32), GL_DT(GLC_I32) }

static const char *const reduce_modes[] = {"sum", "min", "max", NULL};

static const gl_variant reduce_variants[] = {
    {.id = 0,
     .name = "interleaved_divergent",
     .backend = GL_BACKEND_CUDA,
     .summary =
         "Harris 1: interleaved addressing; the test tid % (2*stride) leaves most lanes of each "
         "warp idle (divergence) and the modulo is slow. One pass per 'block' elements, repeated.",
     .seed = "S0 ch. 5 (Harris kernel 1)",
     .kernels = "interleaved_divergent",
     .dtypes = REDUCE_DTYPES,
     .flags = GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}}},
    {.id = 1,
     .name = "interleaved_strided",
     .backend = GL_BACKEND_CUDA,
     .summary = "Harris 2: strided index 2*stride*tid, so active threads are contiguous (no "
                "divergence), but they hit the same shared-memory banks.",
     .seed = "S0 ch. 5 (Harris kernel 2)",
     .kernels = "interleaved_strided",
     .dtypes = REDUCE_DTYPES,
     .flags = GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}}},
    {.id = 2,
     .name = "sequential",
     .backend = GL_BACKEND_CUDA,
     .summary = "Harris 3: sequential addressing, stride halving from block/2: conflict-free, but "
                "half the threads idle from the first step.",
     .seed = "S0 ch. 5 (Harris kernel 3)",
     .kernels = "sequential",
     .dtypes = REDUCE_DTYPES,
     .flags = GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}}},
    {.id = 3,
     .name = "first_add_on_load",
     .backend = GL_BACKEND_CUDA,
     .summary = "Harris 4: each thread adds two elements while loading, so a block covers 2*block "
                "elements and half the blocks are launched.",
     .seed = "S0 ch. 5 (Harris kernel 4)",
     .kernels = "first_add_on_load",
     .dtypes = REDUCE_DTYPES,
     .flags = GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}}},
    {.id = 4,
     .name = "unroll_last_warp",
     .backend = GL_BACKEND_CUDA,
     .summary = "Harris 5: the last warp's six steps unrolled without __syncthreads. S0's version "
                "relies on a volatile array and on warps running in lockstep, which independent "
                "thread scheduling (Volta and later, the H100 too) does not promise: a lane may "
                "read its partner's slot before the partner wrote it. Here each step reads, "
                "__syncwarp(), writes, __syncwarp().",
     .seed = "S0 ch. 5 (Harris kernel 5)",
     .kernels = "unroll_last_warp",
     .dtypes = REDUCE_DTYPES,
     .flags = GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}}},
    {.id = 5,
     .name = "complete_unroll",
     .backend = GL_BACKEND_CUDA,
     .summary = "Harris 6: the block size is a template parameter, so the whole tree unrolls into "
                "straight-line code with no loop or block-size tests.",
     .seed = "S0 ch. 5 (Harris kernel 6)",
     .kernels = "complete_unroll",
     .dtypes = REDUCE_DTYPES,
     .flags = GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}}},
    {.id = 6,
     .name = "cascaded",
     .backend = GL_BACKEND_CUDA,
     .summary = "Harris 7: algorithm cascading: one resident wave of blocks, each thread reducing "
                "many elements in registers before the unrolled tree; a one-block second pass.",
     .seed = "S0 ch. 5 (Harris kernel 7)",
     .kernels = "cascaded",
     .dtypes = REDUCE_DTYPES,
     .flags = GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}}},
    {.id = 7,
     .name = "shared_shuffle",
     .backend = GL_BACKEND_CUDA,
     .summary = "S1 SharedShuffle: shared-memory tree down to one warp, __shfl_down_sync for the "
                "last five steps, one global atomic per block. Float sums are not deterministic "
                "(atomic order).",
     .seed = "S1 parallel reduction (SharedShuffle)",
     .kernels = "set_identity shared_shuffle copy_result",
     .dtypes = REDUCE_DTYPES,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}},
     .mode_dtypes = ATOMIC_SUPPORT},
    {.id = 8,
     .name = "atomic_global",
     .backend = GL_BACKEND_CUDA,
     .summary = "S1 AtomicGlobal: one global atomic per element, all on one address: the updates "
                "serialize.",
     .seed = "S1 parallel reduction (AtomicGlobal)",
     .kernels = "set_identity atomic_global copy_result",
     .dtypes = REDUCE_DTYPES,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}},
     .mode_dtypes = ATOMIC_SUPPORT},
    {.id = 9,
     .name = "atomic_shared",
     .backend = GL_BACKEND_CUDA,
     .summary = "S1 AtomicShared: atomics on one shared-memory variable per block, then one global "
                "atomic per block.",
     .seed = "S1 parallel reduction (AtomicShared)",
     .kernels = "set_identity atomic_shared copy_result",
     .dtypes = REDUCE_DTYPES,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}},
     .mode_dtypes = ATOMIC_SUPPORT},
    {.id = 10,
     .name = "shared_tree_atomic",
     .backend = GL_BACKEND_CUDA,
     .summary = "S1 ReduceShared: the whole shared-memory tree (log2 block steps), then one global "
                "atomic per block.",
     .seed = "S1 parallel reduction (ReduceShared)",
     .kernels = "set_identity reduce_shared copy_result",
     .dtypes = REDUCE_DTYPES,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}},
     .mode_dtypes = ATOMIC_SUPPORT},
    {.id = 11,
     .name = "cooperative_grid_sync",
     .backend = GL_BACKEND_CUDA,
     .summary = "One kernel: grid-stride partials, a cooperative-groups grid.sync(), block 0 "
                "reduces the partials. Launched cooperatively with one resident wave, since a grid "
                "barrier needs every block resident.",
     .seed = "S4 cooperative groups",
     .kernels = "grid_synced",
     .dtypes = REDUCE_DTYPES,
     .flags = GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}}},
    {.id = 12,
     .name = "vec16_single_pass",
     .backend = GL_BACKEND_CUDA,
     .summary = "16-byte loads, 4 in flight per thread, two resident waves striding over tiles, "
                "warp shuffles; the last block to finish (atomic ticket) reduces the partials in a "
                "fixed order: one launch, deterministic.",
     .seed = "S3 grid-stride + shuffle; threadFenceReduction",
     .kernels = "single_pass",
     .dtypes = REDUCE_DTYPES,
     .flags = GL_BEST | GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 512}}},
    {.id = 13,
     .name = "cub_device_reduce",
     .backend = GL_BACKEND_CUDA,
     .summary = "CUB's cub::DeviceReduce::Reduce from the CUDA toolkit (CCCL), with the lab's "
                "operators: the reference.",
     .seed = "CCCL/CUB",
     .kernels = "cub_reduce",
     .library = "CUB DeviceReduce::Reduce",
     .dtypes = REDUCE_DTYPES,
     .flags = GL_DETERMINISTIC},
    {.id = 100,
     .name = "serial",
     .backend = GL_BACKEND_CPU,
     .summary =
         "One loop on one core, accumulating in the input's type: the rounding error grows with n.",
     .seed = "S1 CPU baseline",
     .dtypes = REDUCE_DTYPES,
     .flags = GL_DETERMINISTIC},
    {.id = 101,
     .name = "pairwise",
     .backend = GL_BACKEND_CPU,
     .summary = "NumPy's pairwise sum: eight running sums over blocks of 128, halves above that; "
                "the error grows with log2(n).",
     .seed = "S3 numerics of reductions",
     .dtypes = REDUCE_DTYPES,
     .flags = GL_DETERMINISTIC},
    {.id = 102,
     .name = "kahan",
     .backend = GL_BACKEND_CPU,
     .summary = "Kahan's compensated sum: a second variable carries the bits each addition loses. "
                "Float sums only: integer sums are exact, and min/max do not round.",
     .seed = "S3 compensated summation",
     .dtypes = GL_FLOATS,
     .flags = GL_DETERMINISTIC,
     .mode_dtypes = {GL_FLOATS, 0, 0}},
    {.id = 103,
     .name = "openmp_simd",
     .backend = GL_BACKEND_CPU,
     .summary = "OpenMP threads over fixed chunks, 'omp simd' within each; the threads' partials "
                "are combined in thread order.",
     .seed = "S1 CPU parallel baseline; S2 OpenMP",
     .dtypes = REDUCE_DTYPES,
     .flags = GL_BEST | GL_DETERMINISTIC},
};

const gl_ladder gl_ladder_reduce = {.op = "reduce",
                                    .variants = reduce_variants,
                                    .count = GL_COUNT_OF(reduce_variants),
                                    .modes = reduce_modes,
                                    .mode_arg = "op"};

/* dot and norm2 have no ladder of their own: the reduce lab's best path on each side. */
static const gl_variant dot_variants[] = {
    {.id = 0,
     .name = "vec16_single_pass",
     .backend = GL_BACKEND_CUDA,
     .summary = "reduce variant 12's kernel applied to x*y; float32 accumulates in float64 "
                "(products of float32 are exact in it).",
     .seed = "S3 reductions for norms and dot products",
     .kernels = "single_pass",
     .dtypes = GL_FLOATS,
     .flags = GL_BEST | GL_DETERMINISTIC},
    {.id = 100,
     .name = "openmp_simd",
     .backend = GL_BACKEND_CPU,
     .summary = "reduce variant 103's scheme applied to x*y, accumulating in float64.",
     .seed = "S3 reductions for norms and dot products",
     .dtypes = GL_FLOATS,
     .flags = GL_BEST | GL_DETERMINISTIC},
};

static const gl_variant norm2_variants[] = {
    {.id = 0,
     .name = "vec16_single_pass",
     .backend = GL_BACKEND_CUDA,
     .summary = "reduce variant 12's kernel applied to x*x, then sqrt; float32 accumulates in "
                "float64 (products of float32 are exact in it).",
     .seed = "S3 reductions for norms and dot products",
     .kernels = "single_pass",
     .dtypes = GL_FLOATS,
     .flags = GL_BEST | GL_DETERMINISTIC},
    {.id = 100,
     .name = "openmp_simd",
     .backend = GL_BACKEND_CPU,
     .summary = "reduce variant 103's scheme applied to x*x, then sqrt, accumulating in float64.",
     .seed = "S3 reductions for norms and dot products",
     .dtypes = GL_FLOATS,
     .flags = GL_BEST | GL_DETERMINISTIC},
};

const gl_ladder gl_ladder_dot = {
    .op = "dot", .variants = dot_variants, .count = GL_COUNT_OF(dot_variants)};
const gl_ladder gl_ladder_norm2 = {
    .op = "norm2", .variants = norm2_variants, .count = GL_COUNT_OF(norm2_variants)};
