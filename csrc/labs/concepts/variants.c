/* The concepts lab's ladders: divergence, warp_reduce, counter, sin and lookup. Ids:
 * cuda/concepts/concepts.h. */
#include "variants.h"

#include "cuda/concepts/concepts.h"

#define CN_BLOCKS_FROM_64 \
  { 64, 128, 256, 512, 1024, 0 }

static const gl_variant divergence_variants[] = {
    {.id = GLC_DIVERGENCE_BRANCH,
     .name = "branch_per_key",
     .backend = GL_BACKEND_CUDA,
     .summary = "A switch on key & 3 runs one of four FMA loops (the paths). Lanes of a warp whose "
                "keys differ run their loops one after another, the others masked off: keys that "
                "change per lane cost four paths, per half-warp two, per warp one.",
     .seed = "S0 'The Challenge of Branch Divergence'; S0 ch. 5 SIMT; S4 warp divergence",
     .kernels = "divergence_branch",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}}},
    {.id = GLC_DIVERGENCE_BRANCH_FREE,
     .name = "branch_free",
     .backend = GL_BACKEND_CUDA,
     .summary = "The key selects the path's two constants (selects, no branch) and every lane "
                "runs the one loop: one path's time whatever the keys.",
     .seed = "S4 'operate on data' instead of diverging",
     .kernels = "divergence_branch_free",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_BEST | GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}}},
    {.id = GLC_DIVERGENCE_ALL_PATHS,
     .name = "all_paths_select",
     .backend = GL_BACKEND_CUDA,
     .summary = "Every lane computes all four paths and keeps its own, as predication (the "
                "compiler's if-conversion) would: four paths' time whatever the keys.",
     .seed = "S0 ch. 5: divergence costs the sum of the paths",
     .kernels = "divergence_all_paths",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}}},
    {.id = GLC_DIVERGENCE_CPU,
     .name = "openmp",
     .backend = GL_BACKEND_CPU,
     .summary = "OpenMP threads over the elements, fmaf per step: bit-identical to the CUDA "
                "variants.",
     .seed = "S0/S2 OpenMP",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_BEST | GL_DETERMINISTIC},
};

const gl_ladder gl_ladder_divergence = {
    .op = "divergence", .variants = divergence_variants, .count = GL_COUNT_OF(divergence_variants)};

static const gl_variant warp_reduce_variants[] = {
    {.id = GLC_WARP_REDUCE_LOCKSTEP_PLAIN,
     .name = "lockstep_plain",
     .backend = GL_BACKEND_CUDA,
     .summary = "S0's last-warp unroll as written: six steps on a plain shared array, without "
                "__syncwarp() and without volatile. A deliberate race: the compiler may load a "
                "partner's slot before the partner stored it (the sm_90 SASS loads s[tid+16] "
                "ahead of the step-32 store), and independent thread scheduling does not keep "
                "the lanes in lockstep. racecheck reports it.",
     .seed = "S0 'Reduction #5: Unrolling the Last Warp'",
     .kernels = "block_sums_atomic block_sums_trials",
     .dtypes = GL_DT(GLC_I32),
     .flags = GL_RACY,
     .tunables = {{"block", CN_BLOCKS_FROM_64, 256}}},
    {.id = GLC_WARP_REDUCE_LOCKSTEP_VOLATILE,
     .name = "lockstep_volatile",
     .backend = GL_BACKEND_CUDA,
     .summary = "The pre-Volta idiom: volatile keeps each thread's loads and stores in order, but "
                "there is no __syncwarp(), so only lockstep execution of the warp makes it "
                "right, which independent thread scheduling does not promise. A deliberate "
                "race; racecheck reports it.",
     .seed = "Harris kernel 5 (volatile); S0 ch. 5 'Independent Thread Scheduling'; S1 ITS",
     .kernels = "block_sums_atomic block_sums_trials",
     .dtypes = GL_DT(GLC_I32),
     .flags = GL_RACY,
     .tunables = {{"block", CN_BLOCKS_FROM_64, 256}}},
    {.id = GLC_WARP_REDUCE_SYNCWARP,
     .name = "syncwarp",
     .backend = GL_BACKEND_CUDA,
     .summary = "Each step reads, __syncwarp(), writes, __syncwarp(): the warp's lanes meet "
                "between every read and write (the CUDA Programming Guide's form).",
     .seed = "S1 __syncwarp; S0 ch. 5",
     .kernels = "block_sums_atomic block_sums_trials",
     .dtypes = GL_DT(GLC_I32),
     .flags = GL_BEST | GL_DETERMINISTIC,
     .tunables = {{"block", CN_BLOCKS_FROM_64, 256}}},
    {.id = GLC_WARP_REDUCE_SHUFFLE,
     .name = "shuffle",
     .backend = GL_BACKEND_CUDA,
     .summary = "The last warp's partial sums move through registers with __shfl_down_sync, "
                "whose mask synchronizes the lanes; no shared memory after the tree.",
     .seed = "S1 warp shuffles; S0 ch. 5 __shfl_down_sync",
     .kernels = "block_sums_atomic block_sums_trials",
     .dtypes = GL_DT(GLC_I32),
     .flags = GL_DETERMINISTIC,
     .tunables = {{"block", CN_BLOCKS_FROM_64, 256}}},
    {.id = GLC_WARP_REDUCE_CPU,
     .name = "block_sums",
     .backend = GL_BACKEND_CPU,
     .summary = "The block sums over blocks of 256 elements (the CUDA variants' default block), "
                "in one thread: no warps, so no trial can go wrong.",
     .seed = "S0 CPU reduction",
     .dtypes = GL_DT(GLC_I32),
     .flags = GL_BEST | GL_DETERMINISTIC},
};

const gl_ladder gl_ladder_warp_reduce = {.op = "warp_reduce",
                                         .variants = warp_reduce_variants,
                                         .count = GL_COUNT_OF(warp_reduce_variants)};

static const gl_variant counter_variants[] = {
    {.id = GLC_COUNTER_RACY,
     .name = "racy_increment",
     .backend = GL_BACKEND_CUDA,
     .summary = "S4's non-atomic (*counter)++: a load and a store per counting thread, so lanes "
                "and warps overwrite each other's increments. A deliberate race: the count lies "
                "in [1, expected] (expected: the non-zero elements), not at expected.",
     .seed = "S4 atomics: the not-atomic counter",
     .kernels = "count_racy",
     .dtypes = GL_DT(GLC_I32),
     .flags = GL_RACY,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}}},
    {.id = GLC_COUNTER_ATOMIC,
     .name = "atomic_add",
     .backend = GL_BACKEND_CUDA,
     .summary = "atomicAdd(counter, 1) per counting thread, as S4 writes it. The address is "
                "provably uniform, so ptxas makes it one atomic per warp by itself (VOTEU.ANY, "
                "UPOPC, one REDG in the sm_90 SASS).",
     .seed = "S4 atomics: count_kernel_atomic",
     .kernels = "count_atomic",
     .dtypes = GL_DT(GLC_I32),
     .flags = GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}}},
    {.id = GLC_COUNTER_ATOMIC_PER_THREAD,
     .name = "atomic_per_thread",
     .backend = GL_BACKEND_CUDA,
     .summary = "One atomicAdd per counting thread, the address's uniformity hidden from ptxas "
                "(counter + (lane & mask), mask = 0 at run time): the serialized same-address "
                "atomics of S1's AtomicGlobal.",
     .seed = "S1 'AtomicGlobal'",
     .kernels = "count_atomic_per_thread",
     .dtypes = GL_DT(GLC_I32),
     .flags = GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}}},
    {.id = GLC_COUNTER_WARP_AGGREGATED,
     .name = "warp_aggregated",
     .backend = GL_BACKEND_CUDA,
     .summary = "__ballot_sync of the counting lanes; lane 0 adds its popcount: one atomic per "
                "warp, written out (what ptxas does for variant 1, and what it cannot do when "
                "the increment varies by lane).",
     .seed = "S4 warp vote functions; S1 warp-level primitives",
     .kernels = "count_warp_aggregated",
     .dtypes = GL_DT(GLC_I32),
     .flags = GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}}},
    {.id = GLC_COUNTER_BLOCK_AGGREGATED,
     .name = "block_aggregated",
     .backend = GL_BACKEND_CUDA,
     .summary = "__syncthreads_count of the counting threads; thread 0 adds it: one atomic per "
                "block.",
     .seed = "S1 'AtomicShared' (one global atomic per block)",
     .kernels = "count_block_aggregated",
     .dtypes = GL_DT(GLC_I32),
     .flags = GL_BEST | GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}}},
    {.id = GLC_COUNTER_CPU_SERIAL,
     .name = "serial",
     .backend = GL_BACKEND_CPU,
     .summary = "One thread counts: the expected value.",
     .seed = "S4 CPU baseline",
     .dtypes = GL_DT(GLC_I32),
     .flags = GL_BEST | GL_DETERMINISTIC},
    {.id = GLC_COUNTER_CPU_RACY,
     .name = "openmp_racy",
     .backend = GL_BACKEND_CPU,
     .summary = "OpenMP threads increment one counter with a relaxed load and a relaxed store "
                "(defined C, not atomic as a whole): the same lost updates on the host when "
                "more than one thread runs. A deliberate race.",
     .seed = "S0/S2 OpenMP races",
     .dtypes = GL_DT(GLC_I32),
     .flags = GL_RACY},
    {.id = GLC_COUNTER_CPU_ATOMIC,
     .name = "openmp_atomic",
     .backend = GL_BACKEND_CPU,
     .summary = "OpenMP threads with '#pragma omp atomic' increments: exact, serialized on one "
                "cache line.",
     .seed = "S0/S2 OpenMP atomics",
     .dtypes = GL_DT(GLC_I32),
     .flags = GL_DETERMINISTIC},
};

const gl_ladder gl_ladder_counter = {
    .op = "counter", .variants = counter_variants, .count = GL_COUNT_OF(counter_variants)};

static const gl_variant sin_variants[] = {
    {.id = GLC_SIN_ACCURATE,
     .name = "sinf",
     .backend = GL_BACKEND_CUDA,
     .summary = "sinf, the accurate library function: within 2 ulp over the whole range, with a "
                "slow path for large arguments (gpulab is built without -use_fast_math).",
     .seed = "S1/S4 intrinsics vs standard functions",
     .kernels = "sin_accurate",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_BEST | GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}}},
    {.id = GLC_SIN_INTRINSIC,
     .name = "intrinsic_sinf",
     .backend = GL_BACKEND_CUDA,
     .summary = "__sinf, the special function unit's approximation (one MUFU.SIN after a "
                "float32 scaling): absolute error within 2^-21.41 on [-pi, pi], growing with the "
                "argument's size outside.",
     .seed = "S1/S4 __sinf",
     .kernels = "sin_intrinsic",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}}},
    {.id = GLC_SIN_CPU,
     .name = "libm_sinf",
     .backend = GL_BACKEND_CPU,
     .summary = "The C library's sinf over OpenMP threads.",
     .seed = "S0 CPU baseline",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_BEST | GL_DETERMINISTIC},
};

const gl_ladder gl_ladder_sin = {
    .op = "sin", .variants = sin_variants, .count = GL_COUNT_OF(sin_variants)};

static const gl_variant lookup_variants[] = {
    {.id = GLC_LOOKUP_CONSTANT,
     .name = "constant",
     .backend = GL_BACKEND_CUDA,
     .summary = "The table copied into __constant__ memory, looked up there: one broadcast when a "
                "warp's indices agree, one pass per distinct index when they differ. Lookups on "
                "different streams take turns (one table per device).",
     .seed = "S0 constant memory; S4 __constant__ lookup table",
     .kernels = "lookup_constant",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}}},
    {.id = GLC_LOOKUP_GLOBAL_LDG,
     .name = "global_ldg",
     .backend = GL_BACKEND_CUDA,
     .summary = "The table stays in global memory, read through the read-only cache (__ldg): a "
                "warp's different indices are served together by L1.",
     .seed = "S3 read-only cache",
     .kernels = "lookup_global_ldg",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_BEST | GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}}},
    {.id = GLC_LOOKUP_SHARED,
     .name = "shared",
     .backend = GL_BACKEND_CUDA,
     .summary = "Each block of about one wave copies the table into shared memory, then looks up "
                "a grid-stride share of the indices (bank conflicts only, no serialization per "
                "address).",
     .seed = "S0 shared memory",
     .kernels = "lookup_shared",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_DETERMINISTIC,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}}},
    {.id = GLC_LOOKUP_CPU,
     .name = "openmp",
     .backend = GL_BACKEND_CPU,
     .summary = "np.take(table, idx, mode='clip') in C over OpenMP threads.",
     .seed = "S0 CPU baseline",
     .dtypes = GL_DT(GLC_F32),
     .flags = GL_BEST | GL_DETERMINISTIC},
};

const gl_ladder gl_ladder_lookup = {
    .op = "lookup", .variants = lookup_variants, .count = GL_COUNT_OF(lookup_variants)};
