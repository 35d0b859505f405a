#!/usr/bin/env bash
# session 5, call 5: the whole suite (8 shards) beside the four sanitizers over the whole sparse
# and scan drivers, exact allocation.
set -u
START=$(date +%s); DEADLINE=$((START + ${LIMIT:-570}))
left() { echo $((DEADLINE - $(date +%s))); }
R=$OUT/r; mkdir -p $R/logs $R/results
export TMPDIR=/tmp/gc GPULAB_RESULTS=$R/results GPULAB_COMMIT=${GPULAB_COMMIT:-unknown} PYTHONPATH=$PWD PYTHONUNBUFFERED=1; mkdir -p $TMPDIR
step() { local name=$1 s=$2; shift 2; local l=$(( $(left) - 12 )); [ $s -gt $l ] && s=$l
  if [ $s -lt 10 ]; then echo "$name: skipped (no time)"; return; fi
  timeout -s KILL $s "$@" > $R/logs/$name.log 2>&1; echo "$name: exit $? at $(( $(date +%s) - START )) s"; tail -n ${TAILN:-3} $R/logs/$name.log | cut -c1-300; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
san() { local tool=$1 drv=$2 opt="" in=""; [ $tool = memcheck ] && opt="--padding 512"; case $tool in racecheck|synccheck) in="--inputs device";; esac
  GPULAB_EXACT_ALLOC=1 GPULAB_SANITIZER_TOOL=$tool compute-sanitizer --tool $tool --error-exitcode 1 $opt --kernel-name-exclude kns=cusparse python3 tools/sanitize/$drv.py $in; }
export -f san
for t in memcheck initcheck racecheck synccheck; do for d in sparse scan; do TAILN=3 step $t-$d 550 bash -c "san $t $d" & done; done
S=8; for k in $(seq 0 $((S - 1))); do TAILN=2 step pytest-$k 500 env GPULAB_SHARD=$k/$S OMP_NUM_THREADS=2 python3 -m pytest -q -rs -p no:cacheprovider --deselect tests/core/test_fuzz.py::test_fuzz_full -k "not emulated_on_the_cpu and not emulation_catches" & done
wait
tar -czf $OUT/call.tar.gz -C $R .
