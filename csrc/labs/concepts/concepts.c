/* The concepts lab's bindings, on the core's placement (csrc/core/operands.h): divergence,
 * warp_reduce and lookup, counter (a reduction) and sin (an elementwise op). */
#include <string.h>

#include "cpu.h"
#include "csrc/core/args.h"
#include "csrc/core/operands.h"
#include "cuda/concepts/concepts.h"
#include "variants.h"

/* An op's block and its one scalar (iterations, trials). */
typedef struct {
  gl_operands_block block;
  int scalar;
} concept_params;

static int block_of(const gl_operands_call *c) {
  return ((const concept_params *)c->params)->block.value;
}

static int scalar_of(const gl_operands_call *c) {
  return ((const concept_params *)c->params)->scalar;
}

/* An int argument within [low, high]: TypeError for a non-int, ValueError naming it otherwise. */
static int int_in_range(PyObject *obj, const char *name, long long low, long long high,
                        int *value) {
  long long v;
  if (gl_int64_arg(obj, name, &v) < 0) return -1;
  if (v < low || v > high) {
    PyErr_Format(PyExc_ValueError, "%s must be in [%lld, %lld], got %lld", name, low, high, v);
    return -1;
  }
  *value = (int)v;
  return 0;
}

static void same_shape_result(gl_operands_call *c, int from, int npy_type) {
  c->out_ndim[0] = c->in_ndim[from];
  memcpy(c->out_shape[0], c->shape[from], sizeof(Py_ssize_t) * (size_t)c->in_ndim[from]);
  c->out_type[0] = npy_type;
}

/* ---- divergence ---- */

static int divergence_outputs(gl_operands_call *c) {
  if (gl_check_same_shape(c->in_ndim[0], c->shape[0], c->in_ndim[1], c->shape[1], "x", "key") < 0)
    return -1;
  same_shape_result(c, 0, NPY_FLOAT32);
  return 0;
}

static int divergence_cuda(const gl_operands_call *c) {
  return glc_divergence(c->variant->id, block_of(c), (size_t)c->in_size[0], c->in[0], c->in[1],
                        scalar_of(c), c->out[0], c->stream);
}

static int divergence_cpu(const gl_operands_call *c) {
  return glcpu_divergence((size_t)c->in_size[0], c->in[0], c->in[1], scalar_of(c), c->out[0]);
}

static const gl_operands_op divergence_op = {.ladder = &gl_ladder_divergence,
                                             .n_in = 2,
                                             .in = {{"x", -1}, {"key", -1, GL_DT(GLC_I32)}},
                                             .dtypes = GL_DT(GLC_F32),
                                             .n_out = 1,
                                             .configure = gl_operands_configure_block,
                                             .outputs = divergence_outputs,
                                             .run_cuda = divergence_cuda,
                                             .run_cpu = divergence_cpu,
                                             .skip_empty = 1,
                                             .check_before_gpu = 1,
                                             .copy_misaligned = 1};

/* divergence(x, key, iterations, variant, stream, block), all positional. */
static PyObject *py_divergence(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 6)
    return PyErr_Format(PyExc_TypeError, "_core.divergence takes 6 positional arguments");
  concept_params p = {{args[5], 0}, 0};
  if (int_in_range(args[2], "iterations", 0, GLC_DIVERGENCE_MAX_ITERATIONS, &p.scalar) < 0)
    return NULL;
  return gl_operands_run(&divergence_op, args, args[3], args[4], &p);
}

/* ---- warp_reduce ---- */

static int warp_reduce_block(const gl_operands_call *c) {
  return c->variant->backend == GL_BACKEND_CUDA ? block_of(c) : GLC_WARP_REDUCE_CPU_BLOCK;
}

static int warp_reduce_outputs(gl_operands_call *c) {
  const size_t block = (size_t)warp_reduce_block(c), n = (size_t)c->in_size[0];
  c->out_ndim[0] = 2;
  c->out_shape[0][0] = 2;
  c->out_shape[0][1] = (Py_ssize_t)(n / block + (n % block != 0));
  c->out_type[0] = NPY_INT32;
  return 0;
}

static int warp_reduce_cuda(const gl_operands_call *c) {
  int *sums = c->out[0];
  return glc_warp_reduce(c->variant->id, block_of(c), (size_t)c->in_size[0], c->in[0], scalar_of(c),
                         sums, sums + c->out_shape[0][1], c->stream);
}

static int warp_reduce_cpu(const gl_operands_call *c) {
  int *sums = c->out[0];
  return glcpu_warp_reduce((size_t)c->in_size[0], c->in[0], sums, sums + c->out_shape[0][1]);
}

static const gl_operands_op warp_reduce_op = {.ladder = &gl_ladder_warp_reduce,
                                              .n_in = 1,
                                              .in = {{"x", -1}},
                                              .dtypes = GL_DT(GLC_I32),
                                              .n_out = 1,
                                              .configure = gl_operands_configure_block,
                                              .outputs = warp_reduce_outputs,
                                              .run_cuda = warp_reduce_cuda,
                                              .run_cpu = warp_reduce_cpu,
                                              .skip_empty = 1,
                                              .check_before_gpu = 1,
                                              .copy_misaligned = 1};

/* warp_reduce(x, trials, variant, stream, block), all positional. */
static PyObject *py_warp_reduce(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 5)
    return PyErr_Format(PyExc_TypeError, "_core.warp_reduce takes 5 positional arguments");
  concept_params p = {{args[4], 0}, 0};
  if (int_in_range(args[1], "trials", 1, GLC_WARP_REDUCE_MAX_TRIALS, &p.scalar) < 0) return NULL;
  return gl_operands_run(&warp_reduce_op, args, args[2], args[3], &p);
}

/* ---- counter ---- */

static int counter_outputs(gl_operands_call *c) {
  c->out_ndim[0] = 0;
  c->out_type[0] = NPY_INT64;
  return 0;
}

static int counter_empty(const gl_operands_call *c) {
  (void)c; /* the value starts zeroed: nothing counted */
  return 0;
}

static int counter_cuda(const gl_operands_call *c) {
  return glc_counter(c->variant->id, block_of(c), (size_t)c->in_size[0], c->in[0], c->out[0],
                     c->stream);
}

static int counter_cpu(const gl_operands_call *c) {
  return glcpu_counter(c->variant->id, (size_t)c->in_size[0], c->in[0], c->out[0]);
}

static const gl_operands_op counter_op = {.ladder = &gl_ladder_counter,
                                          .n_in = 1,
                                          .in = {{"x", -1, .flat = 1}},
                                          .dtypes = GL_DT(GLC_I32),
                                          .n_out = 1,
                                          .configure = gl_operands_configure_block,
                                          .outputs = counter_outputs,
                                          .run_cuda = counter_cuda,
                                          .run_cpu = counter_cpu,
                                          .alike = 1,
                                          .scalar = 1,
                                          .empty = counter_empty,
                                          .check_before_gpu = 1,
                                          .copy_misaligned = 1,
                                          .small_calls = 1};

/* counter(x, variant, stream, block), all positional. */
static PyObject *py_counter(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 4)
    return PyErr_Format(PyExc_TypeError, "_core.counter takes 4 positional arguments");
  concept_params p = {{args[3], 0}, 0};
  return gl_operands_run(&counter_op, args, args[1], args[2], &p);
}

/* ---- sin ---- */

static int sin_cuda(const gl_operands_call *c) {
  return glc_sin(c->variant->id, block_of(c), (size_t)c->in_size[0], c->in[0], c->out[0],
                 c->stream);
}

static int sin_cpu(const gl_operands_call *c) {
  return glcpu_sin((size_t)c->in_size[0], c->in[0], c->out[0]);
}

static const gl_operands_op sin_op = {.ladder = &gl_ladder_sin,
                                      .n_in = 1,
                                      .in = {{"x", -1}},
                                      .dtypes = GL_DT(GLC_F32),
                                      .n_out = 1,
                                      .configure = gl_operands_configure_block,
                                      .outputs = gl_operands_outputs_like_first,
                                      .run_cuda = sin_cuda,
                                      .run_cpu = sin_cpu,
                                      .alike = 1,
                                      .skip_empty = 1,
                                      .check_before_gpu = 1,
                                      .copy_misaligned = 1,
                                      .small_calls = 1};

/* sin(x, variant, out, stream, block), all positional. */
static PyObject *py_sin(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 5) return PyErr_Format(PyExc_TypeError, "_core.sin takes 5 positional arguments");
  concept_params p = {{args[4], 0}, 0};
  return gl_operands_run_out(&sin_op, args, args[2], args[1], args[3], &p);
}

/* ---- lookup ---- */

static int lookup_outputs(gl_operands_call *c) {
  if (c->in_size[0] > GLC_LOOKUP_MAX_TABLE) {
    PyErr_Format(PyExc_ValueError,
                 "table has %zd entries; at most %d fit the __constant__ table (32 KiB)",
                 c->in_size[0], GLC_LOOKUP_MAX_TABLE);
    return -1;
  }
  if (c->in_size[0] == 0 && c->in_size[1] != 0) {
    PyErr_Format(PyExc_ValueError, "table is empty; there is nothing to look idx up in");
    return -1;
  }
  same_shape_result(c, 1, NPY_FLOAT32);
  return 0;
}

static int lookup_cuda(const gl_operands_call *c) {
  return glc_lookup(c->variant->id, block_of(c), (size_t)c->in_size[0], c->in[0],
                    (size_t)c->in_size[1], c->in[1], c->out[0], c->stream);
}

static int lookup_cpu(const gl_operands_call *c) {
  return glcpu_lookup((size_t)c->in_size[0], c->in[0], (size_t)c->in_size[1], c->in[1], c->out[0]);
}

static const gl_operands_op lookup_op = {.ladder = &gl_ladder_lookup,
                                         .n_in = 2,
                                         .in = {{"table", 1}, {"idx", -1, GL_DT(GLC_I32)}},
                                         .dtypes = GL_DT(GLC_F32),
                                         .n_out = 1,
                                         .configure = gl_operands_configure_block,
                                         .outputs = lookup_outputs,
                                         .run_cuda = lookup_cuda,
                                         .run_cpu = lookup_cpu,
                                         .skip_empty = 1,
                                         .check_before_gpu = 1,
                                         .copy_misaligned = 1};

/* lookup(table, idx, variant, stream, block), all positional. */
static PyObject *py_lookup(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 5) return PyErr_Format(PyExc_TypeError, "_core.lookup takes 5 positional arguments");
  concept_params p = {{args[4], 0}, 0};
  return gl_operands_run(&lookup_op, args, args[2], args[3], &p);
}

/* ---- the constants the Python side and the references share with the kernels ---- */

static PyObject *py_constants(PyObject *m, PyObject *unused) {
  return Py_BuildValue("{s:((ff)(ff)(ff)(ff)),s:i,s:i,s:i,s:i}", "divergence_paths",
                       GLC_DIVERGENCE_SCALE_0, GLC_DIVERGENCE_SHIFT_0, GLC_DIVERGENCE_SCALE_1,
                       GLC_DIVERGENCE_SHIFT_1, GLC_DIVERGENCE_SCALE_2, GLC_DIVERGENCE_SHIFT_2,
                       GLC_DIVERGENCE_SCALE_3, GLC_DIVERGENCE_SHIFT_3, "max_iterations",
                       GLC_DIVERGENCE_MAX_ITERATIONS, "max_trials", GLC_WARP_REDUCE_MAX_TRIALS,
                       "max_table", GLC_LOOKUP_MAX_TABLE, "cpu_block", GLC_WARP_REDUCE_CPU_BLOCK);
}

static PyMethodDef concepts_methods[] = {
    {"divergence", (PyCFunction)(void (*)(void))py_divergence, METH_FASTCALL,
     "divergence(x, key, iterations, variant, stream, block): out = path[key & 3](x)."},
    {"warp_reduce", (PyCFunction)(void (*)(void))py_warp_reduce, METH_FASTCALL,
     "warp_reduce(x, trials, variant, stream, block): (2, blocks) int32: last sums, wrong counts."},
    {"counter", (PyCFunction)(void (*)(void))py_counter, METH_FASTCALL,
     "counter(x, variant, stream, block): one global counter incremented per non-zero element."},
    {"sin", (PyCFunction)(void (*)(void))py_sin, METH_FASTCALL,
     "sin(x, variant, out, stream, block): float32 sine."},
    {"lookup", (PyCFunction)(void (*)(void))py_lookup, METH_FASTCALL,
     "lookup(table, idx, variant, stream, block): np.take(table, idx, mode='clip')."},
    {"_concepts_constants", py_constants, METH_NOARGS,
     "The concepts lab's constants: divergence paths (scale, shift) and limits."},
    {NULL}};

static const gl_ladder *const concepts_ladders[] = {&gl_ladder_divergence, &gl_ladder_warp_reduce,
                                                    &gl_ladder_counter,    &gl_ladder_sin,
                                                    &gl_ladder_lookup,     NULL};

const gl_lab gl_lab_module_concepts = {
    .name = "concepts", .ladders = concepts_ladders, .methods = concepts_methods};
