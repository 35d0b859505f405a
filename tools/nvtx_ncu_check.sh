#!/usr/bin/env bash
# Nsight Compute, filtered by gpulab's NVTX range names, profiles exactly the op it names: a
# reduce, a saxpy variant 2 and a saxpy variant 0 inside a user's range run, and
# --nvtx-include "saxpy variant=2/" must profile saxpy_vec16 alone, "my step/" saxpy_per_element
# alone. Prints what ncu profiled; exits 1 when it is not that.
set -u -o pipefail
script=$(mktemp --suffix=.py)
cat >"$script" <<'PY'
import os, numpy as np, gpulab as gl
print("NVTX_INJECTION64_PATH:", os.environ.get("NVTX_INJECTION64_PATH"),
      "ops wrapped:", hasattr(gl.saxpy, "__wrapped__"))
x = gl.to_device(np.ones(1 << 20, np.float32))
gl.reduce(x, variant=2)
gl.saxpy(2.0, x, x, variant=2)
with gl.nvtx_range("my step"):
    gl.saxpy(2.0, x, x, variant=0)
gl.synchronize()
PY
status=0
for pair in "saxpy variant=2/:saxpy_vec16" "my step/:saxpy_per_element"; do
  filter=${pair%%:*} kernel=${pair##*:}
  report=$(ncu --nvtx --nvtx-include "$filter" --metrics gpu__time_duration.sum python3 "$script" 2>&1)
  echo "$report"
  profiled=$(echo "$report" | grep '==PROF== Profiling' | sed 's/.*Profiling "\([^"]*\)".*/\1/' |
    sort -u | tr '\n' ' ')
  echo "filter '$filter': profiled [$profiled] (want [$kernel ])"
  [ "$profiled" = "$kernel " ] || status=1
done
rm -f "$script"
exit $status
