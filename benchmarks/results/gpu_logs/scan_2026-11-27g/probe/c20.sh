#!/usr/bin/env bash
# session 8, call 2: tile shapes around 256 x 9 (call 1's best), and the look-back delays at it.
set -u
START=$(date +%s)
R=$OUT/r; mkdir -p $R/logs
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/logs/ab.log
B=.scratch/p7/bin
K="k_base k_256s9r0 k_256s8r0 k_256s10r0 k_256s11r0 k_128s16r0 k_128s18r0 k_384s6r0 k_512s4r0 k_512s5r0 k_256s9i2000 k_256s9i600 k_256s9t400"
for k in 17 20 25; do for e in $K; do timeout -s KILL 30 $B/$e $k f32 $e >> $R/logs/small.log 2>&1 || echo "$e exit $?" >> $R/logs/small.log; done; done
grep -v "^probe: [0-9]" $R/logs/small.log | grep -v " ok " | cut -c1-110
echo "small: $(grep -c ' ok ' $R/logs/small.log) ok"
for rep in 1 2 3; do for e in $K; do
  timeout -s KILL 40 $B/$e 28 f32 $e >> $R/logs/ab.log 2>&1 || echo "$e exit $?" >> $R/logs/ab.log; done; done
grep "blocks a SM" $R/logs/ab.log | sort | uniq -c
grep -v "^probe: " $R/logs/ab.log | grep 2^28 | awk '{print $1, $4, $6, $15, $22}' | sort | awk '{k=$1; a[k]=a[k]" "$3"|"$4"|"$5} END {for (k in a) print k, a[k]}' | sort
echo "probes done at $(( $(date +%s) - START )) s"
tar -czf $OUT/call.tar.gz -C $R .
