#!/usr/bin/env bash
# session 5, call 2: cg ladder (dia_fused's first run), ncu of cg's passes, then at once: the
# sparse/scan tests, the four sanitizers over cg 4 and scan 5/6, the two DIA plants.
set -u
START=$(date +%s); DEADLINE=$((START + ${LIMIT:-560}))
left() { echo $((DEADLINE - $(date +%s))); }
R=$OUT/r; mkdir -p $R/logs $R/results
export TMPDIR=/tmp/gc GPULAB_RESULTS=$R/results GPULAB_COMMIT=${GPULAB_COMMIT:-unknown} PYTHONPATH=$PWD PYTHONUNBUFFERED=1; mkdir -p $TMPDIR
step() { local name=$1 s=$2; shift 2; local l=$(( $(left) - 12 )); [ $s -gt $l ] && s=$l
  if [ $s -lt 10 ]; then echo "$name: skipped (no time)"; return; fi
  timeout -s KILL $s "$@" > $R/logs/$name.log 2>&1; echo "$name: exit $? at $(( $(date +%s) - START )) s"; tail -n ${TAILN:-3} $R/logs/$name.log | cut -c1-300; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
TAILN=16 step cg_lab 150 python3 benchmarks/sparse_lab.py --cg-only --repeat 5
NCU="ncu --profile-from-start off --kernel-name regex:cg_dia_step|cg_update_r|cg_spmv_dot|cg_update_xr|cg_update_p --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct"
TAILN=2 step ncu_cg 90 $NCU python3 .scratch/p2/cg_ncu.py
san() { local tool=$1 drv=$2 only=$3 opt="" in=""; [ $tool = memcheck ] && opt="--padding 512"; case $tool in racecheck|synccheck) in="--inputs device";; esac
  GPULAB_EXACT_ALLOC=1 GPULAB_SANITIZER_TOOL=$tool compute-sanitizer --tool $tool --error-exitcode 1 $opt --kernel-name-exclude kns=cusparse python3 tools/sanitize/$drv.py $in --only $only; }
export -f san
for t in memcheck initcheck racecheck synccheck; do TAILN=3 step $t-cg4 400 bash -c "san $t sparse cg:4" & done
for t in memcheck initcheck racecheck synccheck; do TAILN=3 step $t-scan56 400 bash -c "san $t scan scan:5,scan:6" & done
S=3; for k in $(seq 0 $((S - 1))); do TAILN=2 step pytest-$k 400 env GPULAB_SHARD=$k/$S OMP_NUM_THREADS=2 python3 -m pytest -q -rs -p no:cacheprovider -k "not emulated_on_the_cpu and not emulation_catches" tests/labs/test_sparse_cg.py tests/labs/test_sparse.py tests/labs/test_scan.py tests/core/test_inspect.py tests/core/test_registry.py & done
TAILN=12 step mutation 420 python3 tools/mutation_check.py --only sparse-cg-dia-slot-one-past,sparse-dia-offsets-missing-syncthreads --out $R/results/mutation_check_dia.json &
wait
tar -czf $OUT/call.tar.gz -C $R .
