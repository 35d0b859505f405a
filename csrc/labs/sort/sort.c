/* The sort lab's bindings: sort, argsort and sort_pairs, on the core's placement
 * (csrc/core/operands.h). Keys are 1-D (NumPy's sort of an N-d array is along its last axis, which
 * this lab does not do); the results have the keys' length. */
#include "cpu.h"
#include "csrc/core/args.h"
#include "csrc/core/operands.h"
#include "cuda/sort/sort.h"
#include "variants.h"

typedef struct {
  PyObject *bits_arg; /* the Python `bits` argument; resolved into bits */
  int bits;
  int descending;
} sort_params;

enum sort_kind { KEYS, INDICES, PAIRS };

static int sort_configure(gl_operands_call *c) {
  sort_params *p = c->params;
  return gl_resolve_tunable(c->variant, "bits", p->bits_arg, &p->bits);
}

/* The bitonic network's and the dynamic-parallelism quicksort's limits, which they refuse on every
 * machine. */
static int check_length(const gl_operands_call *c) {
  const size_t n = (size_t)c->in_size[0];
  if (c->variant->backend == GL_BACKEND_CUDA && c->variant->id == GLC_SORT_BITONIC &&
      n > GLC_SORT_BITONIC_MAX) {
    PyErr_Format(PyExc_ValueError,
                 "keys: variant %d (%s) sorts up to %llu keys (its network grows as n log^2 n); "
                 "the keys have %zu (pick lsd_radix or cub)",
                 c->variant->id, c->variant->name, (unsigned long long)GLC_SORT_BITONIC_MAX, n);
    return -1;
  }
  if (c->variant->backend == GL_BACKEND_CUDA && c->variant->id == GLC_SORT_QUICKSORT_CDP &&
      n > GLC_SORT_QUICKSORT_CDP_MAX) {
    PyErr_Format(PyExc_ValueError,
                 "keys: variant %d (%s) sorts up to %llu keys (one block partitions the whole "
                 "input); the keys have %zu (pick lsd_radix or cub)",
                 c->variant->id, c->variant->name, (unsigned long long)GLC_SORT_QUICKSORT_CDP_MAX,
                 n);
    return -1;
  }
  return 0;
}

static void one_output(gl_operands_call *c, int o, int npy_type) {
  c->out_ndim[o] = 1;
  c->out_shape[o][0] = c->in_size[0];
  c->out_type[o] = npy_type;
}

static int npy_type_of(int dtype) {
  switch (dtype) {
    case GLC_F32:
      return NPY_FLOAT32;
    case GLC_F64:
      return NPY_FLOAT64;
    case GLC_I32:
      return NPY_INT32;
    case GLC_U32:
      return NPY_UINT32;
    default:
      return NPY_INT64;
  }
}

static int sort_outputs(gl_operands_call *c) {
  if (check_length(c) < 0) return -1;
  one_output(c, 0, npy_type_of(c->dtype));
  return 0;
}

static int argsort_outputs(gl_operands_call *c) {
  if (check_length(c) < 0) return -1;
  one_output(c, 0, NPY_INT64);
  return 0;
}

static int pairs_outputs(gl_operands_call *c) {
  if (gl_check_same_shape(c->in_ndim[0], c->shape[0], c->in_ndim[1], c->shape[1], "keys",
                          "values") < 0 ||
      check_length(c) < 0)
    return -1;
  one_output(c, 0, npy_type_of(c->dtype));
  one_output(c, 1, npy_type_of(c->in_dtype[1]));
  return 0;
}

static int value_bytes_of(int dtype) { return dtype == GLC_I64 || dtype == GLC_F64 ? 8 : 4; }

/* What every variant is given: the keys, and for argsort no keys out and no values in. */
typedef struct {
  void *keys_out;
  int value_bytes;
  const void *values;
  void *values_out;
} sort_operands;

static sort_operands operands_of(const gl_operands_call *c, enum sort_kind kind) {
  switch (kind) {
    case KEYS:
      return (sort_operands){c->out[0], 0, NULL, NULL};
    case INDICES:
      return (sort_operands){NULL, 8, NULL, c->out[0]};
    default:
      return (sort_operands){c->out[0], value_bytes_of(c->in_dtype[1]), c->in[1], c->out[1]};
  }
}

static int run_cuda(const gl_operands_call *c, enum sort_kind kind) {
  const sort_params *p = c->params;
  const sort_operands o = operands_of(c, kind);
  return glc_sort(c->variant->id, p->bits, c->dtype, p->descending, (size_t)c->in_size[0], c->in[0],
                  o.keys_out, o.value_bytes, o.values, o.values_out, c->stream);
}

static int run_cpu(const gl_operands_call *c, enum sort_kind kind) {
  const sort_params *p = c->params;
  const sort_operands o = operands_of(c, kind);
  return glcpu_sort(c->variant->id, c->dtype, p->descending, (size_t)c->in_size[0], c->in[0],
                    o.keys_out, o.value_bytes, o.values, o.values_out);
}

static int sort_cuda(const gl_operands_call *c) { return run_cuda(c, KEYS); }
static int sort_cpu(const gl_operands_call *c) { return run_cpu(c, KEYS); }
static int argsort_cuda(const gl_operands_call *c) { return run_cuda(c, INDICES); }
static int argsort_cpu(const gl_operands_call *c) { return run_cpu(c, INDICES); }
static int pairs_cuda(const gl_operands_call *c) { return run_cuda(c, PAIRS); }
static int pairs_cpu(const gl_operands_call *c) { return run_cpu(c, PAIRS); }

/* sort and argsort: one array of keys in, one array out. */
#define ONE_ARRAY_OP(ladder_, outputs_, cuda_, cpu_)                                            \
  {                                                                                             \
    .ladder = (ladder_), .n_in = 1, .in = {{"x", 1}}, .dtypes = SORT_DTYPES, .n_out = 1,        \
    .configure = sort_configure, .outputs = (outputs_), .run_cuda = (cuda_), .run_cpu = (cpu_), \
    .skip_empty = 1, .check_before_gpu = 1, .copy_misaligned = 1                                \
  }

static const gl_operands_op sort_op =
    ONE_ARRAY_OP(&gl_ladder_sort, sort_outputs, sort_cuda, sort_cpu);
static const gl_operands_op argsort_op =
    ONE_ARRAY_OP(&gl_ladder_argsort, argsort_outputs, argsort_cuda, argsort_cpu);
static const gl_operands_op pairs_op = {.ladder = &gl_ladder_sort_pairs,
                                        .n_in = 2,
                                        .in = {{"keys", 1}, {"values", 1, .dtypes = SORT_DTYPES}},
                                        .dtypes = SORT_DTYPES,
                                        .n_out = 2,
                                        .configure = sort_configure,
                                        .outputs = pairs_outputs,
                                        .run_cuda = pairs_cuda,
                                        .run_cpu = pairs_cpu,
                                        .skip_empty = 1,
                                        .check_before_gpu = 1,
                                        .copy_misaligned = 1};

static int descending_arg(PyObject *arg, int *descending) {
  if (!PyBool_Check(arg)) {
    PyErr_Format(PyExc_TypeError, "descending must be True or False, not %s",
                 Py_TYPE(arg)->tp_name);
    return -1;
  }
  *descending = arg == Py_True;
  return 0;
}

/* sort(x, descending, variant, stream, bits) and argsort(...), all positional. */
static PyObject *sort_or_argsort(const gl_operands_op *op, const char *name, PyObject *const *args,
                                 Py_ssize_t nargs) {
  if (nargs != 5)
    return PyErr_Format(PyExc_TypeError, "_core.%s takes 5 positional arguments", name);
  sort_params p = {args[4], 0, 0};
  if (descending_arg(args[1], &p.descending) < 0) return NULL;
  return gl_operands_run(op, args, args[2], args[3], &p);
}

static PyObject *py_sort(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  return sort_or_argsort(&sort_op, "sort", args, nargs);
}

static PyObject *py_argsort(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  return sort_or_argsort(&argsort_op, "argsort", args, nargs);
}

/* sort_pairs(keys, values, descending, variant, stream, bits), all positional. */
static PyObject *py_sort_pairs(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 6)
    return PyErr_Format(PyExc_TypeError, "_core.sort_pairs takes 6 positional arguments");
  sort_params p = {args[5], 0, 0};
  if (descending_arg(args[2], &p.descending) < 0) return NULL;
  return gl_operands_run(&pairs_op, args, args[3], args[4], &p);
}

static PyMethodDef sort_methods[] = {
    {"sort", (PyCFunction)(void (*)(void))py_sort, METH_FASTCALL,
     "sort(x, descending, variant, stream, bits): x's keys in order."},
    {"argsort", (PyCFunction)(void (*)(void))py_argsort, METH_FASTCALL,
     "argsort(x, descending, variant, stream, bits): the indices (int64) that sort x."},
    {"sort_pairs", (PyCFunction)(void (*)(void))py_sort_pairs, METH_FASTCALL,
     "sort_pairs(keys, values, descending, variant, stream, bits): keys in order, values with "
     "them."},
    {NULL}};

static const gl_ladder *const sort_ladders[] = {&gl_ladder_sort, &gl_ladder_argsort,
                                                &gl_ladder_sort_pairs, NULL};

const gl_lab gl_lab_module_sort = {
    .name = "sort", .ladders = sort_ladders, .methods = sort_methods};
