/* DeviceArray's side of interop: the CUDA Array Interface (v3) and DLPack export, so that CuPy,
 * PyTorch and Numba take gpulab's arrays without a copy. */
#include "devarray_export.h"

#include "args.h"
#include "dlpack.h"
#include "errors.h"
#include "runtime.h"
#include "stream.h"

/* ---- CUDA Array Interface ---- */

PyObject *gl_devarray_cai(gl_DeviceArrayObject *self, void *closure) {
  /* AttributeError, so that hasattr() is False and consumers (PyTorch) take DLPack instead */
  if (gl_dtype_code(self->dtype) == GLC_BF16)
    return PyErr_Format(PyExc_AttributeError,
                        "bfloat16 has no typestr in the CUDA Array Interface; export it through "
                        "DLPack (torch.from_dlpack)");
  gl_devarray_forget_mirror(self);
  PyObject *typestr = PyUnicode_FromFormat("%c%c%d", self->dtype->byteorder == '|' ? '|' : '<',
                                           self->dtype->kind, (int)PyDataType_ELSIZE(self->dtype));
  PyObject *shape = gl_shape_tuple(self->ndim, self->shape);
  PyObject *strides = gl_devarray_is_c_contiguous(self) ? Py_NewRef(Py_None)
                                                        : gl_shape_tuple(self->ndim, self->strides);
  PyObject *stream = self->stream ? PyLong_FromVoidPtr(self->stream) : Py_NewRef(Py_None);
  PyObject *d = NULL;
  if (typestr && shape && strides && stream)
    d = Py_BuildValue("{s:O,s:O,s:(NO),s:i,s:O,s:[(sO)],s:O}", "shape", shape, "typestr", typestr,
                      "data", PyLong_FromVoidPtr(self->ptr), self->readonly ? Py_True : Py_False,
                      "version", 3, "strides", strides, "descr", "", typestr, "stream", stream);
  Py_XDECREF(typestr);
  Py_XDECREF(shape);
  Py_XDECREF(strides);
  Py_XDECREF(stream);
  return d;
}

/* ---- DLPack export ---- */

typedef struct {
  PyObject *owner; /* the DeviceArray */
  int64_t shape[GL_MAX_NDIM];
  int64_t strides[GL_MAX_NDIM];
} export_ctx;

static void release_owner(export_ctx *ctx) {
  if (!ctx) return;
  /* Deleters may run on any thread, with or without the GIL, even at exit. */
  if (Py_IsInitialized()) {
    PyGILState_STATE g = PyGILState_Ensure();
    Py_XDECREF(ctx->owner);
    PyGILState_Release(g);
  }
  PyMem_RawFree(ctx);
}

static void delete_versioned(gl_DLManagedTensorVersioned *t) {
  release_owner((export_ctx *)t->manager_ctx);
  PyMem_RawFree(t);
}

static void delete_unversioned(gl_DLManagedTensor *t) {
  release_owner((export_ctx *)t->manager_ctx);
  PyMem_RawFree(t);
}

static void capsule_versioned_destructor(PyObject *capsule) {
  if (!PyCapsule_IsValid(capsule, "dltensor_versioned")) return; /* consumed */
  gl_DLManagedTensorVersioned *t = PyCapsule_GetPointer(capsule, "dltensor_versioned");
  if (t && t->deleter) t->deleter(t);
}

static void capsule_unversioned_destructor(PyObject *capsule) {
  if (!PyCapsule_IsValid(capsule, "dltensor")) return;
  gl_DLManagedTensor *t = PyCapsule_GetPointer(capsule, "dltensor");
  if (t && t->deleter) t->deleter(t);
}

static int fill_dltensor(gl_DeviceArrayObject *a, export_ctx *ctx, gl_DLTensor *t) {
  gl_devarray_forget_mirror(a);
  if (gl_dl_dtype_from_descr(a->dtype, &t->dtype) < 0) return -1;
  for (int i = 0; i < a->ndim; i++) {
    if (a->strides[i] % PyDataType_ELSIZE(a->dtype)) {
      PyErr_SetString(PyExc_BufferError, "strides are not a multiple of the element size");
      return -1;
    }
    ctx->shape[i] = a->shape[i];
    ctx->strides[i] = a->strides[i] / PyDataType_ELSIZE(a->dtype);
  }
  t->data = a->ptr;
  t->device.device_type = GL_DL_CUDA;
  t->device.device_id = a->device;
  t->ndim = a->ndim;
  t->shape = ctx->shape;
  t->strides = ctx->strides;
  t->byte_offset = 0;
  return 0;
}

static int wants_versioned(PyObject *max_version) {
  if (max_version == Py_None || !PyTuple_Check(max_version) || PyTuple_GET_SIZE(max_version) < 1)
    return 0;
  long major = PyLong_AsLong(PyTuple_GET_ITEM(max_version, 0));
  if (major == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return 0;
  }
  return major >= 1;
}

PyObject *gl_devarray_dlpack(gl_DeviceArrayObject *self, PyObject *args, PyObject *kwargs) {
  static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
  PyObject *stream_obj = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", kwlist, &stream_obj,
                                   &max_version, &dl_device, &copy))
    return NULL;
  if (dl_device != Py_None) {
    int type = -1, id = -1;
    if (!PyArg_ParseTuple(dl_device, "ii", &type, &id)) return NULL;
    if (type != GL_DL_CUDA || id != self->device)
      return PyErr_Format(PyExc_BufferError, "gpulab exports only to its own device (2, %d)",
                          self->device);
  }
  if (copy == Py_True)
    return PyErr_Format(PyExc_BufferError,
                        "gpulab exports without copying; copy=True is not supported");
  /* The array API's stream: None means the legacy default stream (1), -1 no ordering, any other
   * int the consumer's stream, which must be one that can exist (stream.h). */
  int ordered = 1;
  glc_stream consumer = (glc_stream)(intptr_t)1;
  if (stream_obj != Py_None) {
    if (!PyLong_Check(stream_obj))
      return PyErr_Format(PyExc_TypeError, "stream must be None or an int, not %s",
                          Py_TYPE(stream_obj)->tp_name);
    int overflow = 0;
    long long value = PyLong_AsLongLongAndOverflow(stream_obj, &overflow);
    ordered = overflow || value != -1;
    if (ordered && gl_stream_handle_arg(stream_obj, "stream", &consumer) < 0) return NULL;
  }
  if (ordered) {
    if (gl_require_gpu(NULL) < 0) return NULL;
    int code = gl_order_streams(self->stream, consumer);
    if (code) return gl_raise_cuda(code);
  }
  export_ctx *ctx = PyMem_RawCalloc(1, sizeof *ctx);
  if (!ctx) return PyErr_NoMemory();
  ctx->owner = Py_NewRef((PyObject *)self);
  PyObject *capsule = NULL;
  if (wants_versioned(max_version)) {
    gl_DLManagedTensorVersioned *t = PyMem_RawCalloc(1, sizeof *t);
    if (!t) {
      release_owner(ctx);
      return PyErr_NoMemory();
    }
    t->version.major = GL_DL_MAJOR;
    t->version.minor = GL_DL_MINOR;
    t->manager_ctx = ctx;
    t->deleter = delete_versioned;
    t->flags = self->readonly ? GL_DL_FLAG_READ_ONLY : 0;
    if (fill_dltensor(self, ctx, &t->dl_tensor) < 0 ||
        !(capsule = PyCapsule_New(t, "dltensor_versioned", capsule_versioned_destructor)))
      delete_versioned(t);
  } else {
    gl_DLManagedTensor *t = PyMem_RawCalloc(1, sizeof *t);
    if (!t) {
      release_owner(ctx);
      return PyErr_NoMemory();
    }
    t->manager_ctx = ctx;
    t->deleter = delete_unversioned;
    if (fill_dltensor(self, ctx, &t->dl_tensor) < 0 ||
        !(capsule = PyCapsule_New(t, "dltensor", capsule_unversioned_destructor)))
      delete_unversioned(t);
  }
  return capsule;
}

PyObject *gl_devarray_dlpack_device(gl_DeviceArrayObject *self, PyObject *unused) {
  return Py_BuildValue("(ii)", GL_DL_CUDA, self->device);
}
