/* Zero-copy exchange with CuPy, PyTorch, Numba and others: the CUDA Array Interface (v3) and
 * DLPack, both ways. */
#include <string.h>

#include "dlpack_abi.h"
#include "gl.h"

/* ---- stream ordering between producer and consumer ---- */

/* Makes work later queued on consumer wait for what is queued on producer now. */
static int order_streams(glc_stream producer, glc_stream consumer) {
  if (producer == consumer) return 0;
  glc_event event;
  int code = glc_event_create(&event, 0);
  if (code) return code;
  code = glc_event_record(event, producer);
  if (!code) code = glc_stream_wait_event(consumer, event);
  /* Destroying an event with a pending wait is allowed: CUDA releases it when done. */
  glc_event_destroy(event);
  return code;
}

/* ---- dtypes ---- */

static PyArray_Descr *descr_from_typestr(PyObject *typestr) {
  PyArray_Descr *descr = NULL;
  if (!PyArray_DescrConverter(typestr, &descr)) return NULL;
  if (!(PyTypeNum_ISNUMBER(descr->type_num) || descr->type_num == NPY_BOOL)) {
    PyErr_Format(PyExc_TypeError, "unsupported element type %R", typestr);
    Py_DECREF(descr);
    return NULL;
  }
  return descr;
}

static int dl_dtype_from_descr(PyArray_Descr *d, gl_DLDataType *out) {
  out->bits = (uint8_t)(PyDataType_ELSIZE(d) * 8);
  out->lanes = 1;
  switch (d->kind) {
    case 'b':
      out->code = GL_DL_BOOL;
      return 0;
    case 'i':
      out->code = GL_DL_INT;
      return 0;
    case 'u':
      out->code = GL_DL_UINT;
      return 0;
    case 'f':
      out->code = GL_DL_FLOAT;
      return 0;
    case 'c':
      out->code = GL_DL_COMPLEX;
      return 0;
  }
  PyErr_Format(PyExc_BufferError, "dtype %S has no DLPack equivalent", (PyObject *)d);
  return -1;
}

static PyArray_Descr *descr_from_dl(gl_DLDataType t) {
  char kind;
  switch (t.code) {
    case GL_DL_BOOL:
      kind = '?';
      break;
    case GL_DL_INT:
      kind = 'i';
      break;
    case GL_DL_UINT:
      kind = 'u';
      break;
    case GL_DL_FLOAT:
      kind = 'f';
      break;
    case GL_DL_COMPLEX:
      kind = 'c';
      break;
    default:
      return PyErr_Format(PyExc_BufferError, "DLPack dtype code %d is not supported", t.code), NULL;
  }
  if (t.lanes != 1 || t.bits % 8)
    return PyErr_Format(PyExc_BufferError, "DLPack dtype with %d lanes of %d bits is not supported",
                        t.lanes, t.bits),
           NULL;
  char spec[16];
  if (kind == '?')
    snprintf(spec, sizeof spec, "?");
  else
    snprintf(spec, sizeof spec, "=%c%d", kind, t.bits / 8);
  PyObject *s = PyUnicode_FromString(spec);
  PyArray_Descr *d = s ? descr_from_typestr(s) : NULL;
  Py_XDECREF(s);
  return d;
}

/* ---- CUDA Array Interface ---- */

PyObject *gl_devarray_cai(gl_DeviceArrayObject *self, void *closure) {
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

static int tuple_of_ssize(PyObject *t, Py_ssize_t *out, int n, const char *what) {
  for (int i = 0; i < n; i++) {
    out[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(t, i));
    if (out[i] == -1 && PyErr_Occurred()) {
      PyErr_Format(PyExc_ValueError, "__cuda_array_interface__ %s must hold ints", what);
      return -1;
    }
  }
  return 0;
}

static int check_pointer_on_device(void *ptr, const char *argname) {
  int device = 0, is_device = 0;
  int code = glc_pointer_device(ptr, &device, &is_device);
  if (code) return gl_raise_cuda(code), -1;
  if (!is_device) {
    PyErr_Format(PyExc_ValueError, "%s points to host memory, not device memory", argname);
    return -1;
  }
  if (device != 0) {
    PyErr_Format(PyExc_ValueError, "%s lives on device %d; gpulab runs on device 0 (mixed devices)",
                 argname, device);
    return -1;
  }
  return 0;
}

static gl_DeviceArrayObject *from_cai(PyObject *obj, PyObject *cai, const char *argname,
                                      glc_stream stream) {
  if (!PyDict_Check(cai))
    return PyErr_Format(PyExc_TypeError, "%s.__cuda_array_interface__ is not a dict", argname),
           NULL;
  PyObject *shape = PyDict_GetItemString(cai, "shape");
  PyObject *typestr = PyDict_GetItemString(cai, "typestr");
  PyObject *data = PyDict_GetItemString(cai, "data");
  PyObject *strides = PyDict_GetItemString(cai, "strides");
  PyObject *mask = PyDict_GetItemString(cai, "mask");
  PyObject *producer = PyDict_GetItemString(cai, "stream");
  if (!shape || !PyTuple_Check(shape) || !typestr || !data || !PyTuple_Check(data) ||
      PyTuple_GET_SIZE(data) != 2)
    return PyErr_Format(PyExc_ValueError, "%s has a malformed __cuda_array_interface__", argname),
           NULL;
  if (mask && mask != Py_None)
    return PyErr_Format(PyExc_ValueError, "%s: masked CUDA arrays are not supported", argname),
           NULL;
  int ndim = (int)PyTuple_GET_SIZE(shape);
  if (ndim > GL_MAX_NDIM)
    return PyErr_Format(PyExc_ValueError, "%s has more than %d dimensions", argname, GL_MAX_NDIM),
           NULL;
  Py_ssize_t dims[GL_MAX_NDIM], byte_strides[GL_MAX_NDIM];
  if (tuple_of_ssize(shape, dims, ndim, "shape") < 0) return NULL;
  int has_strides = strides && strides != Py_None;
  if (has_strides && (!PyTuple_Check(strides) || PyTuple_GET_SIZE(strides) != ndim ||
                      tuple_of_ssize(strides, byte_strides, ndim, "strides") < 0))
    return PyErr_Occurred()
               ? NULL
               : (PyErr_Format(PyExc_ValueError, "%s has malformed strides", argname), NULL);
  void *ptr = PyLong_AsVoidPtr(PyTuple_GET_ITEM(data, 0));
  if (PyErr_Occurred()) return NULL;
  int readonly = PyObject_IsTrue(PyTuple_GET_ITEM(data, 1));
  if (readonly < 0) return NULL;
  Py_ssize_t size = 1;
  for (int i = 0; i < ndim; i++) size *= dims[i];
  if (size && check_pointer_on_device(ptr, argname) < 0) return NULL;
  if (producer && producer != Py_None) {
    glc_stream producer_stream = PyLong_AsVoidPtr(producer);
    if (PyErr_Occurred()) return NULL;
    int code = order_streams(producer_stream, stream);
    if (code) return (gl_DeviceArrayObject *)gl_raise_cuda(code);
  }
  PyArray_Descr *descr = descr_from_typestr(typestr);
  if (!descr) return NULL;
  gl_DeviceArrayObject *a =
      gl_devarray_wrap(ptr, ndim, dims, has_strides ? byte_strides : NULL, descr, 0, readonly, obj);
  Py_DECREF(descr);
  return a;
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
  if (dl_dtype_from_descr(a->dtype, &t->dtype) < 0) return -1;
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
  /* The array API's stream: None means the legacy default stream, -1 means no ordering. */
  long long consumer = 1;
  if (stream_obj != Py_None) {
    consumer = PyLong_AsLongLong(stream_obj);
    if (consumer == -1 && PyErr_Occurred()) return NULL;
  }
  if (consumer != -1) {
    if (gl_require_gpu(NULL) < 0) return NULL;
    int code = order_streams(self->stream, (glc_stream)(intptr_t)consumer);
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

/* ---- DLPack import ---- */

static void holder_versioned_destructor(PyObject *holder) {
  gl_DLManagedTensorVersioned *t = PyCapsule_GetPointer(holder, "gpulab.dlpack_versioned");
  if (t && t->deleter) t->deleter(t);
}

static void holder_unversioned_destructor(PyObject *holder) {
  gl_DLManagedTensor *t = PyCapsule_GetPointer(holder, "gpulab.dlpack");
  if (t && t->deleter) t->deleter(t);
}

static PyObject *call_dlpack(PyObject *obj, glc_stream stream) {
  PyObject *method = PyObject_GetAttrString(obj, "__dlpack__");
  if (!method) return NULL;
  PyObject *args = PyTuple_New(0);
  PyObject *kwargs = Py_BuildValue("{s:N,s:(ii)}", "stream", PyLong_FromVoidPtr(stream),
                                   "max_version", GL_DL_MAJOR, GL_DL_MINOR);
  PyObject *capsule = (args && kwargs) ? PyObject_Call(method, args, kwargs) : NULL;
  if (!capsule && PyErr_ExceptionMatches(PyExc_TypeError)) {
    /* A producer from before DLPack 1.0 does not know max_version. */
    PyErr_Clear();
    if (PyDict_DelItemString(kwargs, "max_version") == 0)
      capsule = PyObject_Call(method, args, kwargs);
  }
  Py_XDECREF(args);
  Py_XDECREF(kwargs);
  Py_DECREF(method);
  return capsule;
}

static gl_DeviceArrayObject *wrap_dltensor(gl_DLTensor *t, int readonly, PyObject *holder,
                                           const char *argname) {
  if (t->device.device_type != GL_DL_CUDA && t->device.device_type != GL_DL_CUDA_MANAGED)
    return PyErr_Format(PyExc_TypeError, "%s is not in CUDA device memory", argname), NULL;
  if (t->device.device_id != 0)
    return PyErr_Format(PyExc_ValueError,
                        "%s lives on device %d; gpulab runs on device 0 (mixed devices)", argname,
                        t->device.device_id),
           NULL;
  if (t->ndim < 0 || t->ndim > GL_MAX_NDIM)
    return PyErr_Format(PyExc_ValueError, "%s has %d dimensions; at most %d are supported", argname,
                        t->ndim, GL_MAX_NDIM),
           NULL;
  PyArray_Descr *descr = descr_from_dl(t->dtype);
  if (!descr) return NULL;
  Py_ssize_t shape[GL_MAX_NDIM], strides[GL_MAX_NDIM];
  for (int i = 0; i < t->ndim; i++) {
    shape[i] = (Py_ssize_t)t->shape[i];
    if (t->strides) strides[i] = (Py_ssize_t)t->strides[i] * PyDataType_ELSIZE(descr);
  }
  gl_DeviceArrayObject *a =
      gl_devarray_wrap((char *)t->data + t->byte_offset, t->ndim, shape,
                       t->strides ? strides : NULL, descr, t->device.device_id, readonly, holder);
  Py_DECREF(descr);
  return a;
}

static gl_DeviceArrayObject *from_dlpack(PyObject *obj, const char *argname, glc_stream stream) {
  PyObject *capsule = call_dlpack(obj, stream);
  if (!capsule) return NULL;
  gl_DeviceArrayObject *a = NULL;
  PyObject *holder = NULL;
  if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
    gl_DLManagedTensorVersioned *t = PyCapsule_GetPointer(capsule, "dltensor_versioned");
    if (t->version.major > GL_DL_MAJOR) {
      PyErr_Format(PyExc_BufferError, "%s speaks DLPack %u, newer than gpulab's %d", argname,
                   t->version.major, GL_DL_MAJOR);
    } else if (PyCapsule_SetName(capsule, "used_dltensor_versioned") == 0) {
      holder = PyCapsule_New(t, "gpulab.dlpack_versioned", holder_versioned_destructor);
      if (holder)
        a = wrap_dltensor(&t->dl_tensor, (t->flags & GL_DL_FLAG_READ_ONLY) != 0, holder, argname);
      else
        t->deleter(t);
    }
  } else if (PyCapsule_IsValid(capsule, "dltensor")) {
    gl_DLManagedTensor *t = PyCapsule_GetPointer(capsule, "dltensor");
    if (PyCapsule_SetName(capsule, "used_dltensor") == 0) {
      holder = PyCapsule_New(t, "gpulab.dlpack", holder_unversioned_destructor);
      if (holder)
        a = wrap_dltensor(&t->dl_tensor, 0, holder, argname);
      else
        t->deleter(t);
    }
  } else {
    PyErr_Format(PyExc_BufferError, "%s.__dlpack__() did not return a DLPack capsule", argname);
  }
  Py_XDECREF(holder);
  Py_DECREF(capsule);
  return a;
}

/* ---- classification ---- */

static int dlpack_device_type(PyObject *obj) {
  PyObject *dev = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
  if (!dev) {
    PyErr_Clear();
    return -1;
  }
  int type = -1, id;
  if (!PyTuple_Check(dev) || !PyArg_ParseTuple(dev, "ii", &type, &id)) {
    PyErr_Clear();
    type = -1;
  }
  Py_DECREF(dev);
  return type;
}

int gl_is_device_operand(PyObject *obj) {
  if (gl_DeviceArray_Check(obj)) return 1;
  if (PyArray_Check(obj)) return 0;
  if (PyObject_HasAttrString(obj, "__cuda_array_interface__")) return 1;
  if (!PyObject_HasAttrString(obj, "__dlpack_device__")) return 0;
  int type = dlpack_device_type(obj);
  return type == GL_DL_CUDA || type == GL_DL_CUDA_MANAGED;
}

gl_DeviceArrayObject *gl_as_device_array(PyObject *obj, const char *argname, glc_stream stream) {
  if (gl_DeviceArray_Check(obj)) return (gl_DeviceArrayObject *)Py_NewRef(obj);
  PyObject *cai = PyObject_GetAttrString(obj, "__cuda_array_interface__");
  /* An interface without a stream (version 2, PyTorch's) says nothing of pending work; DLPack
   * then lets the producer order its own stream before ours. */
  if (cai && PyDict_Check(cai) && !PyDict_GetItemString(cai, "stream") &&
      PyObject_HasAttrString(obj, "__dlpack__")) {
    Py_CLEAR(cai);
  }
  if (cai) {
    gl_DeviceArrayObject *a = from_cai(obj, cai, argname, stream);
    Py_DECREF(cai);
    return a;
  }
  PyErr_Clear();
  int type = dlpack_device_type(obj);
  if (type == GL_DL_CUDA || type == GL_DL_CUDA_MANAGED) return from_dlpack(obj, argname, stream);
  return PyErr_Format(PyExc_TypeError,
                      "%s must be a device array (gpulab.DeviceArray, or an object with "
                      "__cuda_array_interface__ or CUDA __dlpack__), not %s",
                      argname, Py_TYPE(obj)->tp_name),
         NULL;
}

PyObject *gl_py_from_dlpack(PyObject *module, PyObject *obj) {
  if (gl_require_gpu(NULL) < 0) return NULL;
  if (gl_DeviceArray_Check(obj)) return Py_NewRef(obj);
  if (!PyObject_HasAttrString(obj, "__dlpack__"))
    return PyErr_Format(PyExc_TypeError, "from_dlpack: %s has no __dlpack__",
                        Py_TYPE(obj)->tp_name);
  int type = dlpack_device_type(obj);
  if (type != GL_DL_CUDA && type != GL_DL_CUDA_MANAGED)
    return PyErr_Format(PyExc_TypeError,
                        "from_dlpack takes CUDA device memory (DLPack device type %d given); "
                        "use gpulab.to_device for host arrays",
                        type);
  return (PyObject *)from_dlpack(obj, "x", gl_library_stream());
}

PyObject *gl_py_as_device(PyObject *module, PyObject *args, PyObject *kwargs) {
  static char *kwlist[] = {"obj", "stream", NULL};
  PyObject *obj, *stream_obj = Py_None, *keep = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:as_device", kwlist, &obj, &stream_obj))
    return NULL;
  if (gl_require_gpu(NULL) < 0) return NULL;
  glc_stream stream;
  if (gl_stream_arg(stream_obj, &stream, &keep) < 0) return NULL;
  gl_DeviceArrayObject *a = gl_as_device_array(obj, "obj", stream);
  if (a) gl_devarray_use(a, stream, keep);
  Py_XDECREF(keep);
  return (PyObject *)a;
}
