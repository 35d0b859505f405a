#!/usr/bin/env bash
# session 5, call 6: sparse_lab (the benchmark of record: SpMV, SpMM, cg with dia_fused), the
# pointer-chase test alone (it failed under call 5's load), then initcheck over the cuSPARSE rows
# without the kernel exclusion (call 5's initcheck left cuSPARSE's writes untracked).
set -u
START=$(date +%s); DEADLINE=$((START + ${LIMIT:-570}))
left() { echo $((DEADLINE - $(date +%s))); }
R=$OUT/r; mkdir -p $R/logs $R/results
export TMPDIR=/tmp/gc GPULAB_RESULTS=$R/results GPULAB_COMMIT=${GPULAB_COMMIT:-unknown} PYTHONPATH=$PWD PYTHONUNBUFFERED=1; mkdir -p $TMPDIR
step() { local name=$1 s=$2; shift 2; local l=$(( $(left) - 12 )); [ $s -gt $l ] && s=$l
  if [ $s -lt 10 ]; then echo "$name: skipped (no time)"; return; fi
  timeout -s KILL $s "$@" > $R/logs/$name.log 2>&1; echo "$name: exit $? at $(( $(date +%s) - START )) s"; tail -n ${TAILN:-3} $R/logs/$name.log | cut -c1-400; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
TAILN=3 step sparse_lab 420 python3 benchmarks/sparse_lab.py --repeat 10
TAILN=2 step chase 60 python3 -m pytest -q -p no:cacheprovider tests/labs/test_memory.py -k pointer_chase
TAILN=3 step initcheck-cusparse 120 env GPULAB_EXACT_ALLOC=1 GPULAB_SANITIZER_TOOL=initcheck compute-sanitizer --tool initcheck --error-exitcode 1 python3 tools/sanitize/sparse.py --only spmv:7,spmm:2
tar -czf $OUT/call.tar.gz -C $R .
