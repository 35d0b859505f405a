/* The four ways an op of several arrays runs (operands.h). */
#include "operands.h"

#include "args.h"
#include "devarray.h"
#include "errors.h"
#include "interop.h"
#include "runtime.h"
#include "stream.h"
#include "transfer.h"

/* Below this many elements in and out, a CPU variant keeps the GIL: releasing it costs more. */
#define GL_OPERANDS_RELEASE_GIL_MIN (1 << 16)

/* The variant, its tunables and where it runs; refuses a CPU variant with a stream or on device
 * arrays, and a CUDA variant without a GPU. */
static int resolve(const gl_operands_op *op, PyObject *const *inputs, PyObject *variant,
                   PyObject *stream, gl_operands_call *call, int *on_device) {
  const char *names[GL_OPERANDS_MAX];
  for (int i = 0; i < op->n_in; i++) names[i] = op->in[i].name;
  if (gl_classify_operands(op->n_in, inputs, names, on_device) < 0) return -1;
  call->variant = gl_resolve_variant(op->ladder, variant, *on_device || gl_gpu_ready());
  if (!call->variant || (op->configure && op->configure(call) < 0)) return -1;
  const gl_variant *v = call->variant;
  if (v->backend == GL_BACKEND_CPU && stream != Py_None) {
    PyErr_Format(PyExc_ValueError, "stream: variant %d (%s) runs on the CPU", v->id, v->name);
    return -1;
  }
  if (*on_device && v->backend == GL_BACKEND_CPU) {
    PyErr_Format(PyExc_TypeError,
                 "variant %d (%s) runs on the CPU and takes NumPy arrays, but %s is a device "
                 "array; pick a CUDA variant or pass NumPy arrays",
                 v->id, v->name, op->in[0].name);
    return -1;
  }
  if (v->backend == GL_BACKEND_CUDA && gl_require_gpu(op->ladder->op) < 0) return -1;
  return 0;
}

/* Input i's dtype (the first one's from the op's and variant's dtypes, an input with dtypes of
 * its own one of those, the others the first's), shape and alignment, recorded in call. */
static int check_input(const gl_operands_op *op, int i, int ndim, const Py_ssize_t *shape,
                       PyArray_Descr *dtype, const void *ptr, gl_operands_call *call) {
  const char *name = op->in[i].name;
  int itemsize = call->itemsize;
  if (i > 0 && op->in[i].dtypes) {
    if (gl_check_dtype_in(dtype, op->in[i].dtypes, name) < 0) return -1;
    call->in_dtype[i] = gl_dtype_code(dtype);
    itemsize = (int)PyDataType_ELSIZE(dtype);
  } else if (i == 0) {
    const unsigned both = op->dtypes & call->variant->dtypes;
    if (gl_check_dtype_in(dtype, both ? both : op->dtypes, name) < 0) return -1;
    call->dtype = gl_dtype_code(dtype);
    call->itemsize = itemsize = (int)PyDataType_ELSIZE(dtype);
    call->in_dtype[0] = call->dtype;
  } else if (gl_dtype_code(dtype) != call->dtype) {
    PyErr_Format(PyExc_TypeError, "%s must have %s's dtype %s, got %S", name, op->in[0].name,
                 gl_dtype_name(call->dtype), (PyObject *)dtype);
    return -1;
  } else {
    call->in_dtype[i] = call->dtype;
  }
  Py_ssize_t size = 1;
  call->in_ndim[i] = ndim;
  for (int d = 0; d < ndim; d++) {
    call->shape[i][d] = shape[d];
    size *= shape[d];
  }
  call->in[i] = ptr;
  if (size && (uintptr_t)ptr % (uintptr_t)itemsize) {
    PyErr_Format(PyExc_ValueError, "%s is not aligned to its %d-byte elements", name, itemsize);
    return -1;
  }
  return 0;
}

static Py_ssize_t output_size(const gl_operands_call *call, int o) {
  Py_ssize_t size = 1;
  for (int d = 0; d < call->out_ndim[o]; d++) size *= call->out_shape[o][d];
  return size;
}

/* The outputs as one object: the array, or a tuple of them. Steals the references. */
static PyObject *pack(int n_out, PyObject **outs) {
  if (n_out == 1) return outs[0];
  PyObject *t = PyTuple_New(n_out);
  for (int o = 0; o < n_out; o++) {
    if (t)
      PyTuple_SET_ITEM(t, o, outs[o]);
    else
      Py_DECREF(outs[o]);
  }
  return t;
}

static PyObject *run_on_device(const gl_operands_op *op, PyObject *const *inputs,
                               PyObject *stream_obj, gl_operands_call *call) {
  PyObject *keep = NULL;
  if (gl_stream_arg(stream_obj, &call->stream, &keep) < 0) return NULL;
  gl_DeviceArrayObject *in[GL_OPERANDS_MAX] = {NULL}, *out[GL_OPERANDS_MAX] = {NULL};
  int ok = 1;
  for (int i = 0; ok && i < op->n_in; i++) {
    in[i] = gl_as_device_array(inputs[i], op->in[i].name, call->stream);
    ok = in[i] && gl_check_device_array(in[i], op->in[i].name, op->in[i].ndim, 0) == 0 &&
         check_input(op, i, in[i]->ndim, in[i]->shape, in[i]->dtype, in[i]->ptr, call) == 0;
  }
  ok = ok && op->outputs(call) == 0;
  for (int o = 0; ok && o < op->n_out; o++) {
    PyArray_Descr *descr = PyArray_DescrFromType(call->out_type[o]);
    out[o] =
        descr ? gl_devarray_empty(call->out_ndim[o], call->out_shape[o], descr, call->stream, keep)
              : NULL;
    Py_XDECREF(descr);
    ok = out[o] != NULL;
    if (ok) call->out[o] = out[o]->ptr;
  }
  if (ok) {
    int code = op->run_cuda(call);
    if (code) ok = gl_raise_cuda(code) != NULL;
  }
  if (ok) {
    for (int i = 0; i < op->n_in; i++) gl_devarray_use(in[i], call->stream, keep);
    for (int o = 0; o < op->n_out; o++) gl_devarray_use(out[o], call->stream, keep);
  }
  for (int i = 0; i < op->n_in; i++) Py_XDECREF(in[i]);
  Py_XDECREF(keep);
  if (!ok) {
    for (int o = 0; o < op->n_out; o++) Py_XDECREF(out[o]);
    return NULL;
  }
  return pack(op->n_out, (PyObject **)out);
}

/* A CUDA variant on NumPy arrays: device copies of the inputs, the run, the outputs copied back
 * into host_out and waited for. */
static int run_staged(const gl_operands_op *op, PyArrayObject *const *host_in,
                      PyArrayObject *const *host_out, PyObject *stream_obj,
                      gl_operands_call *call) {
  PyObject *keep = NULL;
  if (gl_stream_arg(stream_obj, &call->stream, &keep) < 0) return -1;
  gl_DeviceArrayObject *in[GL_OPERANDS_MAX] = {NULL}, *out[GL_OPERANDS_MAX] = {NULL};
  int ok = 1;
  for (int i = 0; ok && i < op->n_in; i++) {
    in[i] = gl_devarray_empty(PyArray_NDIM(host_in[i]), PyArray_SHAPE(host_in[i]),
                              PyArray_DESCR(host_in[i]), call->stream, NULL);
    ok = in[i] != NULL;
    if (ok) call->in[i] = in[i]->ptr;
  }
  for (int o = 0; ok && o < op->n_out; o++) {
    out[o] = gl_devarray_empty(PyArray_NDIM(host_out[o]), PyArray_SHAPE(host_out[o]),
                               PyArray_DESCR(host_out[o]), call->stream, NULL);
    ok = out[o] != NULL;
    if (ok) call->out[o] = out[o]->ptr;
  }
  if (ok) {
    int code = 0;
    Py_BEGIN_ALLOW_THREADS
    for (int i = 0; !code && i < op->n_in; i++)
      if (PyArray_NBYTES(host_in[i]))
        code = gl_h2d(in[i]->ptr, PyArray_DATA(host_in[i]), (size_t)PyArray_NBYTES(host_in[i]),
                      call->stream, GL_PATH_AUTO);
    if (!code) code = op->run_cuda(call);
    for (int o = 0; !code && o < op->n_out; o++)
      if (PyArray_NBYTES(host_out[o]))
        code = gl_d2h(PyArray_DATA(host_out[o]), out[o]->ptr, (size_t)PyArray_NBYTES(host_out[o]),
                      call->stream, GL_PATH_AUTO);
    Py_END_ALLOW_THREADS
    if (code) ok = gl_raise_cuda(code) != NULL;
  }
  for (int i = 0; i < op->n_in; i++) Py_XDECREF(in[i]);
  for (int o = 0; o < op->n_out; o++) Py_XDECREF(out[o]);
  Py_XDECREF(keep);
  return ok ? 0 : -1;
}

static int run_cpu(const gl_operands_op *op, gl_operands_call *call, Py_ssize_t elements) {
  int rc;
  if (elements >= GL_OPERANDS_RELEASE_GIL_MIN) {
    Py_BEGIN_ALLOW_THREADS
    rc = op->run_cpu(call);
    Py_END_ALLOW_THREADS
  } else {
    rc = op->run_cpu(call);
  }
  if (rc)
    PyErr_Format(PyExc_RuntimeError, "%s: CPU variant %d failed", op->ladder->op,
                 call->variant->id);
  return rc ? -1 : 0;
}

static PyObject *run_on_host(const gl_operands_op *op, PyObject *const *inputs,
                             PyObject *stream_obj, gl_operands_call *call) {
  PyArrayObject *in[GL_OPERANDS_MAX], *out[GL_OPERANDS_MAX] = {NULL};
  Py_ssize_t elements = 0;
  for (int i = 0; i < op->n_in; i++) {
    if (gl_check_host_array(inputs[i], op->in[i].name, op->in[i].ndim, 0) < 0) return NULL;
    in[i] = (PyArrayObject *)inputs[i];
    if (check_input(op, i, PyArray_NDIM(in[i]), PyArray_SHAPE(in[i]), PyArray_DESCR(in[i]),
                    PyArray_DATA(in[i]), call) < 0)
      return NULL;
    elements += PyArray_SIZE(in[i]);
  }
  if (op->outputs(call) < 0) return NULL;
  int ok = 1;
  for (int o = 0; ok && o < op->n_out; o++) {
    out[o] = (PyArrayObject *)PyArray_SimpleNew(call->out_ndim[o], call->out_shape[o],
                                                call->out_type[o]);
    ok = out[o] != NULL;
    if (ok) call->out[o] = PyArray_DATA(out[o]);
    elements += ok ? output_size(call, o) : 0;
  }
  if (ok)
    ok = (call->variant->backend == GL_BACKEND_CUDA ? run_staged(op, in, out, stream_obj, call)
                                                    : run_cpu(op, call, elements)) == 0;
  if (!ok) {
    for (int o = 0; o < op->n_out; o++) Py_XDECREF(out[o]);
    return NULL;
  }
  return pack(op->n_out, (PyObject **)out);
}

PyObject *gl_operands_run(const gl_operands_op *op, PyObject *const *inputs, PyObject *variant,
                          PyObject *stream, void *params) {
  gl_operands_call call = {0};
  call.params = params;
  int on_device = 0;
  if (resolve(op, inputs, variant, stream, &call, &on_device) < 0) return NULL;
  return on_device ? run_on_device(op, inputs, stream, &call)
                   : run_on_host(op, inputs, stream, &call);
}
