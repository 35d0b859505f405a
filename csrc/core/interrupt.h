/* Ctrl-C inside long C calls: glc_check_interrupt (declared in cuda/core/interrupt.h, for the
 * CUDA host loops as well) runs Python's signal handlers from inside a loop, and the binding turns
 * its status, GLC_INTERRUPTED, back into the exception the handler raised. */
#ifndef GL_INTERRUPT_H
#define GL_INTERRUPT_H

#include "py.h"

#include "cuda/core/interrupt.h"

/* Learns which thread is Python's main thread (the only one whose check runs handlers). */
int gl_interrupt_init(void);
/* Returns NULL with the exception of the handler that stopped a loop (GLC_INTERRUPTED) left as it
 * is, or a KeyboardInterrupt if none is set. Needs the GIL. */
PyObject *gl_raise_interrupted(void);

#endif
