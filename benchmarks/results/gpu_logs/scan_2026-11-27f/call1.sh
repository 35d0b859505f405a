#!/usr/bin/env bash
# session 7, call 1: scan probes (timings, throttle, 64-thread tiles), then the two scan plants.
set -u
START=$(date +%s); DEADLINE=$((START + ${LIMIT:-560}))
left() { echo $((DEADLINE - $(date +%s))); }
R=$OUT/r; mkdir -p $R/logs $R/results
export TMPDIR=/tmp/gc GPULAB_RESULTS=$R/results GPULAB_COMMIT=${GPULAB_COMMIT:-unknown} PYTHONPATH=$PWD PYTHONUNBUFFERED=1; mkdir -p $TMPDIR
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/logs/ab.log
B=.scratch/p7/bin
for rep in 1 2 3; do for e in c_base c_thr3 c_thr5 c_thr8 c_thr11 c_s64r12 c_s64r8; do
  timeout -s KILL 60 $B/$e 28 f32 $e >> $R/logs/ab.log 2>&1 || echo "$e exit $?" >> $R/logs/ab.log; done; done
for e in t_base t_nolb t_thr6 t_s64r12; do echo "== $e" >> $R/logs/timing.log; timeout -s KILL 60 $B/$e 28 f32 $e >> $R/logs/timing.log 2>&1 || echo "$e exit $?" >> $R/logs/timing.log; done
echo "probes done at $(( $(date +%s) - START )) s"
grep -v "^probe: " $R/logs/ab.log | awk '{print $1, $2, $4, $6, $12}' | sort | awk '{k=$1" "$2" "$3; a[k]=a[k]" "$4"/"$5} END {for (k in a) print k, a[k]}' | sort
grep -E "^== |timing:|variant5" $R/logs/timing.log | cut -c1-160
rm -rf .scratch/p7/bin
l=$(( $(left) - 15 ))
timeout -s KILL $l python3 tools/mutation_check.py --only scan-write-past-end,scan-stage-partial-tile --run-timeout 200 --out $R/results/mutation_check_session7.json > $R/logs/mutation.log 2>&1; echo "mutation: exit $? at $(( $(date +%s) - START )) s"; tail -n 12 $R/logs/mutation.log | cut -c1-250
tar -czf $OUT/call.tar.gz -C $R .
