/* Ctrl-C inside long host loops, for cuda/ and csrc/ alike (plain C, no Python types).
 *
 * Every host loop that can run for seconds (a solver's sweeps or iterations) calls
 * glc_check_interrupt() once an iteration and stops when it returns GLC_INTERRUPTED, with nothing
 * of its own left running on the device or allocated; its caller returns that status unchanged,
 * and the binding (csrc/core/interrupt.h) returns the exception that the handler raised. The call
 * is cheap: it reads a monotonic clock, and runs Python's signal handlers (taking the GIL if the
 * caller released it) at most every GLC_INTERRUPT_PERIOD_MS, on Python's main thread only, the one
 * thread that can run them. It is defined by the binding (csrc/core/interrupt.c), so it exists in
 * a build without nvcc too; the host emulations (tools/emulate) define their own. */
#ifndef GPULAB_CUDA_INTERRUPT_H
#define GPULAB_CUDA_INTERRUPT_H

/* The status of a loop stopped by a signal handler: not a CUDA error code (those are >= 0), nor
 * gpulab_core.h's GLC_NOT_BUILT (-1). */
#define GLC_INTERRUPTED (-2)
#define GLC_INTERRUPT_PERIOD_MS 25

#ifdef __cplusplus
extern "C" {
#endif

/* GLC_INTERRUPTED when a Python signal handler raised (its exception is then set), else 0. */
int glc_check_interrupt(void);

#ifdef __cplusplus
}
#endif
#endif
