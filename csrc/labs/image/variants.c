/* The image lab's ladders: the 2-D filters, from every tap read from global memory through texture
 * reads and shared separable passes to one fused kernel, and the Mandelbrot dwell map, per pixel
 * and by Mariani-Silver (with dynamic parallelism, and with a host-driven queue). Ids come from
 * cuda/image/image.h's enums; the CPU's start at 100. */
#include "variants.h"

#include "cuda/image/image.h"

/* ---- filters: filter2d, gaussian, box ---- */

static const gl_variant filter_variants[] = {
    {.id = GLC_FILTER_GLOBAL,
     .name = "global",
     .backend = GL_BACKEND_CUDA,
     .summary = "The direct 2-D correlation: one thread per element, every tap a global load "
                "through the boundary's index maps (kernels up to 625 taps).",
     .seed = "S1 filters",
     .kernels = "filter_global_direct",
     .dtypes = FILTER_DTYPES,
     .flags = GL_DETERMINISTIC},
    {.id = GLC_FILTER_TEXTURE,
     .name = "texture",
     .backend = GL_BACKEND_CUDA,
     .summary = "The direct 2-D correlation read through a texture object over a cudaArray copy; "
                "the address mode does the edge. One channel; no 'mirror' mode; waits for its "
                "stream.",
     .seed = "S1 texture memory",
     .kernels = "filter_texture_direct",
     .dtypes = FILTER_DTYPES,
     .flags = GL_DETERMINISTIC},
    {.id = GLC_FILTER_SHARED,
     .name = "shared_separable",
     .backend = GL_BACKEND_CUDA,
     .summary = "Separable kernels: a row pass and a column pass, each through a shared tile "
                "with halos, the intermediate in a float32 scratch image.",
     .seed = "S1 filters",
     .kernels = "filter_rows_shared filter_columns_shared",
     .dtypes = FILTER_DTYPES,
     .flags = GL_DETERMINISTIC},
    {.id = GLC_FILTER_FUSED,
     .name = "fused_separable",
     .backend = GL_BACKEND_CUDA,
     .summary = "Separable kernels: both passes in one kernel, the intermediate in shared memory, "
                "16-byte loads, 8 outputs a thread down each column (Hopper).",
     .seed = "S1 filters; Hopper tuning",
     .kernels = "filter_fused_separable",
     .dtypes = FILTER_DTYPES,
     .flags = GL_BEST | GL_DETERMINISTIC},
    {.id = GLC_FILTER_CPU_OPENMP,
     .name = "openmp",
     .backend = GL_BACKEND_CPU,
     .summary = "Rows across OpenMP threads: separable kernels as a row pass into a float "
                "scratch row block and a column pass, others directly.",
     .seed = "S1 filters",
     .dtypes = FILTER_DTYPES,
     .flags = GL_BEST | GL_DETERMINISTIC},
};

const gl_ladder gl_ladder_filter2d = {
    .op = "filter2d", .variants = filter_variants, .count = GL_COUNT_OF(filter_variants)};
const gl_ladder gl_ladder_gaussian = {
    .op = "gaussian", .variants = filter_variants, .count = GL_COUNT_OF(filter_variants)};
const gl_ladder gl_ladder_box = {
    .op = "box", .variants = filter_variants, .count = GL_COUNT_OF(filter_variants)};

/* ---- mandelbrot ---- */

static const gl_variant mandelbrot_variants[] = {
    {.id = GLC_MANDELBROT_PIXEL,
     .name = "per_pixel",
     .backend = GL_BACKEND_CUDA,
     .summary =
         "One thread per pixel in 32 x 8 blocks, float64 rounded as NumPy rounds (7 operations an "
         "iteration).",
     .seed = "S4 1.8",
     .kernels = "mandelbrot_per_pixel",
     .dtypes = GL_DT(GLC_F64),
     .flags = GL_DETERMINISTIC},
    {.id = GLC_MANDELBROT_DYNAMIC,
     .name = "mariani_silver_dynamic",
     .backend = GL_BACKEND_CUDA,
     .summary = "Mariani-Silver: a block per square checks its border, fills it when uniform, "
                "else launches a child grid of 4 x 4 squares from the device (CDP).",
     .seed = "S4 1.8 (canonizer/mandelbrot-dyn)",
     /* the host launches the top level; the device launches the same kernel for the rest */
     .kernels = "mandelbrot_dynamic_square",
     .dtypes = GL_DT(GLC_F64),
     .flags = GL_BEST | GL_DETERMINISTIC | GL_DEVICE_LAUNCHES},
    {.id = GLC_MANDELBROT_QUEUE,
     .name = "mariani_silver_queue",
     .backend = GL_BACKEND_CUDA,
     .summary = "Mariani-Silver without dynamic parallelism: each level's squares in a device "
                "array, one launch per level from the host, no copy back between levels.",
     .seed = "S4 1.8",
     .kernels = "mandelbrot_queue_level",
     .dtypes = GL_DT(GLC_F64),
     .flags = GL_DETERMINISTIC},
    {.id = GLC_MANDELBROT_CPU_OPENMP,
     .name = "openmp",
     .backend = GL_BACKEND_CPU,
     .summary = "Rows across OpenMP threads with dynamic scheduling (rows through the set cost "
                "max_iter a pixel, rows outside it a few).",
     .seed = "S4 1.8",
     .dtypes = GL_DT(GLC_F64),
     .flags = GL_BEST | GL_DETERMINISTIC},
};

const gl_ladder gl_ladder_mandelbrot = {
    .op = "mandelbrot", .variants = mandelbrot_variants, .count = GL_COUNT_OF(mandelbrot_variants)};
