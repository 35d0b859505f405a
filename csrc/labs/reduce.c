/* The reduce lab (LABS.md section 2): reduce's ladder, and dot and norm2 on its best path. This
 * file holds the lab's variant tables and its bindings. */
#include <string.h>

#include "../cpu/gpulab_cpu.h"
#include "../reduction.h"

#define REDUCE_DTYPES (GL_FLOATS | GL_DT(GLC_I32))
/* What S1's kernels can do: they finish with atomics, and CUDA's atomic min and max take
 * integers only. In the lab's mode order: sum, min, max. */
#define ATOMIC_SUPPORT \
  { REDUCE_DTYPES, GL_DT(GLC_I32), GL_DT(GLC_I32) }

static const char *const reduce_modes[] = {"sum", "min", "max", NULL};

static const gl_variant reduce_variants[] = {
    {0,
     "interleaved_divergent",
     GL_BACKEND_CUDA,
     "Harris 1: interleaved addressing; the test tid % (2*stride) leaves most lanes of each warp "
     "idle (divergence) and the modulo is slow. One pass per 'block' elements, repeated.",
     "S0 ch. 5 (Harris kernel 1)",
     REDUCE_DTYPES,
     GL_DETERMINISTIC,
     {{"block", GL_BLOCKS_POW2, 256}}},
    {1,
     "interleaved_strided",
     GL_BACKEND_CUDA,
     "Harris 2: strided index 2*stride*tid, so active threads are contiguous (no divergence), but "
     "they hit the same shared-memory banks.",
     "S0 ch. 5 (Harris kernel 2)",
     REDUCE_DTYPES,
     GL_DETERMINISTIC,
     {{"block", GL_BLOCKS_POW2, 256}}},
    {2,
     "sequential",
     GL_BACKEND_CUDA,
     "Harris 3: sequential addressing, stride halving from block/2: conflict-free, but half the "
     "threads idle from the first step.",
     "S0 ch. 5 (Harris kernel 3)",
     REDUCE_DTYPES,
     GL_DETERMINISTIC,
     {{"block", GL_BLOCKS_POW2, 256}}},
    {3,
     "first_add_on_load",
     GL_BACKEND_CUDA,
     "Harris 4: each thread adds two elements while loading, so a block covers 2*block elements "
     "and half the blocks are launched.",
     "S0 ch. 5 (Harris kernel 4)",
     REDUCE_DTYPES,
     GL_DETERMINISTIC,
     {{"block", GL_BLOCKS_POW2, 256}}},
    {4,
     "unroll_last_warp",
     GL_BACKEND_CUDA,
     "Harris 5: the last warp's six steps unrolled without __syncthreads. S0's version relies on a "
     "volatile array and on warps running in lockstep, which independent thread scheduling "
     "(Volta and later, the H100 too) does not promise: a lane may read its partner's slot before "
     "the partner wrote it. Here each step reads, __syncwarp(), writes, __syncwarp().",
     "S0 ch. 5 (Harris kernel 5)",
     REDUCE_DTYPES,
     GL_DETERMINISTIC,
     {{"block", GL_BLOCKS_POW2, 256}}},
    {5,
     "complete_unroll",
     GL_BACKEND_CUDA,
     "Harris 6: the block size is a template parameter, so the whole tree unrolls into "
     "straight-line code with no loop or block-size tests.",
     "S0 ch. 5 (Harris kernel 6)",
     REDUCE_DTYPES,
     GL_DETERMINISTIC,
     {{"block", GL_BLOCKS_POW2, 256}}},
    {6,
     "cascaded",
     GL_BACKEND_CUDA,
     "Harris 7: algorithm cascading: one resident wave of blocks, each thread reducing many "
     "elements in registers before the unrolled tree; a one-block second pass.",
     "S0 ch. 5 (Harris kernel 7)",
     REDUCE_DTYPES,
     GL_DETERMINISTIC,
     {{"block", GL_BLOCKS_POW2, 256}}},
    {7,
     "shared_shuffle",
     GL_BACKEND_CUDA,
     "S1 SharedShuffle: shared-memory tree down to one warp, __shfl_down_sync for the last five "
     "steps, one global atomic per block. Float sums are not deterministic (atomic order).",
     "S1 parallel reduction (SharedShuffle)",
     REDUCE_DTYPES,
     0,
     {{"block", GL_BLOCKS_POW2, 256}},
     ATOMIC_SUPPORT},
    {8,
     "atomic_global",
     GL_BACKEND_CUDA,
     "S1 AtomicGlobal: one global atomic per element, all on one address: the updates serialize.",
     "S1 parallel reduction (AtomicGlobal)",
     REDUCE_DTYPES,
     0,
     {{"block", GL_BLOCKS_POW2, 256}},
     ATOMIC_SUPPORT},
    {9,
     "atomic_shared",
     GL_BACKEND_CUDA,
     "S1 AtomicShared: atomics on one shared-memory variable per block, then one global atomic "
     "per block.",
     "S1 parallel reduction (AtomicShared)",
     REDUCE_DTYPES,
     0,
     {{"block", GL_BLOCKS_POW2, 256}},
     ATOMIC_SUPPORT},
    {10,
     "shared_tree_atomic",
     GL_BACKEND_CUDA,
     "S1 ReduceShared: the whole shared-memory tree (log2 block steps), then one global atomic "
     "per block.",
     "S1 parallel reduction (ReduceShared)",
     REDUCE_DTYPES,
     0,
     {{"block", GL_BLOCKS_POW2, 256}},
     ATOMIC_SUPPORT},
    {11,
     "cooperative_grid_sync",
     GL_BACKEND_CUDA,
     "One kernel: grid-stride partials, a cooperative-groups grid.sync(), block 0 reduces the "
     "partials. Launched cooperatively with one resident wave, since a grid barrier needs every "
     "block resident.",
     "S4 cooperative groups",
     REDUCE_DTYPES,
     GL_DETERMINISTIC,
     {{"block", GL_BLOCKS_POW2, 256}}},
    {12,
     "vec16_single_pass",
     GL_BACKEND_CUDA,
     "16-byte loads, 4 in flight per thread, one resident wave striding over tiles, warp "
     "shuffles; the last block to finish (atomic ticket) reduces the partials in a fixed order: "
     "one launch, deterministic.",
     "S3 grid-stride + shuffle; threadFenceReduction",
     REDUCE_DTYPES,
     GL_BEST | GL_DETERMINISTIC,
     {{"block", GL_BLOCKS_POW2, 512}}},
    {13,
     "cub_device_reduce",
     GL_BACKEND_CUDA,
     "CUB's cub::DeviceReduce::Reduce from the CUDA toolkit (CCCL), with the lab's operators: "
     "the reference.",
     "CCCL/CUB",
     REDUCE_DTYPES,
     GL_DETERMINISTIC,
     {{0}}},
    {100,
     "serial",
     GL_BACKEND_CPU,
     "One loop on one core, accumulating in the input's type: the rounding error grows with n.",
     "S1 CPU baseline",
     REDUCE_DTYPES,
     GL_DETERMINISTIC,
     {{0}}},
    {101,
     "pairwise",
     GL_BACKEND_CPU,
     "NumPy's pairwise sum: eight running sums over blocks of 128, halves above that; the error "
     "grows with log2(n).",
     "S3 numerics of reductions",
     REDUCE_DTYPES,
     GL_DETERMINISTIC,
     {{0}}},
    {102,
     "kahan",
     GL_BACKEND_CPU,
     "Kahan's compensated sum: a second variable carries the bits each addition loses. Float "
     "sums only: integer sums are exact, and min/max do not round.",
     "S3 compensated summation",
     GL_FLOATS,
     GL_DETERMINISTIC,
     {{0}},
     {GL_FLOATS, 0, 0}},
    {103,
     "openmp_simd",
     GL_BACKEND_CPU,
     "OpenMP threads over fixed chunks, 'omp simd' within each; the threads' partials are "
     "combined in thread order.",
     "S1 CPU parallel baseline; S2 OpenMP",
     REDUCE_DTYPES,
     GL_BEST | GL_DETERMINISTIC,
     {{0}}},
};

const gl_lab gl_lab_reduce = {"reduce", reduce_variants,
                              sizeof reduce_variants / sizeof *reduce_variants, reduce_modes, "op"};

/* dot and norm2 have no ladder of their own: the reduce lab's best path on each side. */
#define MAPPED_SUM_VARIANTS(what)                                                              \
  {                                                                                            \
    {0,                                                                                        \
     "vec16_single_pass",                                                                      \
     GL_BACKEND_CUDA,                                                                          \
     "reduce variant 12's kernel applied to " what                                             \
     "; float32 accumulates in float64 (products "                                             \
     "of float32 are exact in it).",                                                           \
     "S3 reductions for norms and dot products",                                               \
     GL_FLOATS,                                                                                \
     GL_BEST | GL_DETERMINISTIC,                                                               \
     {{0}}},                                                                                   \
    {                                                                                          \
      100, "openmp_simd", GL_BACKEND_CPU,                                                      \
          "reduce variant 103's scheme applied to " what ", accumulating in float64.",         \
          "S3 reductions for norms and dot products", GL_FLOATS, GL_BEST | GL_DETERMINISTIC, { \
        { 0 }                                                                                  \
      }                                                                                        \
    }                                                                                          \
  }

static const gl_variant dot_variants[] = MAPPED_SUM_VARIANTS("x*y");
static const gl_variant norm2_variants[] = MAPPED_SUM_VARIANTS("x*x, then sqrt");

const gl_lab gl_lab_dot = {"dot", dot_variants, sizeof dot_variants / sizeof *dot_variants};
const gl_lab gl_lab_norm2 = {"norm2", norm2_variants,
                             sizeof norm2_variants / sizeof *norm2_variants};

/* ---- reduce ---- */

static int reduce_result_type(int dtype, int mode) {
  switch (dtype) {
    case GLC_F32:
      return NPY_FLOAT32;
    case GLC_F64:
      return NPY_FLOAT64;
    default:
      return mode == GLC_REDUCE_SUM ? NPY_INT64 : NPY_INT32;
  }
}

/* NumPy's rules: the sum of nothing is 0; min and max of nothing are undefined. */
static int reduce_empty(const gl_rd_call *c) {
  if (c->mode == GLC_REDUCE_SUM) return 0; /* the value slot starts zeroed */
  PyErr_Format(PyExc_ValueError, "zero-size array to reduction operation %s which has no identity",
               c->mode == GLC_REDUCE_MIN ? "minimum" : "maximum");
  return -1;
}

static int reduce_cuda(const gl_rd_call *c) {
  return glc_reduce(c->variant->id, c->block, c->mode, c->dtype, c->size, c->in[0], c->result,
                    c->stream);
}

static int reduce_cpu(const gl_rd_call *c) {
  return glcpu_reduce(c->variant->id, c->mode, c->dtype, c->size, c->in[0], c->result);
}

static const gl_rd_op reduce_op = {
    &gl_lab_reduce, 1,           {"x"},     REDUCE_DTYPES, reduce_result_type,
    reduce_empty,   reduce_cuda, reduce_cpu};

/* reduce(x, op, variant, stream, block), all positional: the Python API fills them in. */
static PyObject *py_reduce(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 5) return PyErr_Format(PyExc_TypeError, "_core.reduce takes 5 positional arguments");
  return gl_rd_run(&reduce_op, args, args[1], args[2], args[3], args[4]);
}

/* ---- dot and norm2 ---- */

static int same_float_type(int dtype, int mode) {
  (void)mode;
  return dtype == GLC_F32 ? NPY_FLOAT32 : NPY_FLOAT64;
}

static int zero_when_empty(const gl_rd_call *c) {
  (void)c; /* the value slot starts zeroed: the sum of no products, the norm of nothing */
  return 0;
}

static int dot_cuda(const gl_rd_call *c) {
  return glc_dot(c->dtype, c->size, c->in[0], c->in[1], c->result, c->stream);
}

static int dot_cpu(const gl_rd_call *c) {
  return glcpu_dot(c->dtype, c->size, c->in[0], c->in[1], c->result);
}

static int norm2_cuda(const gl_rd_call *c) {
  return glc_norm2(c->dtype, c->size, c->in[0], c->result, c->stream);
}

static int norm2_cpu(const gl_rd_call *c) {
  return glcpu_norm2(c->dtype, c->size, c->in[0], c->result);
}

static const gl_rd_op dot_op = {&gl_lab_dot,     2,        {"x", "y"}, GL_FLOATS, same_float_type,
                                zero_when_empty, dot_cuda, dot_cpu};
static const gl_rd_op norm2_op = {&gl_lab_norm2,   1,          {"x"},    GL_FLOATS, same_float_type,
                                  zero_when_empty, norm2_cuda, norm2_cpu};

/* dot(x, y, variant, stream) and norm2(x, variant, stream), all positional. */
static PyObject *py_dot(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 4) return PyErr_Format(PyExc_TypeError, "_core.dot takes 4 positional arguments");
  return gl_rd_run(&dot_op, args, Py_None, args[2], args[3], Py_None);
}

static PyObject *py_norm2(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 3) return PyErr_Format(PyExc_TypeError, "_core.norm2 takes 3 positional arguments");
  return gl_rd_run(&norm2_op, args, Py_None, args[1], args[2], Py_None);
}

PyMethodDef gl_reduce_lab_methods[] = {
    {"reduce", (PyCFunction)(void (*)(void))py_reduce, METH_FASTCALL,
     "reduce(x, op, variant, stream, block): sum, min or max of all of x."},
    {"dot", (PyCFunction)(void (*)(void))py_dot, METH_FASTCALL,
     "dot(x, y, variant, stream): sum of x*y."},
    {"norm2", (PyCFunction)(void (*)(void))py_norm2, METH_FASTCALL,
     "norm2(x, variant, stream): sqrt of the sum of x*x."},
    {NULL}};
