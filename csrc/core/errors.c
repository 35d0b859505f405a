/* CudaError and NoDeviceError: every CUDA failure reaches Python as one of these. */
#include "errors.h"

#include "interrupt.h"
#include "registry.h"

PyObject *gl_CudaError = NULL;
PyObject *gl_NoDeviceError = NULL;

/* cudaErrorInsufficientDriver and cudaErrorNoDevice: the two ways a machine has no GPU. */
#define GL_ERR_NO_DRIVER 35
#define GL_ERR_NO_DEVICE 100

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
  if (PyModule_AddObjectRef(module, "CudaError", gl_CudaError) < 0) return -1;
  if (PyModule_AddObjectRef(module, "NoDeviceError", gl_NoDeviceError) < 0) return -1;
  return 0;
}

static const char *safe_error_name(int code) {
  return glc_error_name ? glc_error_name(code) : "gpulabNotBuilt";
}

static const char *safe_error_string(int code) {
  return glc_error_string ? glc_error_string(code) : "gpulab was built without CUDA";
}

/* Builds an exception instance of type with the CUDA attributes set, then raises it. */
static PyObject *raise_with_attrs(PyObject *type, const char *text, int code, const char *call,
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
  for (int i = 0; i < 6; i++) {
    if (!values[i] || PyObject_SetAttrString(exc, names[i], values[i]) < 0) ok = 0;
    Py_XDECREF(values[i]);
  }
  if (ok) PyErr_SetObject(type, exc);
  Py_DECREF(exc);
  return NULL;
}

PyObject *gl_raise_cuda(int code) {
  if (code == GLC_INTERRUPTED) return gl_raise_interrupted();
  const char *call = glc_failed_call ? glc_failed_call() : "";
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
