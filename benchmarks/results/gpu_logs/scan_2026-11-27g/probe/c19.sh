#!/usr/bin/env bash
# session 8, call 1 (prepared in session 7): part of the tile held in registers besides the
# staged part (resident bytes a SM 208 -> 216-264 KiB), beside k_base (main's 128 x 8 with the
# bulk copy); then the two scan plants at main.
set -u
START=$(date +%s)
R=$OUT/r; mkdir -p $R/logs $R/results
export TMPDIR=/tmp/gc GPULAB_RESULTS=$R/results GPULAB_COMMIT=${GPULAB_COMMIT:-unknown} PYTHONPATH=$PWD PYTHONUNBUFFERED=1; mkdir -p $TMPDIR
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/logs/ab.log
B=.scratch/p7/bin
K="k_base k_128s8r1 k_256s9r0 k_256s9r2 k_256s10r1 k_256s10r3"
for k in 17 20 26; do for e in $K; do timeout -s KILL 30 $B/$e $k f32 $e >> $R/logs/small.log 2>&1 || echo "$e exit $?" >> $R/logs/small.log; done; done
grep -v "^probe: [0-9]" $R/logs/small.log | cut -c1-110
for rep in 1 2 3; do for e in $K; do
  timeout -s KILL 40 $B/$e 28 f32 $e >> $R/logs/ab.log 2>&1 || echo "$e exit $?" >> $R/logs/ab.log; done; done
echo "== l_256s9r2" >> $R/logs/timing.log; timeout -s KILL 40 $B/l_256s9r2 28 f32 l_256s9r2 >> $R/logs/timing.log 2>&1
grep "blocks a SM" $R/logs/ab.log | sort | uniq -c
grep -v "^probe: " $R/logs/ab.log | awk '{print $1, $2, $4, $6, $12}' | sort | awk '{k=$1" "$2" "$3; a[k]=a[k]" "$4"/"$5} END {for (k in a) print k, a[k]}' | sort
grep -E "timing:|variant5" $R/logs/timing.log | sed 's/timing: //' | cut -c1-150
echo "probes done at $(( $(date +%s) - START )) s"
rm -rf .scratch/p7/bin
timeout -s KILL 300 python3 tools/mutation_check.py --only scan-write-past-end,scan-stage-partial-tile --run-timeout 120 --out $R/results/mutation_check_session8.json > $R/logs/mutation.log 2>&1; echo "mutation: exit $? at $(( $(date +%s) - START )) s"; tail -n 6 $R/logs/mutation.log | cut -c1-250
tar -czf $OUT/call.tar.gz -C $R .
