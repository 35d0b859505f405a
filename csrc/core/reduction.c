/* The ways a reduction can run: CPU on NumPy, CUDA on NumPy (copied in, one value copied
 * back), CUDA on device arrays (asynchronous, a 0-d DeviceArray), and the refused one, CPU on
 * device arrays. */
#include "reduction.h"

#include "args.h"
#include "devarray.h"
#include "errors.h"
#include "interop.h"
#include "runtime.h"
#include "stream.h"
#include "transfer.h"

/* Below this many elements a CPU variant keeps the GIL: releasing it costs more. */
#define GL_CPU_RELEASE_GIL_MIN (1 << 16)
/* Room for one result value of any dtype. */
#define GL_RD_VALUE_BYTES 16

/* Checks the dtype and size of input i against the first, and the mode against the variant. */
static int check_input(const gl_rd_op *op, gl_rd_call *call, int i, PyArray_Descr *first,
                       PyArray_Descr *d, Py_ssize_t first_size, Py_ssize_t size) {
  if (i == 0) {
    if (gl_check_dtype_in(d, op->dtypes, op->input_names[0]) < 0) return -1;
    call->dtype = gl_dtype_code(d);
    call->size = (size_t)size;
    return op->ladder->modes
               ? gl_check_mode_support(op->ladder, call->variant, call->mode, call->dtype)
               : 0;
  }
  if (!PyArray_EquivTypes(first, d)) {
    PyErr_Format(PyExc_TypeError, "%s has dtype %S; expected %S like %s", op->input_names[i],
                 (PyObject *)d, (PyObject *)first, op->input_names[0]);
    return -1;
  }
  if (size != first_size) {
    PyErr_Format(PyExc_ValueError, "%s and %s must have the same length, got %zd and %zd",
                 op->input_names[0], op->input_names[i], first_size, size);
    return -1;
  }
  return 0;
}

typedef struct {
  const gl_rd_op *op;
  gl_rd_call *call;
} small_ctx;

static int run_small(void *ctx, void *const *dev_in, void *dev_out) {
  small_ctx *c = ctx;
  for (int i = 0; i < c->op->n_inputs; i++) c->call->in[i] = dev_in[i];
  c->call->result = dev_out;
  return c->op->run_cuda(c->call);
}

/* Large NumPy operands: device copies of the inputs, the value back through a device slot. */
static int run_copied(const gl_rd_op *op, PyArrayObject *const *host_in, gl_rd_call *call,
                      void *host_value, size_t value_bytes) {
  const int n = op->n_inputs;
  const size_t bytes = (size_t)PyArray_NBYTES(host_in[0]);
  const Py_ssize_t length = (Py_ssize_t)call->size, slot_bytes = (Py_ssize_t)value_bytes;
  gl_DeviceArrayObject *dev[GL_RD_MAX_INPUTS + 1] = {NULL};
  PyArray_Descr *byte = PyArray_DescrFromType(NPY_UINT8);
  int ok = byte != NULL;
  for (int i = 0; ok && i < n; i++) {
    ok = (dev[i] = gl_devarray_empty(1, &length, PyArray_DESCR(host_in[i]), call->stream, NULL)) !=
         NULL;
    if (ok) call->in[i] = dev[i]->ptr;
  }
  if (ok) ok = (dev[n] = gl_devarray_empty(1, &slot_bytes, byte, call->stream, NULL)) != NULL;
  if (ok) {
    int code = 0;
    call->result = dev[n]->ptr;
    Py_BEGIN_ALLOW_THREADS
    for (int i = 0; !code && i < n; i++)
      code = gl_h2d(dev[i]->ptr, PyArray_DATA(host_in[i]), bytes, call->stream, GL_PATH_AUTO);
    if (!code) code = op->run_cuda(call);
    if (!code) code = gl_d2h(host_value, dev[n]->ptr, value_bytes, call->stream, GL_PATH_AUTO);
    Py_END_ALLOW_THREADS
    if (code) ok = gl_raise_cuda(code) != NULL;
  }
  for (int i = 0; i <= n; i++) Py_XDECREF(dev[i]);
  Py_XDECREF(byte);
  return ok ? 0 : -1;
}

/* CUDA variant on NumPy operands: copy in, run, copy the value back into host_value. Small
 * inputs go through gl_small_call (pinned, mapped memory), large ones through device copies. */
static int run_staged(const gl_rd_op *op, PyArrayObject *const *host_in, PyObject *stream_obj,
                      gl_rd_call *call, void *host_value, size_t value_bytes) {
  PyObject *keep = NULL;
  if (gl_stream_arg(stream_obj, &call->stream, &keep) < 0) return -1;
  const size_t bytes = (size_t)PyArray_NBYTES(host_in[0]);
  int rc = 0;
  if (gl_small_call_fits(op->n_inputs, bytes, value_bytes)) {
    const void *src[GL_RD_MAX_INPUTS];
    for (int i = 0; i < op->n_inputs; i++) src[i] = PyArray_DATA(host_in[i]);
    small_ctx ctx = {op, call};
    int code;
    Py_BEGIN_ALLOW_THREADS
    code = gl_small_call(op->n_inputs, src, bytes, host_value, value_bytes, call->stream, run_small,
                         &ctx);
    Py_END_ALLOW_THREADS
    if (code) rc = gl_raise_cuda(code) ? 0 : -1;
  } else {
    rc = run_copied(op, host_in, call, host_value, value_bytes);
  }
  Py_XDECREF(keep);
  return rc;
}

static int run_cpu(const gl_rd_op *op, gl_rd_call *call) {
  int rc;
  if (call->size >= GL_CPU_RELEASE_GIL_MIN) {
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

static PyObject *run_on_host(const gl_rd_op *op, PyObject *const *inputs, PyObject *stream_obj,
                             gl_rd_call *call) {
  PyArrayObject *in[GL_RD_MAX_INPUTS];
  for (int i = 0; i < op->n_inputs; i++) {
    if (gl_check_host_array(inputs[i], op->input_names[i], -1, 0) < 0) return NULL;
    in[i] = (PyArrayObject *)inputs[i];
    if (check_input(op, call, i, PyArray_DESCR(in[0]), PyArray_DESCR(in[i]), PyArray_SIZE(in[0]),
                    PyArray_SIZE(in[i])) < 0)
      return NULL;
  }
  if (call->variant->backend == GL_BACKEND_CUDA && gl_require_gpu(op->ladder->op) < 0) return NULL;
  PyArray_Descr *descr = PyArray_DescrFromType(op->result_type(call->dtype, call->mode));
  if (!descr) return NULL;
  const size_t value_bytes = (size_t)PyDataType_ELSIZE(descr);
  _Alignas(16) char value[GL_RD_VALUE_BYTES] = {0};
  int failed;
  call->result = value;
  if (call->size == 0) {
    failed = op->empty(call) < 0;
  } else if (call->variant->backend == GL_BACKEND_CUDA) {
    failed = run_staged(op, in, stream_obj, call, value, value_bytes) < 0;
  } else {
    for (int i = 0; i < op->n_inputs; i++) call->in[i] = PyArray_DATA(in[i]);
    failed = run_cpu(op, call) < 0;
  }
  PyObject *scalar = failed ? NULL : PyArray_Scalar(value, descr, NULL);
  Py_DECREF(descr);
  return scalar;
}

static PyObject *run_on_device(const gl_rd_op *op, PyObject *const *inputs, PyObject *stream_obj,
                               gl_rd_call *call) {
  if (gl_require_gpu(op->ladder->op) < 0) return NULL;
  PyObject *keep = NULL;
  if (gl_stream_arg(stream_obj, &call->stream, &keep) < 0) return NULL;
  gl_DeviceArrayObject *in[GL_RD_MAX_INPUTS] = {NULL}, *out = NULL;
  PyArray_Descr *descr = NULL;
  int ok = 1;
  for (int i = 0; ok && i < op->n_inputs; i++) {
    in[i] = gl_as_device_array(inputs[i], op->input_names[i], call->stream);
    ok = in[i] && gl_check_device_array(in[i], op->input_names[i], -1, 0) == 0 &&
         check_input(op, call, i, in[0]->dtype, in[i]->dtype, in[0]->size, in[i]->size) == 0;
  }
  if (ok) ok = (descr = PyArray_DescrFromType(op->result_type(call->dtype, call->mode))) != NULL;
  if (ok) ok = (out = gl_devarray_empty(0, NULL, descr, call->stream, keep)) != NULL;
  if (ok && call->size == 0) {
    _Alignas(16) char value[GL_RD_VALUE_BYTES] = {0};
    call->result = value;
    ok = op->empty(call) == 0;
    int code = ok ? gl_h2d(out->ptr, value, (size_t)out->nbytes, call->stream, GL_PATH_AUTO) : 0;
    if (code) ok = gl_raise_cuda(code) != NULL;
  } else if (ok) {
    for (int i = 0; i < op->n_inputs; i++) call->in[i] = in[i]->ptr;
    call->result = out->ptr;
    int code = op->run_cuda(call);
    if (code) ok = gl_raise_cuda(code) != NULL;
  }
  if (ok) {
    for (int i = 0; i < op->n_inputs; i++) gl_devarray_use(in[i], call->stream, keep);
    gl_devarray_use(out, call->stream, keep);
  }
  for (int i = 0; i < op->n_inputs; i++) Py_XDECREF(in[i]);
  Py_XDECREF(descr);
  Py_XDECREF(keep);
  if (!ok) Py_CLEAR(out);
  return (PyObject *)out;
}

PyObject *gl_rd_run(const gl_rd_op *op, PyObject *const *inputs, PyObject *mode, PyObject *variant,
                    PyObject *stream, PyObject *block) {
  int on_device = 0;
  if (gl_classify_operands(op->n_inputs, inputs, op->input_names, &on_device) < 0) return NULL;
  gl_rd_call call = {0};
  if (op->ladder->modes && gl_resolve_mode(op->ladder, mode, &call.mode) < 0) return NULL;
  call.variant = gl_resolve_variant(op->ladder, variant, on_device || gl_gpu_ready());
  if (!call.variant || gl_resolve_tunable(call.variant, "block", block, &call.block) < 0)
    return NULL;
  if (call.variant->backend == GL_BACKEND_CPU && stream != Py_None)
    return PyErr_Format(PyExc_ValueError, "stream: variant %d (%s) runs on the CPU",
                        call.variant->id, call.variant->name);
  if (!on_device) return run_on_host(op, inputs, stream, &call);
  if (call.variant->backend == GL_BACKEND_CPU)
    return PyErr_Format(PyExc_TypeError,
                        "variant %d (%s) runs on the CPU and takes NumPy arrays, but %s is a "
                        "device array; pick a CUDA variant or pass NumPy arrays",
                        call.variant->id, call.variant->name, op->input_names[0]);
  return run_on_device(op, inputs, stream, &call);
}
