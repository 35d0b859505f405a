/* The scan lab's ladders: scan, from Hillis-Steele to the decoupled look-back and CUB; compact and
 * nonzero, from three passes to one and CUB. Ids come from cuda/scan/scan.h's enums; the CPU's
 * start at 100. */
#include "variants.h"

#include "cuda/scan/scan.h"

static const char *const scan_modes[] = {"sum", "max", "min", NULL};

/* The one-block variants' block: a power of two (Blelloch's tree) of at least a warp. */
#define ONE_BLOCK_TUNABLE             \
  {                                   \
    { "block", GL_BLOCKS_POW2, 1024 } \
  }
#define MULTI_BLOCK_TUNABLE          \
  {                                  \
    { "block", GL_BLOCKS_POW2, 256 } \
  }

static const gl_variant scan_variants[] = {
    {.id = GLC_SCAN_HILLIS_STEELE,
     .name = "hillis_steele",
     .backend = GL_BACKEND_CUDA,
     .summary = "Hillis-Steele in one block: log2(block) steps each adding the value 'offset' "
                "places to the left, n log n work, double-buffered in shared memory. The one "
                "block walks the array a block at a time, carrying the total; up to 2^24 "
                "elements (ValueError beyond).",
     .seed = "S3 5.3, S4 1.6",
     .kernels = "hillis_steele_one_block",
     .dtypes = SCAN_DTYPES,
     .flags = GL_DETERMINISTIC,
     .tunables = ONE_BLOCK_TUNABLE},
    {.id = GLC_SCAN_BLELLOCH,
     .name = "blelloch",
     .backend = GL_BACKEND_CUDA,
     .summary = "Blelloch's work-efficient scan in one block: up-sweep and down-sweep trees over "
                "2 x block elements in shared memory, O(n) work. One block, chunk after chunk "
                "with a carry; up to 2^24 elements.",
     .seed = "S3 5.3",
     .kernels = "blelloch_one_block",
     .dtypes = SCAN_DTYPES,
     .flags = GL_DETERMINISTIC,
     .tunables = ONE_BLOCK_TUNABLE},
    {.id = GLC_SCAN_THEN_PROPAGATE,
     .name = "scan_then_propagate",
     .backend = GL_BACKEND_CUDA,
     .summary = "S3's three kernels over many blocks: Blelloch-scan each chunk and keep its "
                "total, scan the totals (recursively), add each chunk's prefix. Writes y twice "
                "and reads it once: 4 passes.",
     .seed = "S3 5.3",
     .kernels = "scan_blocks add_block_prefixes",
     .dtypes = SCAN_DTYPES,
     .flags = GL_DETERMINISTIC,
     .tunables = MULTI_BLOCK_TUNABLE},
    {.id = GLC_SCAN_REDUCE_THEN_SCAN,
     .name = "reduce_then_scan",
     .backend = GL_BACKEND_CUDA,
     .summary = "Reduce each tile of 16 x block elements, scan the partials in one block, scan "
                "each tile again from its prefix (Blelloch chunks): x read twice, y written "
                "once, 3 passes.",
     .seed = "Merrill & Garland 2016 (reduce-then-scan)",
     .kernels = "reduce_tiles blelloch_one_block scan_tiles",
     .dtypes = SCAN_DTYPES,
     .flags = GL_DETERMINISTIC,
     .tunables = MULTI_BLOCK_TUNABLE},
    {.id = GLC_SCAN_WARP_SHUFFLE,
     .name = "warp_shuffle",
     .backend = GL_BACKEND_CUDA,
     .summary = "Reduce-then-scan on register tiles: 256 threads x 4 16-byte loads, each thread "
                "scanning its vector serially, warps with __shfl_up_sync, one barrier per tile "
                "(no shared-memory tree).",
     .seed = "S4 8; Merrill & Garland 2016",
     .kernels = "reduce_tiles_shuffle blelloch_one_block scan_tiles_shuffle",
     .dtypes = SCAN_DTYPES,
     .flags = GL_DETERMINISTIC},
    {.id = GLC_SCAN_DECOUPLED_LOOKBACK,
     .name = "decoupled_lookback",
     .backend = GL_BACKEND_CUDA,
     .summary = "Single pass: tiles of warp_shuffle's layout (4-byte inputs: 256 threads x 9 "
                "16-byte vectors, 36 KiB; int32 sums into int64: 256 x 6; 8-byte inputs: 256 x "
                "4), each taking its id from an atomic "
                "counter, publishing its aggregate as soon as it has summed itself, and taking "
                "its prefix from a look-back by one warp over its predecessors' published "
                "aggregates and prefixes (flag and value read together; CUB's delays before and "
                "between reads). The tile waits for its prefix in shared memory, not in "
                "registers (from sm_90 one bulk copy, the TMA, issued by thread 0; before, each "
                "thread's cp.async), and is read a vector at a time, three times (its total, "
                "its groups' offsets, the writes): 32-48 registers, 6 resident tiles of 36 KiB "
                "a SM. Reads x once, writes y once. Float sums round differently from run to run "
                "(where the look-back stops varies).",
     .seed = "Merrill & Garland 2016 (decoupled look-back)",
     .kernels = "decoupled_lookback",
     .dtypes = SCAN_DTYPES,
     .flags = GL_BEST},
    {.id = GLC_SCAN_CUB,
     .name = "cub",
     .backend = GL_BACKEND_CUDA,
     .summary = "CUB's DeviceScan (decoupled look-back, tuned per architecture): the reference. "
                "Sums call InclusiveSum/ExclusiveSum, CUB's tuned path: on the raw pointers "
                "where the input is the accumulator (float32, float64, int64), through a "
                "conversion iterator for int32 into int64; max and min (NaN-propagating) take "
                "the lab's operators through that iterator (InclusiveScan/ExclusiveScan).",
     .seed = "CCCL/CUB",
     .kernels = "cub_scan",
     .library = "CUB DeviceScan::InclusiveSum, DeviceScan::ExclusiveSum, "
                "DeviceScan::InclusiveScan, DeviceScan::ExclusiveScan",
     .dtypes = SCAN_DTYPES},
    {.id = 100,
     .name = "serial",
     .backend = GL_BACKEND_CPU,
     .summary = "One loop, in order: NumPy's cumsum.",
     .seed = "-",
     .dtypes = SCAN_DTYPES,
     .flags = GL_DETERMINISTIC},
    {.id = 101,
     .name = "openmp_two_pass",
     .backend = GL_BACKEND_CPU,
     .summary = "OpenMP: each thread reduces its chunk, the chunk totals are scanned serially, "
                "each thread scans its chunk from its prefix.",
     .seed = "S3 5.3",
     .dtypes = SCAN_DTYPES,
     .flags = GL_BEST | GL_DETERMINISTIC},
};

const gl_ladder gl_ladder_scan = {.op = "scan",
                                  .variants = scan_variants,
                                  .count = GL_COUNT_OF(scan_variants),
                                  .modes = scan_modes,
                                  .mode_arg = "op"};

/* compact and nonzero share their kernels and so their ladder; only what is written differs
 * (the kept elements, or their indices). count_true is the binding's sizing pass before a masked
 * compaction (every variant's, the CUB rung's too), which nonzero never makes. */
static const gl_variant select_variants[] = {
    {.id = GLC_COMPACT_THREE_PASS,
     .name = "three_pass",
     .backend = GL_BACKEND_CUDA,
     .summary = "Flags, scan, scatter: count each tile's kept elements, scan the counts in one "
                "block, scatter the kept elements (compact) or their indices (nonzero) from each "
                "tile's offset.",
     .seed = "S3 5.3",
     .kernels = "count_tiles blelloch_one_block scatter_tiles (count_true)",
     .dtypes = SCAN_DTYPES,
     .flags = GL_DETERMINISTIC},
    {.id = GLC_COMPACT_SINGLE_PASS,
     .name = "single_pass",
     .backend = GL_BACKEND_CUDA,
     .summary = "One pass: each tile's offset from a decoupled look-back over the tiles' counts; "
                "the kept elements (compact) or their indices (nonzero) written at once.",
     .seed = "Merrill & Garland 2016",
     .kernels = "compact_lookback (count_true)",
     .dtypes = SCAN_DTYPES,
     .flags = GL_DETERMINISTIC},
    {.id = GLC_COMPACT_STAGED,
     .name = "staged",
     .backend = GL_BACKEND_CUDA,
     .summary = "single_pass with its writes gathered: the tile's kept elements (or their "
                "indices) are placed in shared memory in order after the block's scan, then "
                "written as one contiguous run of 16-byte stores at the tile's offset, instead "
                "of one scattered 4- or 8-byte store per kept element; flags as bits, the "
                "mask's bytes beside each 16-byte load of x in one load.",
     .seed = "Merrill & Garland 2016",
     .kernels = "compact_staged (count_true)",
     .dtypes = SCAN_DTYPES,
     .flags = GL_DETERMINISTIC},
    {.id = GLC_COMPACT_COUNTED_STAGED,
     .name = "counted_staged",
     .backend = GL_BACKEND_CUDA,
     .summary = "three_pass's plan with staged's write-out: count each tile's kept elements "
                "reading only the mask where there is one, scan the counts (scan variant 5), "
                "then stage and write each tile from its offset: no tile waits on a look-back.",
     .seed = "S3 5.3; Merrill & Garland 2016",
     .kernels = "count_kept_tiles decoupled_lookback scatter_staged (count_true)",
     .dtypes = SCAN_DTYPES,
     .flags = GL_BEST | GL_DETERMINISTIC},
    {.id = GLC_COMPACT_CUB,
     .name = "cub",
     .backend = GL_BACKEND_CUDA,
     .summary = "CUB's DeviceSelect: the reference.",
     .seed = "CCCL/CUB",
     .kernels = "cub_select (count_true)",
     .library = "CUB DeviceSelect::Flagged, DeviceSelect::If",
     .dtypes = SCAN_DTYPES},
    {.id = 100,
     .name = "serial",
     .backend = GL_BACKEND_CPU,
     .summary = "One loop, in order.",
     .seed = "-",
     .dtypes = SCAN_DTYPES,
     .flags = GL_BEST | GL_DETERMINISTIC},
};

const gl_ladder gl_ladder_compact = {
    .op = "compact", .variants = select_variants, .count = GL_COUNT_OF(select_variants)};
const gl_ladder gl_ladder_nonzero = {
    .op = "nonzero", .variants = select_variants, .count = GL_COUNT_OF(select_variants)};
