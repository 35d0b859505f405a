/* NVTX ranges for Python: the op wrappers (gpulab/nvtx.py) and gl.nvtx_range. */
#ifndef GL_NVTX_H
#define GL_NVTX_H

#include "py.h"

extern PyMethodDef gl_nvtx_methods[];

#endif
