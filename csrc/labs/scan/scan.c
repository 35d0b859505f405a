/* The scan lab's bindings: scan, compact and nonzero, on the core's placement
 * (csrc/core/operands.h). scan's result has x's length (x flattened); compact's and nonzero's
 * length is known only after the run: they are counted outputs, so that their device path waits for
 * the count (as torch.masked_select does) and returns an array of exactly that length. */
#include "cpu.h"
#include "csrc/core/args.h"
#include "csrc/core/operands.h"
#include "cuda/scan/scan.h"
#include "variants.h"

/* ---- scan ---- */

typedef struct {
  gl_operands_block block;
  int inclusive;
} scan_params;

/* NumPy's cumsum: int32 sums are int64; everything else keeps its dtype. */
static int scan_result_type(int dtype, int mode) {
  switch (dtype) {
    case GLC_F32:
      return NPY_FLOAT32;
    case GLC_F64:
      return NPY_FLOAT64;
    case GLC_I32:
      return mode == GLC_SCAN_SUM ? NPY_INT64 : NPY_INT32;
    default:
      return NPY_INT64;
  }
}

/* x's length, flattened; the one-block variants' limit. */
static int scan_outputs(gl_operands_call *c) {
  const int id = c->variant->id;
  const size_t n = (size_t)c->in_size[0];
  if ((id == GLC_SCAN_HILLIS_STEELE || id == GLC_SCAN_BLELLOCH) &&
      c->variant->backend == GL_BACKEND_CUDA && n > GLC_SCAN_ONE_BLOCK_MAX) {
    PyErr_Format(PyExc_ValueError,
                 "x: variant %d (%s) scans in one block, up to %llu elements; x has %zu (pick a "
                 "multi-block variant)",
                 id, c->variant->name, (unsigned long long)GLC_SCAN_ONE_BLOCK_MAX, n);
    return -1;
  }
  c->out_ndim[0] = 1;
  c->out_shape[0][0] = c->in_size[0];
  c->out_type[0] = scan_result_type(c->dtype, c->mode);
  return 0;
}

static int scan_cuda(const gl_operands_call *c) {
  const scan_params *p = c->params;
  return glc_scan(c->variant->id, p->block.value, c->mode, p->inclusive, c->dtype,
                  (size_t)c->in_size[0], c->in[0], c->out[0], c->stream);
}

static int scan_cpu(const gl_operands_call *c) {
  const scan_params *p = c->params;
  return glcpu_scan(c->variant->id, c->mode, p->inclusive, c->dtype, (size_t)c->in_size[0],
                    c->in[0], c->out[0]);
}

static const gl_operands_op scan_op = {.ladder = &gl_ladder_scan,
                                       .n_in = 1,
                                       .in = {{"x", -1, .flat = 1}},
                                       .dtypes = SCAN_DTYPES,
                                       .n_out = 1,
                                       .configure = gl_operands_configure_block,
                                       .outputs = scan_outputs,
                                       .run_cuda = scan_cuda,
                                       .run_cpu = scan_cpu,
                                       .skip_empty = 1,
                                       .check_before_gpu = 1,
                                       .copy_misaligned = 1};

/* scan(x, op, inclusive, variant, stream, block), all positional. */
static PyObject *py_scan(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 6) return PyErr_Format(PyExc_TypeError, "_core.scan takes 6 positional arguments");
  if (!PyBool_Check(args[2]))
    return PyErr_Format(PyExc_TypeError, "inclusive must be True or False, not %s",
                        Py_TYPE(args[2])->tp_name);
  scan_params p = {{args[5], 0}, args[2] == Py_True};
  return gl_operands_run_mode(&scan_op, args, args[1], args[3], args[4], &p);
}

/* ---- compact and nonzero ---- */

/* Capacity: x's length (flattened). */
static int select_outputs(gl_operands_call *c, int npy_type) {
  c->out_ndim[0] = 1;
  c->out_shape[0][0] = c->in_size[0];
  c->out_type[0] = npy_type;
  return 0;
}

static int compact_outputs(gl_operands_call *c) {
  static const int types[] = {NPY_FLOAT32, NPY_FLOAT64, NPY_INT32, NPY_INT64};
  return select_outputs(c, types[c->dtype]);
}

static int compact_masked_outputs(gl_operands_call *c) {
  if (gl_check_same_shape(c->in_ndim[0], c->shape[0], c->in_ndim[1], c->shape[1], "x", "mask") < 0)
    return -1;
  return compact_outputs(c);
}

static int nonzero_outputs(gl_operands_call *c) { return select_outputs(c, NPY_INT64); }

/* compact's mask (input 1), NULL without one: x != 0 is kept. */
static const unsigned char *mask_of(const gl_operands_call *c) { return c->in[1]; }

static int compact_cuda(const gl_operands_call *c) {
  return glc_compact(c->variant->id, c->dtype, (size_t)c->in_size[0], c->in[0], mask_of(c),
                     c->out[0], c->count, c->stream);
}

static int compact_cpu(const gl_operands_call *c) {
  return glcpu_compact(c->variant->id, c->dtype, (size_t)c->in_size[0], c->in[0], mask_of(c),
                       c->out[0], c->count);
}

/* With a mask, its kept bytes are counted first (glc_count_true: n bytes read, a tenth of what
 * the compaction moves at 4-byte elements), so that the variant writes straight into a result
 * of exactly that length: no second copy of the kept elements. */
static int count_mask(const gl_operands_call *c) {
  return glc_count_true((size_t)c->in_size[1], c->in[1], c->count, c->stream);
}

static int nonzero_cuda(const gl_operands_call *c) {
  return glc_nonzero(c->variant->id, c->dtype, (size_t)c->in_size[0], c->in[0], c->out[0], c->count,
                     c->stream);
}

static int nonzero_cpu(const gl_operands_call *c) {
  return glcpu_nonzero(c->variant->id, c->dtype, (size_t)c->in_size[0], c->in[0], c->out[0],
                       c->count);
}

static const gl_operands_op compact_op = {.ladder = &gl_ladder_compact,
                                          .n_in = 1,
                                          .in = {{"x", -1, .flat = 1}},
                                          .dtypes = SCAN_DTYPES,
                                          .n_out = 1,
                                          .outputs = compact_outputs,
                                          .run_cuda = compact_cuda,
                                          .run_cpu = compact_cpu,
                                          .skip_empty = 1,
                                          .check_before_gpu = 1,
                                          .copy_misaligned = 1,
                                          .counted = 1};
static const gl_operands_op compact_masked_op = {.ladder = &gl_ladder_compact,
                                                 .n_in = 2,
                                                 .in = {{"x", -1}, {"mask", -1, .boolean = 1}},
                                                 .dtypes = SCAN_DTYPES,
                                                 .n_out = 1,
                                                 .outputs = compact_masked_outputs,
                                                 .run_cuda = compact_cuda,
                                                 .run_cpu = compact_cpu,
                                                 .skip_empty = 1,
                                                 .check_before_gpu = 1,
                                                 .copy_misaligned = 1,
                                                 .counted = 1,
                                                 .count_first = count_mask};
static const gl_operands_op nonzero_op = {.ladder = &gl_ladder_nonzero,
                                          .n_in = 1,
                                          .in = {{"x", -1, .flat = 1}},
                                          .dtypes = SCAN_DTYPES,
                                          .n_out = 1,
                                          .outputs = nonzero_outputs,
                                          .run_cuda = nonzero_cuda,
                                          .run_cpu = nonzero_cpu,
                                          .skip_empty = 1,
                                          .check_before_gpu = 1,
                                          .copy_misaligned = 1,
                                          .counted = 1};

/* compact(x, mask, variant, stream) and nonzero(x, variant, stream), all positional; mask None
 * keeps x != 0. */
static PyObject *py_compact(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 4)
    return PyErr_Format(PyExc_TypeError, "_core.compact takes 4 positional arguments");
  return gl_operands_run(args[1] == Py_None ? &compact_op : &compact_masked_op, args, args[2],
                         args[3], NULL);
}

static PyObject *py_nonzero(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 3)
    return PyErr_Format(PyExc_TypeError, "_core.nonzero takes 3 positional arguments");
  return gl_operands_run(&nonzero_op, args, args[1], args[2], NULL);
}

static PyMethodDef scan_methods[] = {
    {"scan", (PyCFunction)(void (*)(void))py_scan, METH_FASTCALL,
     "scan(x, op, inclusive, variant, stream, block): prefix sum, max or min of x."},
    {"compact", (PyCFunction)(void (*)(void))py_compact, METH_FASTCALL,
     "compact(x, mask, variant, stream): the elements of x where mask (or x != 0), in order."},
    {"nonzero", (PyCFunction)(void (*)(void))py_nonzero, METH_FASTCALL,
     "nonzero(x, variant, stream): the indices (int64) where x != 0."},
    {NULL}};

static const gl_ladder *const scan_ladders[] = {&gl_ladder_scan, &gl_ladder_compact,
                                                &gl_ladder_nonzero, NULL};

const gl_lab gl_lab_module_scan = {
    .name = "scan", .ladders = scan_ladders, .methods = scan_methods};
