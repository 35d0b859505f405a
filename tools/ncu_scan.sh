#!/usr/bin/env bash
# Nsight Compute on the scan lab's single-pass scans at 2^28 elements: gpulab's
# decoupled_lookback (float32 sums, and int32 into int64 sums) beside CUB's DeviceScanKernel on
# the same float32 array, each profiled once after a warm-up call. The sections say where a
# look-back tile spends its time (memory throughput, warp stalls, occupancy), for
# docs/labs/scan.md.
#   tools/ncu_scan.sh [log2n]     (prints the report; ncu must be on PATH)
set -u -o pipefail
log2n=${1:-28}
script=$(mktemp --suffix=.py)
cat >"$script" <<PY
import numpy as np, gpulab as gl
n = 1 << $log2n
f = gl.to_device(np.ones(n, np.float32))
i = gl.to_device(np.ones(n, np.int32))
for x, v in ((f, 5), (f, 6), (i, 5)):
    gl.scan(x, variant=v)  # warm-up: module load, pool growth
    gl.synchronize()
    gl.scan(x, variant=v)
    gl.synchronize()
PY
ncu --kernel-name regex:"decoupled_lookback|DeviceScanKernel" --launch-skip-before-match 0 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
  --section LaunchStats --section WarpStateStats --section SchedulerStats \
  python3 "$script"
status=$?
rm -f "$script"
exit $status
