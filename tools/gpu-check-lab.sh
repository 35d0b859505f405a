#!/usr/bin/env bash
# The GPU check of one new lab (or one change to the foundation) within one device call of at
# most 10 minutes: build; then the whole suite beside the lab's sanitizer runs and planted bugs;
# then the main job and the lab's benchmarks. Each part has its own time limit, so that whatever
# finished comes back even when a part runs long; everything ends up in one archive,
# $OUT/gpu-check-lab.tar.gz (the device tool brings back few files):
#   build/ test/ lab/ main/   each a tools/gpu-check.sh run: logs/, results/, gpu_check.json
#
#   GPULAB_SANITIZE="concepts" GPULAB_PLANTS="a,b" GPULAB_BENCH="x y" tools/gpu-check-lab.sh
#   GPULAB_LAB_LIMITS="build test lab main" seconds (default "170 330 330 90"; 0 leaves a part
#   out, e.g. "120 460 460 0" and then tools/gpu-check.sh main bench in a second call)
#   GPULAB_LAB_STEPS="mutation sanitize": the lab part's steps in that order (default "sanitize
#   mutation"), so that the plants come back even when the sanitizers run past the limit
# With the extension built here for the device (tools/device_build.sh, carried), leave the build
# out and give the suite the time: PYTHONPATH=$PWD GPULAB_LAB_LIMITS="0 480 480 100"
# (6 shards took up to 360 s and more beside the sanitizers, held up by the CPU
# emulation tests).
set -u -o pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-check-out}
WORK=$(mktemp -d)
mkdir -p "$OUT"
read -r build_s test_s lab_s main_s <<<"${GPULAB_LAB_LIMITS:-170 330 330 90}"
# The suite as 6 processes (tools/gpu-check.sh): 4 ran past 370 s with the sort lab's tests.
export GPULAB_TEST_SHARDS=${GPULAB_TEST_SHARDS:-6}

part() { # name, seconds, steps...: one tools/gpu-check.sh run in $WORK/name, stopped at seconds
  local name=$1 seconds=$2
  shift 2
  if [ "$seconds" = 0 ]; then # a limit of 0 leaves the part out (for a run split in two calls)
    echo "$name: left out" | tee -a "$WORK/parts.txt"
    return
  fi
  mkdir -p "$WORK/$name"
  GPULAB_CHECK_DIR="$WORK/$name" OUT="$WORK/$name" timeout --signal=INT --kill-after=10 \
    "$seconds" tools/gpu-check.sh "$@" >"$WORK/$name/console.txt" 2>&1
  echo "$name: exit $? (limit $seconds s)" | tee -a "$WORK/parts.txt"
}

part build "$build_s" build
part test "$test_s" test &
part lab "$lab_s" ${GPULAB_LAB_STEPS:-sanitize mutation} &
wait
part main "$main_s" main bench
for name in build test lab main; do
  echo "== $name"
  cat "$WORK/$name/logs/steps.txt" 2>/dev/null
done | tee "$WORK/summary.txt"
tar -czf "$OUT/gpu-check-lab.tar.gz" -C "$WORK" .
