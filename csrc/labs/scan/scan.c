/* The scan lab's bindings (LABS.md section 7, issue 11): scan, compact and nonzero, on the lab's
 * placement (placement.h). */
#include "cpu.h"
#include "csrc/core/args.h"
#include "cuda/scan/scan.h"
#include "placement.h"
#include "variants.h"

/* ---- scan ---- */

/* NumPy's cumsum: int32 sums are int64; everything else keeps its dtype. */
static int scan_result_type(const sc_call *c) {
  switch (c->dtype) {
    case GLC_F32:
      return NPY_FLOAT32;
    case GLC_F64:
      return NPY_FLOAT64;
    case GLC_I32:
      return c->mode == GLC_SCAN_SUM ? NPY_INT64 : NPY_INT32;
    default:
      return NPY_INT64;
  }
}

static int scan_check(const sc_call *c) {
  const int id = c->variant->id;
  if ((id == GLC_SCAN_HILLIS_STEELE || id == GLC_SCAN_BLELLOCH) &&
      c->variant->backend == GL_BACKEND_CUDA && c->n > GLC_SCAN_ONE_BLOCK_MAX) {
    PyErr_Format(PyExc_ValueError,
                 "x: variant %d (%s) scans in one block, up to %llu elements; x has %zu (pick a "
                 "multi-block variant)",
                 id, c->variant->name, (unsigned long long)GLC_SCAN_ONE_BLOCK_MAX, c->n);
    return -1;
  }
  return 0;
}

static int scan_cuda(const sc_call *c) {
  return glc_scan(c->variant->id, c->block, c->mode, c->inclusive, c->dtype, c->n, c->x, c->out,
                  c->stream);
}

static int scan_cpu(const sc_call *c) {
  return glcpu_scan(c->variant->id, c->mode, c->inclusive, c->dtype, c->n, c->x, c->out);
}

static const sc_op scan_op = {.ladder = &gl_ladder_scan,
                              .result_type = scan_result_type,
                              .check = scan_check,
                              .run_cuda = scan_cuda,
                              .run_cpu = scan_cpu};

/* scan(x, op, inclusive, variant, stream, block), all positional. */
static PyObject *py_scan(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 6) return PyErr_Format(PyExc_TypeError, "_core.scan takes 6 positional arguments");
  if (!PyBool_Check(args[2]))
    return PyErr_Format(PyExc_TypeError, "inclusive must be True or False, not %s",
                        Py_TYPE(args[2])->tp_name);
  return sc_run_scan(&scan_op, args[0], args[1], args[2] == Py_True, args[3], args[4], args[5]);
}

/* ---- compact and nonzero ---- */

static int same_type(const sc_call *c) {
  static const int types[] = {NPY_FLOAT32, NPY_FLOAT64, NPY_INT32, NPY_INT64};
  return types[c->dtype];
}

static int index_type(const sc_call *c) {
  (void)c;
  return NPY_INT64;
}

static int compact_cuda(const sc_call *c) {
  return glc_compact(c->variant->id, c->dtype, c->n, c->x, c->mask, c->out, c->count, c->stream);
}

static int compact_cpu(const sc_call *c) {
  return glcpu_compact(c->variant->id, c->dtype, c->n, c->x, c->mask, c->out, c->count);
}

static int nonzero_cuda(const sc_call *c) {
  return glc_nonzero(c->variant->id, c->dtype, c->n, c->x, c->out, c->count, c->stream);
}

static int nonzero_cpu(const sc_call *c) {
  return glcpu_nonzero(c->variant->id, c->dtype, c->n, c->x, c->out, c->count);
}

static const sc_op compact_op = {.ladder = &gl_ladder_compact,
                                 .has_mask = 1,
                                 .result_type = same_type,
                                 .run_cuda = compact_cuda,
                                 .run_cpu = compact_cpu};
static const sc_op nonzero_op = {.ladder = &gl_ladder_nonzero,
                                 .result_type = index_type,
                                 .run_cuda = nonzero_cuda,
                                 .run_cpu = nonzero_cpu};

/* compact(x, mask, variant, stream) and nonzero(x, variant, stream), all positional. */
static PyObject *py_compact(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 4)
    return PyErr_Format(PyExc_TypeError, "_core.compact takes 4 positional arguments");
  return sc_run_select(&compact_op, args[0], args[1], args[2], args[3]);
}

static PyObject *py_nonzero(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 3)
    return PyErr_Format(PyExc_TypeError, "_core.nonzero takes 3 positional arguments");
  return sc_run_select(&nonzero_op, args[0], Py_None, args[1], args[2]);
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
