#!/usr/bin/env bash
# session 8, call 9: the whole suite in 8 shards at the final commit (emulations and the full fuzz
# left to CI); the sanitizers over the changed variants ran in call 8.
set -u
START=$(date +%s); DEADLINE=$((START + ${LIMIT:-560}))
left() { echo $((DEADLINE - $(date +%s))); }
R=$OUT/r; mkdir -p $R/logs $R/results
export TMPDIR=/tmp/gc GPULAB_RESULTS=$R/results GPULAB_COMMIT=${GPULAB_COMMIT:-unknown} PYTHONPATH=$PWD PYTHONUNBUFFERED=1; mkdir -p $TMPDIR
step() { local name=$1 s=$2; shift 2; local l=$(( $(left) - 12 )); [ $s -gt $l ] && s=$l
  if [ $s -lt 10 ]; then echo "$name: skipped (no time)"; return; fi
  timeout -s KILL $s "$@" > $R/logs/$name.log 2>&1; echo "$name: exit $? at $(( $(date +%s) - START )) s"; tail -n ${TAILN:-3} $R/logs/$name.log | cut -c1-300; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
san() { local tool=$1 drv=$2; shift 2; local opt="" in=""; [ $tool = memcheck ] && opt="--padding 512"; case $tool in racecheck|synccheck) in="--inputs device";; esac
  GPULAB_EXACT_ALLOC=1 GPULAB_SANITIZER_TOOL=$tool compute-sanitizer --tool $tool --error-exitcode 1 $opt python3 tools/sanitize/$drv.py $in "$@"; }
export -f san
# (the scan driver ran under all four tools in call 5 and call 8)
for k in 0 1 2 3 4 5 6 7; do TAILN=1 step pytest-$k 540 env GPULAB_SHARD=$k/8 OMP_NUM_THREADS=2 python3 -m pytest -q -rs -p no:cacheprovider --deselect tests/core/test_fuzz.py::test_fuzz_full -k "not emulated_on_the_cpu and not emulation_catches" & done
wait
grep -h "^FAILED" $R/logs/pytest-*.log | cut -c1-250 | head -20
tar -czf $OUT/call.tar.gz -C $R .
