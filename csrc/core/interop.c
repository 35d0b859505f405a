/* Zero-copy import from CuPy, PyTorch, Numba and others: the CUDA Array Interface (v3) and
 * DLPack as DeviceArray views (the export is devarray_export.c), and the classification of
 * operands as NumPy or device arrays. */
#include "interop.h"

#include <string.h>

#include "args.h"
#include "dlpack.h"
#include "errors.h"
#include "runtime.h"
#include "stream.h"

/* ---- ordering a producer's stream before ours ---- */

/* While a call imports its operands (gl_import_operands_begin), a second operand from the same
 * producer's stream needs no second record when everything read since the first is CuPy's or
 * torch's own accessors, which enqueue no work; any other import (its interface is someone's
 * Python) forgets that record. */
static struct {
  int open;
  int recorded; /* the open call's last ordering is producer -> consumer (NULL is a stream too) */
  glc_stream producer, consumer;
} ordering;

void gl_import_operands_begin(void) {
  ordering.open = 1;
  ordering.recorded = 0;
}

void gl_import_operands_end(void) {
  ordering.open = 0;
  ordering.recorded = 0;
}

static int order_import(glc_stream producer, glc_stream consumer, int trusted) {
  if (producer == consumer) return 0;
  if (trusted && ordering.recorded && ordering.producer == producer &&
      ordering.consumer == consumer)
    return 0;
  int code = gl_order_streams_on_device0(producer, consumer);
  ordering.recorded = !code && trusted && ordering.open;
  ordering.producer = producer;
  ordering.consumer = consumer;
  return code;
}

/* ---- CUDA Array Interface ---- */

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

/* *found: the pointer's device; NULL: it must be device 0. */
static int check_pointer_on_device(void *ptr, const char *argname, int *found) {
  int device = 0, is_device = 0;
  int code = glc_pointer_device(ptr, &device, &is_device);
  if (code) return gl_raise_cuda(code), -1;
  if (!is_device) {
    PyErr_Format(PyExc_ValueError, "%s points to host memory, not device memory", argname);
    return -1;
  }
  if (found) {
    *found = device;
  } else if (device != 0) {
    PyErr_Format(PyExc_ValueError, "%s lives on device %d; gpulab runs on device 0 (mixed devices)",
                 argname, device);
    return -1;
  }
  return 0;
}

/* The interface's keys, interned once: every foreign operand's dict is read through them. */
enum { CAI_SHAPE, CAI_TYPESTR, CAI_DATA, CAI_STRIDES, CAI_MASK, CAI_STREAM, CAI_KEYS };
static PyObject *cai_key(int i) {
  static const char *const names[CAI_KEYS] = {"shape",   "typestr", "data",
                                              "strides", "mask",    "stream"};
  static PyObject *keys[CAI_KEYS];
  if (!keys[i]) keys[i] = PyUnicode_InternFromString(names[i]);
  return keys[i];
}

/* any_device (gl.multi's import): obj may live on any device, and its producer's stream is not
 * ordered here (the caller waits for that device). */
static gl_DeviceArrayObject *from_cai(PyObject *obj, PyObject *cai, const char *argname,
                                      glc_stream stream, int any_device, int trusted) {
  if (!PyDict_Check(cai))
    return PyErr_Format(PyExc_TypeError, "%s.__cuda_array_interface__ is not a dict", argname),
           NULL;
  PyObject *item[CAI_KEYS];
  for (int i = 0; i < CAI_KEYS; i++) {
    PyObject *key = cai_key(i);
    item[i] = key ? PyDict_GetItemWithError(cai, key) : NULL;
    if (!item[i] && PyErr_Occurred()) return NULL;
  }
  PyObject *shape = item[CAI_SHAPE], *typestr = item[CAI_TYPESTR], *data = item[CAI_DATA],
           *strides = item[CAI_STRIDES], *mask = item[CAI_MASK], *producer = item[CAI_STREAM];
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
  PyArray_Descr *descr = gl_descr_from_typestr(typestr);
  if (!descr) return NULL;
  if (gl_check_extent(ndim, dims, PyDataType_ELSIZE(descr), argname) < 0) {
    Py_DECREF(descr);
    return NULL;
  }
  Py_ssize_t size = 1;
  for (int i = 0; i < ndim; i++) size *= dims[i];
  glc_stream producer_stream = NULL;
  int ordered = producer && producer != Py_None, device = 0;
  if ((size && check_pointer_on_device(ptr, argname, any_device ? &device : NULL) < 0) ||
      (ordered && gl_stream_handle_arg(producer, "the stream of its __cuda_array_interface__",
                                       &producer_stream) < 0)) {
    Py_DECREF(descr);
    return NULL;
  }
  int code = ordered && !any_device ? order_import(producer_stream, stream, trusted) : 0;
  if (code) {
    Py_DECREF(descr);
    return (gl_DeviceArrayObject *)gl_raise_cuda(code);
  }
  gl_DeviceArrayObject *a = gl_devarray_wrap(ptr, ndim, dims, has_strides ? byte_strides : NULL,
                                             descr, device, readonly, obj);
  Py_DECREF(descr);
  return a;
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

static PyObject *call_dlpack(PyObject *obj, glc_stream stream, int any_device) {
  PyObject *method = PyObject_GetAttrString(obj, "__dlpack__");
  if (!method) return NULL;
  PyObject *args = PyTuple_New(0);
  /* any_device: None (DLPack's legacy default stream), as gl.multi waits for the device */
  PyObject *kwargs = Py_BuildValue("{s:N,s:(ii)}", "stream",
                                   any_device ? Py_NewRef(Py_None) : PyLong_FromVoidPtr(stream),
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
                                           const char *argname, int any_device) {
  if (t->device.device_type != GL_DL_CUDA && t->device.device_type != GL_DL_CUDA_MANAGED)
    return PyErr_Format(PyExc_TypeError, "%s is not in CUDA device memory", argname), NULL;
  if (t->device.device_id != 0 && !any_device)
    return PyErr_Format(PyExc_ValueError,
                        "%s lives on device %d; gpulab runs on device 0 (mixed devices)", argname,
                        t->device.device_id),
           NULL;
  if (t->ndim < 0 || t->ndim > GL_MAX_NDIM)
    return PyErr_Format(PyExc_ValueError, "%s has %d dimensions; at most %d are supported", argname,
                        t->ndim, GL_MAX_NDIM),
           NULL;
  PyArray_Descr *descr = gl_descr_from_dl(t->dtype);
  if (!descr) return NULL;
  Py_ssize_t shape[GL_MAX_NDIM], strides[GL_MAX_NDIM];
  for (int i = 0; i < t->ndim; i++) {
    shape[i] = (Py_ssize_t)t->shape[i];
    if (t->strides) strides[i] = (Py_ssize_t)t->strides[i] * PyDataType_ELSIZE(descr);
  }
  if (gl_check_extent(t->ndim, shape, PyDataType_ELSIZE(descr), argname) < 0) {
    Py_DECREF(descr);
    return NULL;
  }
  gl_DeviceArrayObject *a =
      gl_devarray_wrap((char *)t->data + t->byte_offset, t->ndim, shape,
                       t->strides ? strides : NULL, descr, t->device.device_id, readonly, holder);
  Py_DECREF(descr);
  return a;
}

static gl_DeviceArrayObject *from_dlpack(PyObject *obj, const char *argname, glc_stream stream,
                                         int any_device) {
  PyObject *capsule = call_dlpack(obj, stream, any_device);
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
        a = wrap_dltensor(&t->dl_tensor, (t->flags & GL_DL_FLAG_READ_ONLY) != 0, holder, argname,
                          any_device);
      else
        t->deleter(t);
    }
  } else if (PyCapsule_IsValid(capsule, "dltensor")) {
    gl_DLManagedTensor *t = PyCapsule_GetPointer(capsule, "dltensor");
    if (PyCapsule_SetName(capsule, "used_dltensor") == 0) {
      holder = PyCapsule_New(t, "gpulab.dlpack", holder_unversioned_destructor);
      if (holder)
        a = wrap_dltensor(&t->dl_tensor, 0, holder, argname, any_device);
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

/* ---- PyTorch tensors and CuPy arrays, read directly ---- */

/* torch's __cuda_array_interface__ and __dlpack__ are Python code (a dict, or a stream object and
 * an event, each call): about 40 us an operand on an H200, more than a small kernel. A plain
 * strided CUDA torch.Tensor is read here through its C accessors, with its current stream ordered
 * before ours as DLPack does. Subclasses, sparse, complex and requires_grad tensors take the
 * protocols. */
enum {
  T_IS_CUDA,
  T_REQUIRES_GRAD,
  T_LAYOUT,
  T_DTYPE,
  T_GET_DEVICE,
  T_SHAPE,
  T_STRIDE,
  T_DATA_PTR,
  T_NAMES
};

static struct {
  int state; /* 0: torch not imported yet; 1: ready; -1: not the API expected, protocols only */
  PyTypeObject *tensor;
  PyObject *strided, *raw_stream; /* torch.strided, torch._C._cuda_getCurrentRawStream */
  PyObject *descrs;               /* torch.dtype -> NumPy descr */
  PyObject *names[T_NAMES];       /* the accessors' names, interned once: looked up every call */
} torch_api;

static const char *const torch_names[T_NAMES] = {
    "is_cuda", "requires_grad", "layout", "dtype", "get_device", "shape", "stride", "data_ptr"};

static PyObject *imported_module(const char *name) {
  PyObject *key = PyUnicode_InternFromString(name);
  PyObject *module = key ? PyImport_GetModule(key) : NULL; /* NULL, no error: not imported */
  Py_XDECREF(key);
  PyErr_Clear();
  return module;
}

static int torch_load(PyObject *torch) {
  static const struct {
    const char *name;
    gl_DLDataType dl;
  } dtypes[] = {{"float16", {GL_DL_FLOAT, 16, 1}}, {"float32", {GL_DL_FLOAT, 32, 1}},
                {"float64", {GL_DL_FLOAT, 64, 1}}, {"bfloat16", {GL_DL_BFLOAT, 16, 1}},
                {"int8", {GL_DL_INT, 8, 1}},       {"int16", {GL_DL_INT, 16, 1}},
                {"int32", {GL_DL_INT, 32, 1}},     {"int64", {GL_DL_INT, 64, 1}},
                {"uint8", {GL_DL_UINT, 8, 1}},     {"uint16", {GL_DL_UINT, 16, 1}},
                {"uint32", {GL_DL_UINT, 32, 1}},   {"uint64", {GL_DL_UINT, 64, 1}},
                {"bool", {GL_DL_BOOL, 8, 1}}};
  PyObject *tensor = PyObject_GetAttrString(torch, "Tensor");
  PyObject *c = PyObject_GetAttrString(torch, "_C");
  torch_api.strided = PyObject_GetAttrString(torch, "strided");
  torch_api.raw_stream = c ? PyObject_GetAttrString(c, "_cuda_getCurrentRawStream") : NULL;
  torch_api.descrs = PyDict_New();
  Py_XDECREF(c);
  if (!tensor || !PyType_Check(tensor) || !torch_api.strided || !torch_api.raw_stream ||
      !torch_api.descrs) {
    Py_XDECREF(tensor);
    PyErr_Clear();
    return -1;
  }
  for (int i = 0; i < T_NAMES; i++)
    if (!(torch_api.names[i] = PyUnicode_InternFromString(torch_names[i]))) {
      Py_DECREF(tensor);
      PyErr_Clear();
      return -1;
    }
  torch_api.tensor = (PyTypeObject *)tensor;
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
    PyObject *dtype = PyObject_GetAttrString(torch, dtypes[i].name);
    PyArray_Descr *descr = dtype ? gl_descr_from_dl(dtypes[i].dl) : NULL;
    if (descr && PyDict_SetItem(torch_api.descrs, dtype, (PyObject *)descr) < 0) Py_CLEAR(descr);
    Py_XDECREF(dtype);
    Py_XDECREF(descr);
    PyErr_Clear(); /* a dtype this torch or NumPy lacks (bfloat16 without ml_dtypes) stays out */
  }
  return 1;
}

static int torch_ready(void) {
  if (torch_api.state == 0) {
    PyObject *torch = imported_module("torch");
    if (!torch) return 0;
    torch_api.state = torch_load(torch);
    Py_DECREF(torch);
  }
  return torch_api.state > 0;
}

static int is_torch_tensor(PyObject *obj) {
  return torch_ready() && Py_TYPE(obj) == torch_api.tensor;
}

/* A bool attribute, or -1 with an error set. */
static int attr_true(PyObject *obj, int name) {
  PyObject *v = PyObject_GetAttr(obj, torch_api.names[name]);
  int r = v ? PyObject_IsTrue(v) : -1;
  Py_XDECREF(v);
  return r;
}

/* An int from obj.name(*args), or -1 with an error set. */
static long long call_int(PyObject *obj, int name) {
  PyObject *v = PyObject_CallMethodNoArgs(obj, torch_api.names[name]);
  long long r = v ? PyLong_AsLongLong(v) : -1;
  Py_XDECREF(v);
  return r;
}

/* 1 with *out set: obj, a torch.Tensor, as a DeviceArray; 0: obj is not one this path reads (the
 * protocols will); -1: an error. */
static int torch_import(PyObject *obj, const char *argname, glc_stream stream, int any_device,
                        gl_DeviceArrayObject **out) {
  if (!is_torch_tensor(obj)) return 0;
  int cuda = attr_true(obj, T_IS_CUDA), grad = cuda > 0 ? attr_true(obj, T_REQUIRES_GRAD) : 0;
  if (cuda < 0 || grad < 0) return -1;
  if (!cuda || grad) return 0;
  PyObject *layout = PyObject_GetAttr(obj, torch_api.names[T_LAYOUT]);
  PyObject *dtype = layout ? PyObject_GetAttr(obj, torch_api.names[T_DTYPE]) : NULL;
  PyArray_Descr *descr =
      dtype ? (PyArray_Descr *)PyDict_GetItemWithError(torch_api.descrs, dtype) : NULL;
  int plain = layout == torch_api.strided && descr;
  Py_XDECREF(layout);
  Py_XDECREF(dtype);
  if (PyErr_Occurred()) return -1;
  if (!plain) return 0;
  long long device = call_int(obj, T_GET_DEVICE);
  if (device == -1 && PyErr_Occurred()) return -1;
  if (device != 0 && !any_device) {
    PyErr_Format(PyExc_ValueError,
                 "%s lives on device %lld; gpulab runs on device 0 (mixed devices)", argname,
                 device);
    return -1;
  }
  PyObject *shape = PyObject_GetAttr(obj, torch_api.names[T_SHAPE]);
  PyObject *strides = shape ? PyObject_CallMethodNoArgs(obj, torch_api.names[T_STRIDE]) : NULL;
  PyObject *data = strides ? PyObject_CallMethodNoArgs(obj, torch_api.names[T_DATA_PTR]) : NULL;
  int ndim = shape && PyTuple_Check(shape) ? (int)PyTuple_GET_SIZE(shape) : -1;
  int ok =
      data && ndim >= 0 && strides && PyTuple_Check(strides) && PyTuple_GET_SIZE(strides) == ndim;
  if (ok && ndim > GL_MAX_NDIM) {
    PyErr_Format(PyExc_ValueError, "%s has more than %d dimensions", argname, GL_MAX_NDIM);
    ok = 0;
  }
  Py_ssize_t dims[GL_MAX_NDIM], byte_strides[GL_MAX_NDIM];
  const Py_ssize_t itemsize = PyDataType_ELSIZE(descr);
  void *ptr = ok ? PyLong_AsVoidPtr(data) : NULL;
  ok = ok && !PyErr_Occurred() && tuple_of_ssize(shape, dims, ndim, "shape") == 0 &&
       tuple_of_ssize(strides, byte_strides, ndim, "strides") == 0;
  for (int i = 0; ok && i < ndim; i++) byte_strides[i] *= itemsize;
  Py_XDECREF(shape);
  Py_XDECREF(strides);
  Py_XDECREF(data);
  if (!ok) {
    if (!PyErr_Occurred())
      PyErr_Format(PyExc_ValueError, "%s: torch gave a malformed shape or stride", argname);
    return -1;
  }
  if (gl_check_extent(ndim, dims, itemsize, argname) < 0) return -1;
  if (!any_device) {
    PyObject *id = PyLong_FromLongLong(device);
    PyObject *raw = id ? PyObject_CallOneArg(torch_api.raw_stream, id) : NULL;
    Py_XDECREF(id);
    glc_stream producer = NULL;
    int bad = !raw || gl_stream_handle_arg(raw, "torch's current stream", &producer) < 0;
    Py_XDECREF(raw);
    if (bad) return -1;
    int code = order_import(producer, stream, 1);
    if (code) return gl_raise_cuda(code), -1;
  }
  *out = gl_devarray_wrap(ptr, ndim, dims, byte_strides, descr, (int)device, 0, obj);
  return *out ? 1 : -1;
}

/* CuPy's arrays are always on a device; its __cuda_array_interface__ (a dict and a stream query)
 * is then read once, by the import, not by the classification too. */
static int is_cupy_array(PyObject *obj) {
  static PyTypeObject *ndarray;
  if (!ndarray) {
    PyObject *cupy = imported_module("cupy");
    PyObject *type = cupy ? PyObject_GetAttrString(cupy, "ndarray") : NULL;
    Py_XDECREF(cupy);
    PyErr_Clear();
    if (type && !PyType_Check(type)) Py_CLEAR(type);
    ndarray = (PyTypeObject *)type; /* kept for the process's life */
  }
  return ndarray && Py_TYPE(obj) == ndarray;
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
  if (is_cupy_array(obj)) return 1;
  if (is_torch_tensor(obj)) {
    const int cuda = attr_true(obj, T_IS_CUDA);
    PyErr_Clear(); /* as hasattr would */
    return cuda > 0;
  }
  if (PyObject_HasAttrString(obj, "__cuda_array_interface__")) return 1;
  if (!PyObject_HasAttrString(obj, "__dlpack_device__")) return 0;
  int type = dlpack_device_type(obj);
  return type == GL_DL_CUDA || type == GL_DL_CUDA_MANAGED;
}

/* A foreign device array through its __cuda_array_interface__ cai (a new reference, stolen;
 * NULL with an exception set, which is cleared: then DLPack), else its CUDA DLPack; a TypeError
 * for anything else. */
static gl_DeviceArrayObject *import_foreign(PyObject *obj, PyObject *cai, const char *argname,
                                            glc_stream stream, int any_device, int trusted) {
  if (cai) {
    gl_DeviceArrayObject *a = from_cai(obj, cai, argname, stream, any_device, trusted);
    Py_DECREF(cai);
    return a;
  }
  PyErr_Clear();
  int type = dlpack_device_type(obj);
  if (type == GL_DL_CUDA || type == GL_DL_CUDA_MANAGED)
    return from_dlpack(obj, argname, stream, any_device);
  return PyErr_Format(PyExc_TypeError,
                      "%s must be a device array (gpulab.DeviceArray, or an object with "
                      "__cuda_array_interface__ or CUDA __dlpack__), not %s",
                      argname, Py_TYPE(obj)->tp_name),
         NULL;
}

gl_DeviceArrayObject *gl_as_device_array(PyObject *obj, const char *argname, glc_stream stream) {
  if (gl_DeviceArray_Check(obj)) {
    /* gl.multi makes DeviceArrays on other GPUs; the ops run on device 0 */
    int device = ((gl_DeviceArrayObject *)obj)->device;
    if (device != 0)
      return PyErr_Format(PyExc_ValueError,
                          "%s lives on device %d; gpulab runs on device 0 (mixed devices; "
                          "gl.multi's functions take arrays on any GPU)",
                          argname, device),
             NULL;
    if (gl_devarray_order_after((gl_DeviceArrayObject *)obj, stream) < 0) return NULL;
    gl_devarray_forget_mirror((gl_DeviceArrayObject *)obj);
    return (gl_DeviceArrayObject *)Py_NewRef(obj);
  }
  gl_DeviceArrayObject *tensor = NULL;
  int read = torch_import(obj, argname, stream, 0, &tensor);
  if (read) return read > 0 ? tensor : NULL;
  const int trusted = is_cupy_array(obj);
  if (!trusted) ordering.recorded = 0;
  PyObject *cai = PyObject_GetAttrString(obj, "__cuda_array_interface__");
  /* An interface without a stream (version 2, PyTorch's) says nothing of pending work; DLPack
   * then lets the producer order its own stream before ours. */
  if (cai && PyDict_Check(cai) && cai_key(CAI_STREAM) &&
      !PyDict_GetItem(cai, cai_key(CAI_STREAM)) && PyObject_HasAttrString(obj, "__dlpack__")) {
    Py_CLEAR(cai);
  }
  return import_foreign(obj, cai, argname, stream, 0, trusted);
}

gl_DeviceArrayObject *gl_as_device_array_anywhere(PyObject *obj, const char *argname) {
  if (gl_DeviceArray_Check(obj)) {
    gl_devarray_forget_mirror((gl_DeviceArrayObject *)obj);
    return (gl_DeviceArrayObject *)Py_NewRef(obj);
  }
  gl_DeviceArrayObject *tensor = NULL;
  int read = torch_import(obj, argname, NULL, 1, &tensor);
  if (read) return read > 0 ? tensor : NULL;
  /* Without stream ordering, any interface will do: CAI first, whatever its version. */
  return import_foreign(obj, PyObject_GetAttrString(obj, "__cuda_array_interface__"), argname, NULL,
                        1, 0);
}

int gl_classify_operands(int n, PyObject *const *inputs, const char *const *names, int *on_device) {
  for (int i = 0; i < n; i++) {
    int dev = gl_is_device_operand(inputs[i]);
    if (!dev && !PyArray_Check(inputs[i])) {
      PyErr_Format(PyExc_TypeError, "%s must be a NumPy array or a device array, not %s", names[i],
                   Py_TYPE(inputs[i])->tp_name);
      return -1;
    }
    if (i > 0 && dev != *on_device) {
      PyErr_Format(PyExc_ValueError,
                   "mixed devices: %s is %s but %s is %s; move both with gpulab.to_device or "
                   ".get()",
                   names[0], *on_device ? "a device array" : "a NumPy array", names[i],
                   dev ? "a device array" : "a NumPy array");
      return -1;
    }
    *on_device = dev;
  }
  return 0;
}

/* ---- Python ---- */

static PyObject *py_from_dlpack(PyObject *module, PyObject *obj) {
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
  return (PyObject *)from_dlpack(obj, "x", gl_library_stream(), 0);
}

static PyObject *py_as_device(PyObject *module, PyObject *args, PyObject *kwargs) {
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

PyMethodDef gl_interop_methods[] = {
    {"from_dlpack", py_from_dlpack, METH_O,
     "from_dlpack(obj): a zero-copy DeviceArray view of a CUDA DLPack producer."},
    {"as_device", (PyCFunction)(void (*)(void))py_as_device, METH_VARARGS | METH_KEYWORDS,
     "as_device(obj, stream=None): a zero-copy DeviceArray view of any device array."},
    {NULL}};
