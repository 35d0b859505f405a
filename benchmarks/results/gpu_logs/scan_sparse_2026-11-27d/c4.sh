#!/usr/bin/env bash
# session 5, call 4: scan_lab (counted_staged with variant 5 scanning the counts, 5 blocks), ncu of the compaction; the mutation check first among the rest, tests, sanitizers over compact 4
set -u
START=$(date +%s); DEADLINE=$((START + ${LIMIT:-560}))
left() { echo $((DEADLINE - $(date +%s))); }
R=$OUT/r; mkdir -p $R/logs $R/results
export TMPDIR=/tmp/gc GPULAB_RESULTS=$R/results GPULAB_COMMIT=${GPULAB_COMMIT:-unknown} PYTHONPATH=$PWD PYTHONUNBUFFERED=1; mkdir -p $TMPDIR
step() { local name=$1 s=$2; shift 2; local l=$(( $(left) - 12 )); [ $s -gt $l ] && s=$l
  if [ $s -lt 10 ]; then echo "$name: skipped (no time)"; return; fi
  timeout -s KILL $s "$@" > $R/logs/$name.log 2>&1; echo "$name: exit $? at $(( $(date +%s) - START )) s"; tail -n ${TAILN:-3} $R/logs/$name.log | cut -c1-300; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
TAILN=28 step scan_lab 150 python3 benchmarks/scan_lab.py --repeat 20 --log2n 28
NCU="ncu --profile-from-start off --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats --metrics dram__bytes_read.sum,dram__bytes_write.sum"
TAILN=2 step ncu_compact 100 $NCU python3 .scratch/p3/compact_ncu.py
san() { local tool=$1 drv=$2 only=$3 opt="" in=""; [ $tool = memcheck ] && opt="--padding 512"; case $tool in racecheck|synccheck) in="--inputs device";; esac
  GPULAB_EXACT_ALLOC=1 GPULAB_SANITIZER_TOOL=$tool compute-sanitizer --tool $tool --error-exitcode 1 $opt --kernel-name-exclude kns=cusparse python3 tools/sanitize/$drv.py $in --only $only; }
export -f san
for t in memcheck initcheck racecheck synccheck; do TAILN=3 step $t-compact4 400 bash -c "san $t scan compact:4,nonzero:4" & done
TAILN=2 step pytest 300 env OMP_NUM_THREADS=2 python3 -m pytest -q -rs -p no:cacheprovider -k "not emulated_on_the_cpu and not emulation_catches" tests/labs/test_scan.py tests/core/test_inspect.py &
TAILN=14 step mutation 480 python3 tools/mutation_check.py --only compact-counted-mask-vector-past-end,sparse-cg-dia-slot-one-past,sparse-dia-offsets-missing-syncthreads --out $R/results/mutation_check_session5.json &
wait
tar -czf $OUT/call.tar.gz -C $R .
