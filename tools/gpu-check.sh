#!/usr/bin/env bash
# The GPU machine's check: build, the whole test suite, compute-sanitizer over every lab's driver
# in exact allocation mode, the argument fuzz, the planted-bug check, the main job and every
# benchmark. Everything lands under $OUT (default ./gpu-check-out):
#   gpu_check.json   each step's verdict, the test counts, the sanitizer summaries, the fuzz and
#                    the planted bugs, with the device, driver and commit
#   results.tar.gz   the benchmark, main-job and mutation-check JSON (commit them under
#                    benchmarks/results/)
#   logs.tar.gz      every step's log
# (the device tool brings back at most 8 files, hence the archives.)
#
#   tools/gpu-check.sh [build] [test] [sanitize] [fuzz] [mutation] [main] [bench]   (default: all)
#
# Labs come in by convention, with no list here: every tools/sanitize/<name>.py driver runs under
# every sanitizer tool, every benchmarks/<name>.py script runs in the bench step (targets.py too:
# every lab's headline figure against its target, in one process, saved as targets.json).
# GPULAB_SANITIZE="concepts": only these sanitizer drivers; GPULAB_PLANTS="a,b": only these
# planted bugs (tools/mutation_check.py --only). For a run that checks one new lab.
# GPULAB_BASELINE=<another tree, built in place>: the bench step also runs each benchmark there,
# just before this tree's, and tools/compare_benchmarks.py compares the two (before and after a
# change, in one run). GPULAB_BENCH="saxpy_ladder reduce_ladder": only these benchmarks.
# GPULAB_TEST_SHARDS=4: the suite as 4 pytest processes at once (the whole suite takes ~10 min
# as one process on the H100; correctness, not timing, so they may share the GPU).
set -u -o pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-check-out}
# GPULAB_CHECK_DIR=<folder>: logs and results there (logs/, results/) instead of temporary
# folders, so that a caller that stops this script early still has them (tools/gpu-check-lab.sh).
if [ -n "${GPULAB_CHECK_DIR:-}" ]; then
  LOGS=$GPULAB_CHECK_DIR/logs RESULTS=$GPULAB_CHECK_DIR/results
  mkdir -p "$LOGS" "$RESULTS"
else
  LOGS=$(mktemp -d) RESULTS=$(mktemp -d)
fi
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 GPULAB_RESULTS="$RESULTS" NCCL_NVLS_ENABLE=0
# The device machine gets the tree without .git: pass GPULAB_COMMIT=<hash> there.
export GPULAB_COMMIT=${GPULAB_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
steps=${*:-build test sanitize fuzz mutation main bench}
# Sanitizer runs at once: each is mostly host-side instrumentation work.
PARALLEL=${GPULAB_CHECK_JOBS:-$(($(nproc) / 2 > 0 ? $(nproc) / 2 : 1))}
status=0
: >"$LOGS/steps.txt"
# Every invocation names its device and driver, whichever steps it runs.
nvidia-smi >"$LOGS/nvidia-smi.txt" 2>&1

# Stopped (gpu-check-lab.sh's time limits send SIGINT), the runs started in the background stop
# too: they ignore SIGINT (bash's rule for background jobs), and sanitizer runs left going slowed
# the next device call's benchmarks.
# shellcheck disable=SC2317 # reached from the trap
kill_tree() { # pid: its descendants first, then itself
  local child
  for child in $(pgrep -P "$1"); do kill_tree "$child"; done
  kill -TERM "$1" 2>/dev/null
}
# shellcheck disable=SC2317 # reached from the trap
stop_background() {
  local pid
  touch "$LOGS/sanitize-monitor.stop"
  for pid in $(jobs -pr); do kill_tree "$pid"; done
  wait
  echo "STOPPED (signal): the background runs were ended" >>"$LOGS/steps.txt"
  exit 130
}
trap stop_background INT TERM

run() { # name, command...: runs it, logs it, records PASS/FAIL with its seconds
  local name=$1
  shift
  local t0=$SECONDS
  if "$@" >"$LOGS/$name.log" 2>&1; then
    echo "PASS $name ($((SECONDS - t0)) s)" >>"$LOGS/steps.txt"
  else
    echo "FAIL $name ($((SECONDS - t0)) s): see logs.tar.gz/$name.log" >>"$LOGS/steps.txt"
  fi
}

show() { # name: the step's verdict and the end of its log
  grep " $1 (" "$LOGS/steps.txt"
  tail -n 12 "$LOGS/$1.log"
}

sanitizer_options() { # tool
  # memcheck: room after every allocation, so that an overrun can't land in a neighbour.
  [ "$1" = memcheck ] && echo "--padding 512"
  # racecheck: cuSPARSE's csrmv_v3_kernel reports shared-memory write-write hazards inside
  # NVIDIA's own code (docs/labs/sparse.md); we cannot change it, and our kernels stay
  # in. memcheck, initcheck and synccheck still run over cuSPARSE.
  [ "$1" = racecheck ] && echo "--kernel-name-exclude kns=cusparse"
}

# While the sanitizer runs go: every 15 s the host's load and each GPU's utilization, to tell
# whether the step waits on the CPUs or the GPUs. It ends with the step, or with this script.
sanitize_monitor() {
  local tick=0 gpus
  while kill -0 $$ 2>/dev/null && [ ! -e "$LOGS/sanitize-monitor.stop" ]; do
    if [ $((tick++ % 15)) -eq 0 ]; then
      gpus=$(nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits 2>/dev/null)
      echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) gpu% $(echo "$gpus" | paste -sd/)"
    fi
    sleep 1
  done >>"$LOGS/sanitize-monitor.txt" 2>&1
}

driver_options() { # tool
  # racecheck and synccheck look inside kernels only: the NumPy path adds nothing for them.
  case $1 in racecheck | synccheck) echo "--inputs device" ;; esac
}

for step in $steps; do
  case $step in
  build)
    run build python3 -m pip install --no-build-isolation --no-deps -v -e .
    show build
    run import python3 -c "import gpulab as gl; print(gl.build_info()); print(gl.device_info())"
    show import
    ;;
  test)
    # The full fuzz is the fuzz step's, with its log: not twice. GPULAB_TEST_SHARDS=n runs the
    # suite as n processes at once (tests/conftest.py's GPULAB_SHARD), their logs one after
    # another in pytest.log and one verdict, FAIL if any shard fails. --durations: every test
    # of 1 s or more, which tools/test_durations.py turns into tests/durations.json, the costs
    # that the shards are dealt by; and the slowest are where a shorter suite would start.
    shards=${GPULAB_TEST_SHARDS:-1}
    if [ "$shards" -le 1 ]; then
      run pytest python3 -m pytest -q -rs --durations=0 --durations-min=1 \
        --deselect tests/core/test_fuzz.py::test_fuzz_full
    else
      # Each shard's OpenMP threads a share of the cores: 4 shards of 16 spinning threads each
      # made every openmp_radix test take 10-15 s (on the H100).
      omp=$(($(nproc) / shards))
      [ "$omp" -ge 1 ] || omp=1
      for k in $(seq 0 $((shards - 1))); do
        run "pytest-$k" env GPULAB_SHARD="$k/$shards" OMP_NUM_THREADS="$omp" \
          python3 -m pytest -q -rs --durations=0 --durations-min=1 \
          --deselect tests/core/test_fuzz.py::test_fuzz_full &
      done
      wait
      for k in $(seq 0 $((shards - 1))); do cat "$LOGS/pytest-$k.log"; done >"$LOGS/pytest.log"
      python3 tools/pytest_totals.py "$LOGS"/pytest-*.log >>"$LOGS/pytest.log"
    fi
    show pytest
    ;;
  sanitize)
    # A driver that declares SANITIZE_SHARDS = n runs as n processes a tool (--shard k/n, logs
    # sanitize-<tool>-<driver>.<k>.log); the most sharded, the longest, start first.
    for driver in tools/sanitize/[a-z]*.py; do
      shards=$(sed -n 's/^SANITIZE_SHARDS = \([0-9]*\)$/\1/p' "$driver")
      echo "${shards:-1} $driver"
    done | sort -s -k1,1nr >"$LOGS/sanitize-order.txt"
    # Several GPUs (CUDA_VISIBLE_DEVICES unset): the runs take turns over them, except a driver
    # that declares SANITIZE_ALL_GPUS = True (multi.py), which sees them all.
    ngpus=0
    [ -z "${CUDA_VISIBLE_DEVICES+x}" ] && ngpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
    rm -f "$LOGS/sanitize-monitor.stop"
    sanitize_monitor >/dev/null 2>&1 &
    disown
    runs=0
    while read -r shards driver; do
      name=$(basename "$driver" .py)
      [ -n "${GPULAB_SANITIZE:-}" ] && [[ " $GPULAB_SANITIZE " != *" $name "* ]] && continue
      for tool in memcheck initcheck racecheck synccheck; do
        for k in $(seq 0 $((shards - 1))); do
          suffix="" && [ "$shards" -gt 1 ] && suffix=".$k"
          while [ "$(jobs -rp | wc -l)" -ge "$PARALLEL" ]; do wait -n; done
          gpu=()
          [ "${ngpus:-0}" -gt 1 ] && ! grep -q '^SANITIZE_ALL_GPUS = True$' "$driver" &&
            gpu=("CUDA_VISIBLE_DEVICES=$((runs % ngpus))")
          runs=$((runs + 1))
          # shellcheck disable=SC2046 # the options are words
          run "sanitize-$tool-$name$suffix" \
            env ${gpu[@]+"${gpu[@]}"} GPULAB_EXACT_ALLOC=1 GPULAB_SANITIZER_TOOL="$tool" \
            compute-sanitizer --tool "$tool" --error-exitcode 1 $(sanitizer_options "$tool") \
            python3 "$driver" $(driver_options "$tool") --shard "$k/$shards" &
        done
      done
    done <"$LOGS/sanitize-order.txt"
    wait
    touch "$LOGS/sanitize-monitor.stop"
    grep " sanitize-" "$LOGS/steps.txt" | sort
    ;;
  fuzz)
    run fuzz python3 tools/fuzz_ops.py --calls 100000 --seed 2  # test_fuzz_full's
    show fuzz
    ;;
  mutation)
    run mutation python3 tools/mutation_check.py --out "$RESULTS/mutation_check.json" \
      ${GPULAB_PLANTS:+--only "$GPULAB_PLANTS"}
    show mutation
    ;;
  main)
    run mainjob python3 -m gpulab --json "$RESULTS/mainjob.json" --html "$RESULTS/report.html"
    show mainjob
    # The roofline of the main job's results, beside its JSON.
    run roofline python3 -c "import sys, gpulab as gl; \
gl.roofline(sys.argv[1], where='gpu').savefig(sys.argv[2], dpi=110, bbox_inches='tight')" \
      "$RESULTS/mainjob.json" "$RESULTS/roofline.png"
    show roofline
    run notebooks python3 tools/run_notebooks.py
    show notebooks
    ;;
  bench)
    for script in benchmarks/[a-z]*.py; do
      name=$(basename "$script" .py)
      [ "$name" = common ] && continue
      [ -n "${GPULAB_BENCH:-}" ] && [[ " $GPULAB_BENCH " != *" $name "* ]] && continue
      if [ -n "${GPULAB_BASELINE:-}" ] && [ -f "$GPULAB_BASELINE/benchmarks/$name.py" ]; then
        mkdir -p "$RESULTS/baseline"
        run "baseline-$name" env -C "$GPULAB_BASELINE" GPULAB_RESULTS="$RESULTS/baseline" \
          GPULAB_COMMIT="${GPULAB_BASELINE_COMMIT:-baseline}" PYTHONPATH="$GPULAB_BASELINE" \
          python3 "benchmarks/$name.py"
        show "baseline-$name"
      fi
      run "bench-$name" python3 "$script"
      show "bench-$name"
    done
    if [ -n "${GPULAB_BASELINE:-}" ]; then
      run compare python3 tools/compare_benchmarks.py "$RESULTS/baseline" "$RESULTS" \
        --out "$RESULTS/move_comparison.json"
      show compare
    fi
    ;;
  *) echo "unknown step $step" && exit 2 ;;
  esac
done

echo "== summary"
cat "$LOGS/steps.txt"
grep -q "^FAIL" "$LOGS/steps.txt" && status=1
python3 tools/gpu_check_summary.py "$LOGS" "$OUT/gpu_check.json" $steps
tar -czf "$OUT/results.tar.gz" -C "$RESULTS" .
tar -czf "$OUT/logs.tar.gz" -C "$LOGS" .
exit $status
