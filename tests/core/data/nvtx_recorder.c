/* A stand-in NVTX tool for tests/core/test_nvtx.py: loaded through NVTX_INJECTION64_PATH as
 * Nsight would be, it writes the name of every range pushed to the file named by
 * GPULAB_NVTX_RECORD, one per line, and "pop" for every pop. */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>

static FILE *record;
static int depth;

static int push_a(const char *name) {
  fprintf(record, "%s\n", name);
  fflush(record);
  return depth++;
}

static int pop(void) {
  fprintf(record, "pop\n");
  fflush(record);
  return --depth;
}

int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  const char *path = getenv("GPULAB_NVTX_RECORD");
  if (!path || !(record = fopen(path, "w"))) return 0;
  const NvtxExportTableCallbacks *callbacks = get_export_table(NVTX_ETID_CALLBACKS);
  NvtxFunctionTable table = 0;
  unsigned size = 0;
  if (!callbacks || !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) ||
      size <= NVTX_CBID_CORE_RangePop)
    return 0;
  *table[NVTX_CBID_CORE_RangePushA] = (NvtxFunctionPointer)push_a;
  *table[NVTX_CBID_CORE_RangePop] = (NvtxFunctionPointer)pop;
  return 1;
}
