#!/usr/bin/env bash
# Nsight Compute on the half-precision matmul ladder: each tensor-core rung (wmma,
# wmma_multistage, mma_sync, wgmma, wgmma_ws, wgmma_cluster, and cuBLASLt's kernel) at float16
# m = n = k (default 4096), each profiled once (ncu replays a kernel on its own, so no warm-up
# call is needed). The sections say what each rung's step bought: pipe use, warp stalls,
# shared-memory bank conflicts, occupancy; docs/labs/linalg.md condenses them.
#   tools/ncu_hgemm.sh [size] [dtype]     (prints the report; ncu must be on PATH)
set -u -o pipefail
size=${1:-4096}
dtype=${2:-float16}
script=$(mktemp --suffix=.py)
cat >"$script" <<PY
import torch, gpulab as gl
torch.manual_seed(0)
a = torch.randn($size, $size, device="cuda").to(torch.$dtype)
b = torch.randn($size, $size, device="cuda").to(torch.$dtype)
for name in ("wmma", "wmma_multistage", "mma_sync", "wgmma", "wgmma_ws", "wgmma_cluster",
             "cublaslt"):
    gl.matmul(a, b, variant=name)
    torch.cuda.synchronize()
PY
ncu --kernel-name regex:"hgemm|gemm|nvjet|sm90|cutlass" --launch-skip-before-match 0 \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
  --section MemoryWorkloadAnalysis_Tables --section Occupancy --section LaunchStats \
  --section WarpStateStats --section SchedulerStats --section InstructionStats \
  python3 "$script"
status=$?
rm -f "$script"
exit $status
