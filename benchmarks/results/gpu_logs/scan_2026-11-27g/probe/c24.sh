#!/usr/bin/env bash
# session 8, call 8: int32 sums on 256 x 6 and the CUB rung's tuned int32 sum: scan_lab alone, then at once
# the four sanitizers over the scan driver's variant 5 and look-back compactions, the scan tests,
# the three scan plants (exact allocation).
set -u
START=$(date +%s); DEADLINE=$((START + ${LIMIT:-560}))
left() { echo $((DEADLINE - $(date +%s))); }
R=$OUT/r; mkdir -p $R/logs $R/results
export TMPDIR=/tmp/gc GPULAB_RESULTS=$R/results GPULAB_COMMIT=${GPULAB_COMMIT:-unknown} PYTHONPATH=$PWD PYTHONUNBUFFERED=1; mkdir -p $TMPDIR
step() { local name=$1 s=$2; shift 2; local l=$(( $(left) - 12 )); [ $s -gt $l ] && s=$l
  if [ $s -lt 10 ]; then echo "$name: skipped (no time)"; return; fi
  timeout -s KILL $s "$@" > $R/logs/$name.log 2>&1; echo "$name: exit $? at $(( $(date +%s) - START )) s"; tail -n ${TAILN:-3} $R/logs/$name.log | cut -c1-300; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
TAILN=4 step scan_lab 120 python3 benchmarks/scan_lab.py --repeat 20 --log2n 28
grep -E " decoupled_lookback | cub " $R/logs/scan_lab.log | head -12 | cut -c1-200
san() { local tool=$1 drv=$2; shift 2; local opt="" in=""; [ $tool = memcheck ] && opt="--padding 512"; case $tool in racecheck|synccheck) in="--inputs device";; esac
  GPULAB_EXACT_ALLOC=1 GPULAB_SANITIZER_TOOL=$tool compute-sanitizer --tool $tool --error-exitcode 1 $opt python3 tools/sanitize/$drv.py $in "$@"; }
export -f san
ONLY=scan:5,scan:6
for t in memcheck initcheck racecheck synccheck; do TAILN=3 step $t-scan 300 bash -c "san $t scan --only $ONLY" & done
TAILN=8 step mutation 400 python3 tools/mutation_check.py --only scan-write-past-end,scan-stage-partial-tile,scan-aggregate-before-barrier --run-timeout 200 --out $R/results/mutation_check_session8c.json &
TAILN=3 step pytest-scan 300 env OMP_NUM_THREADS=4 python3 -m pytest -q -rs -p no:cacheprovider tests/labs/test_scan.py -k "not emulated_on_the_cpu" &
wait
tar -czf $OUT/call.tar.gz -C $R .
