/* CudaError, NoDeviceError and OutOfMemoryError: every CUDA failure reaches Python as one of
 * these. */
#include "errors.h"

#include "interrupt.h"
#include "registry.h"

PyObject *gl_CudaError = NULL;
PyObject *gl_NoDeviceError = NULL;
PyObject *gl_OutOfMemoryError = NULL;

/* cudaErrorInsufficientDriver and cudaErrorNoDevice: the two ways a machine has no GPU. */
#define GL_ERR_NO_DRIVER 35
#define GL_ERR_NO_DEVICE 100
/* cudaErrorMemoryAllocation: a device allocation found too little memory. */
#define GL_ERR_MEMORY_ALLOCATION 2

int gl_errors_init(PyObject *module) {
  if (gl_interrupt_init() < 0) return -1;
  gl_CudaError = PyErr_NewExceptionWithDoc(
      "gpulab.CudaError",
      "A CUDA call failed. Attributes: code (int), name (e.g. 'cudaErrorMemoryAllocation'), "
      "message, call (the CUDA call that failed) and sticky (True when the error left the CUDA "
      "context unusable and the process must restart to use the GPU again).",
      PyExc_RuntimeError, NULL);
  if (!gl_CudaError) return -1;
  gl_NoDeviceError = PyErr_NewExceptionWithDoc(
      "gpulab.NoDeviceError",
      "No usable GPU. Attribute reason: 'no driver', 'no GPU', 'not built' (gpulab was built "
      "without CUDA) or another CUDA start-up failure. The message lists the CPU variants of "
      "the op that was called.",
      gl_CudaError, NULL);
  if (!gl_NoDeviceError) return -1;
  /* A MemoryError too, so that code written for host memory (and PyTorch's and CuPy's
   * out-of-memory errors, which are MemoryErrors) catches it. */
  PyObject *bases = PyTuple_Pack(2, PyExc_MemoryError, gl_CudaError);
  if (!bases) return -1;
  gl_OutOfMemoryError = PyErr_NewExceptionWithDoc(
      "gpulab.OutOfMemoryError",
      "A device allocation failed for want of memory, after gpulab released the memory it keeps "
      "for reuse and tried once more. A MemoryError and a CudaError; besides CudaError's "
      "attributes, requested (the bytes asked for, or None when the failing call did not say) "
      "and free (the device's free bytes after the failure, or None). Not sticky: the next call "
      "works.",
      bases, NULL);
  Py_DECREF(bases);
  if (!gl_OutOfMemoryError) return -1;
  if (PyModule_AddObjectRef(module, "CudaError", gl_CudaError) < 0) return -1;
  if (PyModule_AddObjectRef(module, "NoDeviceError", gl_NoDeviceError) < 0) return -1;
  if (PyModule_AddObjectRef(module, "OutOfMemoryError", gl_OutOfMemoryError) < 0) return -1;
  return 0;
}

static const char *safe_error_name(int code) {
  return glc_error_name ? glc_error_name(code) : "gpulabNotBuilt";
}

static const char *safe_error_string(int code) {
  return glc_error_string ? glc_error_string(code) : "gpulab was built without CUDA";
}

/* Sets name to value on exc (stealing value); 0, or -1 raised. */
static int set_attr(PyObject *exc, const char *name, PyObject *value) {
  int rc = value ? PyObject_SetAttrString(exc, name, value) : -1;
  Py_XDECREF(value);
  return rc;
}

/* An exception instance of type with the CUDA attributes set, or NULL raised. */
static PyObject *cuda_exception(PyObject *type, const char *text, int code, const char *call,
                                int sticky, const char *reason) {
  PyObject *exc = PyObject_CallFunction(type, "s", text);
  if (!exc) return NULL;
  PyObject *values[] = {PyLong_FromLong(code),
                        PyUnicode_FromString(safe_error_name(code)),
                        PyUnicode_FromString(safe_error_string(code)),
                        PyUnicode_FromString(call ? call : ""),
                        PyBool_FromLong(sticky),
                        reason ? PyUnicode_FromString(reason) : Py_NewRef(Py_None)};
  const char *names[] = {"code", "name", "message", "call", "sticky", "reason"};
  int ok = 1;
  for (int i = 0; i < 6; i++)
    if (set_attr(exc, names[i], values[i]) < 0) ok = 0;
  if (!ok) Py_CLEAR(exc);
  return exc;
}

/* Raises exc (stealing it); always returns NULL. */
static PyObject *raise_exception(PyObject *exc) {
  if (exc) {
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
  }
  return NULL;
}

static PyObject *raise_with_attrs(PyObject *type, const char *text, int code, const char *call,
                                  int sticky, const char *reason) {
  return raise_exception(cuda_exception(type, text, code, call, sticky, reason));
}

void gl_format_bytes(char *text, size_t size, double bytes) {
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
  if (bytes < 1024) {
    snprintf(text, size, "%.0f bytes", bytes);
    return;
  }
  int unit = -1;
  while (bytes >= 1024 && unit < 7) {
    bytes /= 1024;
    unit++;
  }
  snprintf(text, size, "%.1f %s", bytes, units[unit]);
}

/* OutOfMemoryError: the size asked for when the allocation said (glc_failed_bytes), and the
 * device's free bytes now. */
static PyObject *raise_out_of_memory(int code, const char *call) {
  const size_t requested = glc_failed_bytes ? glc_failed_bytes() : 0;
  size_t free_bytes = 0, total_bytes = 0;
  const int have_free = glc_mem_info && glc_mem_info(&free_bytes, &total_bytes) == 0;
  char asked[96] = "", free_text[96] = "";
  if (requested) {
    char size[32];
    gl_format_bytes(size, sizeof size, (double)requested);
    snprintf(asked, sizeof asked, " %s (%zu bytes)", size, requested);
  }
  if (have_free) {
    char size[32];
    gl_format_bytes(size, sizeof size, (double)free_bytes);
    snprintf(free_text, sizeof free_text, "; %s free on the device", size);
  }
  char text[512];
  snprintf(text, sizeof text, "%s could not allocate%s: %s%s (%s, code %d)",
           call && *call ? call : "CUDA", *asked ? asked : " device memory",
           safe_error_string(code), free_text, safe_error_name(code), code);
  PyObject *exc = cuda_exception(gl_OutOfMemoryError, text, code, call, 0, NULL);
  PyObject *requested_obj = requested ? PyLong_FromSize_t(requested) : Py_NewRef(Py_None);
  PyObject *free_obj = have_free ? PyLong_FromSize_t(free_bytes) : Py_NewRef(Py_None);
  if (exc && (set_attr(exc, "requested", Py_XNewRef(requested_obj)) < 0 ||
              set_attr(exc, "free", Py_XNewRef(free_obj)) < 0))
    Py_CLEAR(exc);
  Py_XDECREF(requested_obj);
  Py_XDECREF(free_obj);
  return raise_exception(exc);
}

PyObject *gl_raise_cuda(int code) {
  if (code == GLC_INTERRUPTED) return gl_raise_interrupted();
  const char *call = glc_failed_call ? glc_failed_call() : "";
  if (code == GL_ERR_MEMORY_ALLOCATION) return raise_out_of_memory(code, call);
  int sticky = glc_error_is_sticky ? glc_error_is_sticky(code) : 0;
  char text[768];
  snprintf(text, sizeof text, "%s failed: %s (%s, code %d)%s", call && *call ? call : "CUDA",
           safe_error_string(code), safe_error_name(code), code,
           sticky ? ". This error is sticky: the CUDA context is unusable until the process "
                    "restarts"
                  : "");
  return raise_with_attrs(gl_CudaError, text, code, call, sticky, NULL);
}

PyObject *gl_raise_no_device(int code, const char *op) {
  const char *reason;
  if (code == GLC_NOT_BUILT)
    reason = "not built";
  else if (code == GL_ERR_NO_DRIVER)
    reason = "no driver";
  else if (code == GL_ERR_NO_DEVICE)
    reason = "no GPU";
  else
    reason = safe_error_name(code);
  char cpu_list[512] = "";
  if (op) gl_registry_cpu_list(op, cpu_list, sizeof cpu_list);
  char text[1024];
  snprintf(text, sizeof text, "no CUDA device: %s (%s)%s%s%s%s", reason, safe_error_string(code),
           op ? ". CPU variants of " : "", op ? op : "", op ? ": " : "",
           op ? (*cpu_list ? cpu_list : "none") : "");
  return raise_with_attrs(gl_NoDeviceError, text, code, "cudaGetDeviceCount", 0, reason);
}
