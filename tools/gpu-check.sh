#!/usr/bin/env bash
# The GPU machine's check: build, the whole test suite, compute-sanitizer over every CUDA variant,
# the main job and the benchmarks. Everything lands under $OUT (default ./gpu-check-out):
# the benchmark JSON files and gpu_check.json (the tests' and sanitizers' verdicts) at the top;
# commit them under benchmarks/results/. The logs are in logs.tar.gz.
#
#   tools/gpu-check.sh [build] [test] [sanitize] [main] [bench]    (default: all of them)
# main runs the main job and the notebooks.
set -u -o pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-check-out}
LOGS=$(mktemp -d)
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 GPULAB_RESULTS="$OUT"
# The device machine gets the tree without .git: pass GPULAB_COMMIT=<hash> there.
export GPULAB_COMMIT=${GPULAB_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
steps=${*:-build test sanitize main bench}
status=0
summary=()

run() { # name, command...
  local name=$1
  shift
  echo "== $name: $*"
  local t0=$SECONDS
  if "$@" >"$LOGS/$name.log" 2>&1; then
    summary+=("PASS $name ($((SECONDS - t0)) s)")
  else
    summary+=("FAIL $name ($((SECONDS - t0)) s): see logs.tar.gz/$name.log")
    status=1
  fi
  tail -n 15 "$LOGS/$name.log"
}

for step in $steps; do
  case $step in
  build)
    nvidia-smi >"$LOGS/nvidia-smi.txt" 2>&1
    run build python3 -m pip install --no-build-isolation --no-deps -v -e .
    run import python3 -c "import gpulab as gl; print(gl.build_info()); print(gl.device_info())"
    ;;
  test) run pytest python3 -m pytest -q -rs ;;
  sanitize)
    for tool in memcheck racecheck synccheck; do
      run "sanitizer-$tool" compute-sanitizer --tool "$tool" --error-exitcode 1 \
        python3 tools/sanitize_all.py
      run "sanitizer-nbody-$tool" compute-sanitizer --tool "$tool" --error-exitcode 1 \
        python3 tools/sanitize_nbody.py
      run "sanitizer-labs-$tool" compute-sanitizer --tool "$tool" --error-exitcode 1 \
        python3 tools/sanitize_labs.py
    done
    ;;
  main)
    run mainjob python3 -m gpulab --json "$OUT/mainjob.json"
    run notebooks python3 tools/run_notebooks.py
    ;;
  bench)
    run bench-saxpy python3 benchmarks/saxpy_ladder.py
    run bench-transfer python3 benchmarks/transfer_paths.py
    run bench-overhead python3 benchmarks/call_overhead.py
    run bench-reduce python3 benchmarks/reduce_ladder.py
    run bench-nbody python3 benchmarks/nbody_ladder.py
    run bench-memory python3 benchmarks/memory_lab.py
    run bench-streams python3 benchmarks/streams_lab.py
    ;;
  *) echo "unknown step $step" && exit 2 ;;
  esac
done

printf '%s\n' "${summary[@]}" | tee "$LOGS/summary.txt"
[[ " $steps " == *" test "* || " $steps " == *" sanitize "* ]] &&
  python3 tools/gpu_check_summary.py "$LOGS" "$OUT/gpu_check.json" $steps
tar -czf "$OUT/logs.tar.gz" -C "$LOGS" .
exit $status
