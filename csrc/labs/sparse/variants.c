/* The sparse lab's ladders: spmv from S3's thread per row through the load-balanced merge path, the
 * ELL, SELL-C-sigma and COO formats (converted from CSR inside the call) and cuSPARSE; cg from S3's
 * kernel-per-operation loop to fused and pipelined passes; spmm from S3's block per row to a
 * register tile and cuSPARSE; on the CPU, serial and OpenMP CSR. Ids come from
 * cuda/sparse/sparse.h's enums; the CPU's start at 100. Every CUDA row names csr_stats as some
 * calls': the first call with a device matrix computes its row statistics (max_row, which every
 * call passes, and what variant=None reads) and gpulab/labs/sparse.py keeps them on it. */
#include "variants.h"

#include "cuda/sparse/sparse.h"

#define BLOCK_TUNABLE                \
  {                                  \
    { "block", GL_BLOCKS_POW2, 256 } \
  }

static const gl_variant spmv_variants[] = {
    {.id = GLC_SPMV_CSR_SCALAR,
     .name = "csr_scalar",
     .backend = GL_BACKEND_CUDA,
     .summary = "S3's kernel: one thread per row; a warp's rows start far apart (uncoalesced), "
                "and one long row holds its warp. gl.spmv's default for short regular rows.",
     .seed = "S3 10.3",
     .kernels = "spmv_csr_scalar (csr_stats)",
     .dtypes = GL_FLOATS,
     .flags = GL_DETERMINISTIC,
     .tunables = BLOCK_TUNABLE},
    {.id = GLC_SPMV_CSR_VECTOR,
     .name = "csr_vector",
     .backend = GL_BACKEND_CUDA,
     .summary = "One warp per row: coalesced loads along the row, a shuffle tree for the sum; "
                "rows shorter than 32 idle lanes.",
     .seed = "S3 10.3",
     .kernels = "spmv_csr_vector (csr_stats)",
     .dtypes = GL_FLOATS,
     .flags = GL_DETERMINISTIC,
     .tunables = BLOCK_TUNABLE},
    {.id = GLC_SPMV_CSR_MERGE_PATH,
     .name = "csr_merge_path",
     .backend = GL_BACKEND_CUDA,
     .summary = "Merge path: rows plus nonzeros in equal shares per thread (a diagonal binary "
                "search each); rows cut by a share's edge added with atomics. gl.spmv's default "
                "where one long row would outlast the rest (best: the matrix-blind default).",
     .seed = "Merrill and Garland, merge-based SpMV",
     .kernels = "spmv_csr_merge_path (csr_stats)",
     .dtypes = GL_FLOATS,
     .flags = GL_BEST,
     .tunables = BLOCK_TUNABLE},
    {.id = GLC_SPMV_ELL_COLUMN_MAJOR,
     .name = "ell_column_major",
     .backend = GL_BACKEND_CUDA,
     .summary = "ELL built in the call (width = the longest row), slot k of row i at k * rows + "
                "i: a warp's loads coalesce.",
     .seed = "S3 1.5, 8.5",
     .kernels = "ell_fill spmv_ell (csr_stats)",
     .dtypes = GL_FLOATS,
     .flags = GL_DETERMINISTIC,
     .tunables = BLOCK_TUNABLE},
    {.id = GLC_SPMV_ELL_ROW_MAJOR,
     .name = "ell_row_major",
     .backend = GL_BACKEND_CUDA,
     .summary = "S3's ELL drawing, slot k of row i at i * width + k: the same kernel with a "
                "warp's loads width elements apart.",
     .seed = "S3 1.5",
     .kernels = "ell_fill spmv_ell (csr_stats)",
     .dtypes = GL_FLOATS,
     .flags = GL_DETERMINISTIC,
     .tunables = BLOCK_TUNABLE},
    {.id = GLC_SPMV_SELL,
     .name = "sell_c_sigma",
     .backend = GL_BACKEND_CUDA,
     .summary = "SELL-C-sigma (C = 32, sigma = 256) built in the call: rows sorted by length in "
                "windows, each warp-sized slice padded to its own longest row.",
     .seed = "Kreutzer et al., SELL-C-sigma",
     .kernels = "sell_sort_window sell_slice_sizes sell_scan_sizes sell_fill spmv_sell "
                "(csr_stats)",
     .dtypes = GL_FLOATS,
     .flags = GL_DETERMINISTIC,
     .tunables = BLOCK_TUNABLE},
    {.id = GLC_SPMV_COO,
     .name = "coo_segmented",
     .backend = GL_BACKEND_CUDA,
     .summary = "COO row indices built in the call; a thread per nonzero, a warp segmented scan "
                "over equal rows, one atomicAdd per run.",
     .seed = "S3 8.5; segmented reduction",
     .kernels = "coo_rows spmv_coo_segmented (csr_stats)",
     .dtypes = GL_FLOATS,
     .tunables = BLOCK_TUNABLE},
    {.id = GLC_SPMV_CUSPARSE,
     .name = "cusparse",
     .backend = GL_BACKEND_CUDA,
     .summary = "cusparseSpMV (generic API, default algorithm) on the CSR arrays, the reference; "
                "libcusparse is loaded on first use.",
     .seed = "cuSPARSE",
     .kernels = "glc_cusparse_spmv (csr_stats)",
     .library = "cuSPARSE SpMV",
     .dtypes = GL_FLOATS},
    {.id = GLC_SPMV_CSR_SUBWARP,
     .name = "csr_subwarp",
     .backend = GL_BACKEND_CUDA,
     .summary = "A group of `lanes` lanes per row (default: the power of two nearest half the "
                "mean row length, 2..32), 6 strided gathers of x in flight per lane, a group "
                "shuffle. gl.spmv's default for irregular rows.",
     .seed = "S3 10.3; sub-warp CSR vector",
     .kernels = "spmv_csr_subwarp (csr_stats)",
     .dtypes = GL_FLOATS,
     .flags = GL_DETERMINISTIC,
     /* lanes=None: gl.spmv passes subwarp_lanes of the matrix's statistics; lanes 0: csr.cu's
      * rule from the mean row length; the values list holds only the explicit choices (0 ends
      * the list) */
     .tunables = {{"block", GL_BLOCKS_POW2, 256}, {"lanes", {2, 4, 8, 16, 32, 0}, 0}}},
    {.id = GLC_SPMV_CSR_HYBRID,
     .name = "csr_hybrid",
     .backend = GL_BACKEND_CUDA,
     .summary = "csr_subwarp's groups for rows of up to 2048 nonzeros; longer rows (a power-law "
                "graph's hubs) listed in the call and cut into chunks of 2048, a block each, "
                "added into y with one atomic per chunk.",
     .seed = "S3 10.3; row binning as in CSR-Adaptive (Greathouse and Daga)",
     .kernels = "spmv_hybrid_rows (spmv_hybrid_chunks) (csr_stats)",
     .dtypes = GL_FLOATS,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}, {"lanes", {2, 4, 8, 16, 32, 0}, 0}}},
    {.id = GLC_SPMV_CSR_HUB_SORTED,
     .name = "csr_hub_sorted",
     .backend = GL_BACKEND_CUDA,
     .summary = "csr_hybrid on columns numbered by descending use, once per matrix (kept on the "
                "gl.CSR: cols + nnz indices more); each call gathers x into that order first, so "
                "that a power-law graph's most used values of x share sectors and stay in L1.",
     .seed = "degree-based relabelling (hub sorting) of graph analytics; S3 10.3",
     .kernels = "hub_gather_x spmv_hybrid_rows (spmv_hybrid_chunks) (csr_stats "
                "hub_count_columns hub_iota hub_invert hub_relabel)",
     .dtypes = GL_FLOATS,
     .tunables = {{"block", GL_BLOCKS_POW2, 256}, {"lanes", {2, 4, 8, 16, 32, 0}, 0}}},
    {.id = GLC_SPMV_CPU_SERIAL,
     .name = "serial",
     .backend = GL_BACKEND_CPU,
     .summary = "The CSR loop, one row after another, each row summed in stored order.",
     .seed = "S3 10.3",
     .dtypes = GL_FLOATS,
     .flags = GL_DETERMINISTIC},
    {.id = GLC_SPMV_CPU_OPENMP,
     .name = "openmp",
     .backend = GL_BACKEND_CPU,
     .summary = "The same loop with rows shared among OpenMP threads (dynamic chunks of 256 "
                "rows); each row's sum keeps its order.",
     .seed = "S3 10.3",
     .dtypes = GL_FLOATS,
     .flags = GL_BEST | GL_DETERMINISTIC},
};

static const gl_variant spmm_variants[] = {
    {.id = GLC_SPMM_ROW_PER_BLOCK,
     .name = "row_per_block",
     .backend = GL_BACKEND_CUDA,
     .summary = "S3's SpMM: a block per row of A, its threads over B's columns (coalesced along "
                "B's rows); each thread reloads the row's entries.",
     .seed = "S3 11.3",
     .kernels = "spmm_row_per_block (csr_stats)",
     .dtypes = GL_FLOATS,
     .flags = GL_DETERMINISTIC,
     /* one warp by default: the block spans B's columns, and k is 8-32 in the benchmark */
     .tunables = {{"block", GL_BLOCKS_POW2, 32}}},
    {.id = GLC_SPMM_REGISTER_TILED,
     .name = "register_tiled",
     .backend = GL_BACKEND_CUDA,
     .summary = "A thread per 4 columns of a row of C, held in registers: each entry of A loaded "
                "once for 4 products; small k packs rows into a warp. gl.spmm's default.",
     .seed = "S3 11.3; register tiling",
     .kernels = "spmm_register_tiled (csr_stats)",
     .dtypes = GL_FLOATS,
     .flags = GL_BEST | GL_DETERMINISTIC,
     .tunables = BLOCK_TUNABLE},
    {.id = GLC_SPMM_CUSPARSE,
     .name = "cusparse",
     .backend = GL_BACKEND_CUDA,
     .summary = "cusparseSpMM (generic API, default algorithm, row-major B and C), the "
                "reference; libcusparse is loaded on first use.",
     .seed = "cuSPARSE",
     .kernels = "glc_cusparse_spmm (csr_stats)",
     .library = "cuSPARSE SpMM",
     .dtypes = GL_FLOATS},
    {.id = GLC_SPMM_CPU_SERIAL,
     .name = "serial",
     .backend = GL_BACKEND_CPU,
     .summary = "Row i of C accumulates each entry's row of B in turn (the inner loop along the "
                "rows of B and C).",
     .seed = "S3 11.3",
     .dtypes = GL_FLOATS,
     .flags = GL_DETERMINISTIC},
    {.id = GLC_SPMM_CPU_OPENMP,
     .name = "openmp",
     .backend = GL_BACKEND_CPU,
     .summary = "The same loop with rows shared among OpenMP threads; each row's sums keep their "
                "order.",
     .seed = "S3 11.3",
     .dtypes = GL_FLOATS,
     .flags = GL_BEST | GL_DETERMINISTIC},
};

/* cg: every row also names the kernels only Jacobi (cg_inverse_diagonal, cg_jacobi) or an x0
 * (the library SpMV and cg_residual_init) launch. The CUDA rows are not GL_DETERMINISTIC: the
 * merge path adds a row cut into three or more parts (rows past 7 entries) with atomics in any
 * order; the dots themselves are summed in a fixed order. */
static const gl_variant cg_variants[] = {
    {.id = GLC_CG_TEXTBOOK,
     .name = "textbook",
     .backend = GL_BACKEND_CUDA,
     .summary = "S3's first CG: a kernel per operation (the merge-path SpMV, two-stage dots, "
                "axpys), alpha and beta computed on the host after two read-backs an iteration.",
     .seed = "S3 11.5",
     .kernels = "spmv_csr_merge_path cg_dot_partials cg_dot_finish cg_scalars cg_axpy cg_xpby "
                "(cg_inverse_diagonal cg_jacobi cg_residual_init) (csr_stats)",
     .dtypes = GL_FLOATS,
     .tunables = BLOCK_TUNABLE},
    {.id = GLC_CG_DEVICE_SCALARS,
     .name = "device_scalars",
     .backend = GL_BACKEND_CUDA,
     .summary = "The same kernels with alpha, beta and ||r|| kept on the device; the host reads "
                "the state every check_every iterations, one check behind the launches.",
     .seed = "S3 11.5 step 3, step 5",
     .kernels = "cg_spmv cg_dot_partials cg_scalars cg_axpy cg_xpby "
                "(cg_inverse_diagonal cg_jacobi spmv_csr_merge_path cg_residual_init) (csr_stats)",
     .dtypes = GL_FLOATS,
     .tunables = BLOCK_TUNABLE},
    {.id = GLC_CG_FUSED,
     .name = "fused",
     .backend = GL_BACKEND_CUDA,
     .summary = "Device scalars and fused passes: SpMV with p.Ap, x and r (and Jacobi's z) in one "
                "pass with r.z and r.r, p's update zeroing q: 2 passes and 2 reductions. gl.cg's "
                "default where dia_fused refuses A.",
     .seed = "S3 11.5 step 4",
     .kernels = "cg_spmv_dot cg_update_xr cg_update_p cg_dot_partials cg_scalars "
                "(cg_inverse_diagonal cg_jacobi spmv_csr_merge_path cg_residual_init) (csr_stats)",
     .dtypes = GL_FLOATS,
     .flags = GL_BEST,
     .tunables = BLOCK_TUNABLE},
    {.id = GLC_CG_PIPELINED,
     .name = "pipelined",
     .backend = GL_BACKEND_CUDA,
     .summary =
         "Chronopoulos-Gear: one reduction point an iteration, A p kept by recurrence (s = "
         "w + beta s), so its residual drifts from textbook's by rounding, more near the end.",
     .seed = "Chronopoulos and Gear 1989; S3 11.5",
     .kernels = "cg_pipelined_update cg_spmv_dot cg_dot_partials cg_scalars "
                "(cg_inverse_diagonal cg_jacobi spmv_csr_merge_path cg_residual_init) (csr_stats)",
     .dtypes = GL_FLOATS,
     .tunables = BLOCK_TUNABLE},
    {.id = GLC_CG_DIA_FUSED,
     .name = "dia_fused",
     .backend = GL_BACKEND_CUDA,
     .summary = "A stored by its diagonals (DIA, built in the call; at most 32, in fewer bytes "
                "than the CSR arrays, else a ValueError), p's update and the previous x update "
                "inside the SpMV: 2 passes and 2 reductions an iteration, no indices read. gl.cg's "
                "default where it accepts A.",
     .seed = "S3 11.5 step 4; Saad, Iterative Methods 3.4 (DIA)",
     .kernels = "dia_find_offsets dia_fill cg_dia_step cg_update_r cg_dia_finish_x "
                "cg_dot_partials cg_scalars "
                "(cg_inverse_diagonal cg_jacobi spmv_csr_merge_path cg_residual_init) (csr_stats)",
     .dtypes = GL_FLOATS,
     .tunables = BLOCK_TUNABLE},
    {.id = GLC_CG_CPU_SERIAL,
     .name = "serial",
     .backend = GL_BACKEND_CPU,
     .summary = "Variant 0's algorithm in plain C: the serial CSR SpMV, dots accumulated in "
                "double, convergence tested every iteration.",
     .seed = "S3 11.5",
     .dtypes = GL_FLOATS,
     .flags = GL_BEST | GL_DETERMINISTIC},
};

const gl_ladder gl_ladder_cg = {
    .op = "cg", .variants = cg_variants, .count = GL_COUNT_OF(cg_variants)};
const gl_ladder gl_ladder_spmm = {
    .op = "spmm", .variants = spmm_variants, .count = GL_COUNT_OF(spmm_variants)};
const gl_ladder gl_ladder_spmv = {
    .op = "spmv", .variants = spmv_variants, .count = GL_COUNT_OF(spmv_variants)};
