/* Ctrl-C inside long C calls (interrupt.h). A SIGINT only sets a flag in CPython's C handler;
 * the KeyboardInterrupt is raised when some code runs the Python-level handlers, which the
 * interpreter does between bytecodes and which a C loop must do itself: PyErr_CheckSignals. */
#include "interrupt.h"

#include <time.h>

#include "pythread.h"

static unsigned long main_thread;
static int main_thread_known;
/* When the main thread's next check may run the handlers; only the main thread reads or writes
 * it, so it needs no lock. */
static long long next_check_ns;

int gl_interrupt_init(void) {
  PyObject *threading = PyImport_ImportModule("threading");
  PyObject *main = threading ? PyObject_CallMethod(threading, "main_thread", NULL) : NULL;
  PyObject *ident = main ? PyObject_GetAttrString(main, "ident") : NULL;
  const unsigned long value = ident ? PyLong_AsUnsignedLong(ident) : 0;
  Py_XDECREF(ident);
  Py_XDECREF(main);
  Py_XDECREF(threading);
  if (PyErr_Occurred()) return -1;
  main_thread = value;
  main_thread_known = 1;
  return 0;
}

static long long monotonic_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

int glc_check_interrupt(void) {
  if (!main_thread_known || PyThread_get_thread_ident() != main_thread) return 0;
  const long long now = monotonic_ns();
  if (now < next_check_ns) return 0;
  next_check_ns = now + GLC_INTERRUPT_PERIOD_MS * 1000000LL;
  /* The caller may hold the GIL (a small call) or have released it (a long one): Ensure takes it
   * in the second case only, on the thread's own state, where the exception then stays. */
  PyGILState_STATE state = PyGILState_Ensure();
  const int raised = PyErr_CheckSignals() < 0;
  PyGILState_Release(state);
  return raised ? GLC_INTERRUPTED : 0;
}

PyObject *gl_raise_interrupted(void) {
  if (!PyErr_Occurred()) PyErr_SetNone(PyExc_KeyboardInterrupt);
  return NULL;
}
