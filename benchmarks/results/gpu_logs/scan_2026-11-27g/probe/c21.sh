#!/usr/bin/env bash
# session 8, call 3: the tile total published before the rounds are scanned (EARLY_AGG), and 192 x 12.
set -u
START=$(date +%s)
R=$OUT/r; mkdir -p $R/logs
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/logs/ab.log
B=.scratch/p7/bin
K="k_base k_256s9r0 k_128s18r0 k_192s12r0 e_256s9 e_256s9i500 e_128s18 e_192s12 e_128s8"
for k in 17 20 25; do for e in $K; do timeout -s KILL 30 $B/$e $k f32 $e >> $R/logs/small.log 2>&1 || echo "$e exit $?" >> $R/logs/small.log; done; done
grep -v "^probe: [0-9]" $R/logs/small.log | grep -v " ok " | cut -c1-110
echo "small: $(grep -c ' ok ' $R/logs/small.log) ok"
for rep in 1 2 3 4; do for e in $K; do
  timeout -s KILL 40 $B/$e 28 f32 $e >> $R/logs/ab.log 2>&1 || echo "$e exit $?" >> $R/logs/ab.log; done; done
grep "blocks a SM" $R/logs/ab.log | sort | uniq -c
grep -v "^probe: " $R/logs/ab.log | grep 2^28 | awk '{print $1, $4, $6, $15, $22}' | sort | awk '{k=$1; a[k]=a[k]" "$3"|"$4"|"$5} END {for (k in a) print k, a[k]}' | sort
for t in t_k_256s9r0 t_e_256s9; do echo "== $t"; timeout -s KILL 40 $B/$t 28 f32 $t 2>&1 | grep -E "timing:" | sed "s/timing: //" | cut -c1-150; done
echo "probes done at $(( $(date +%s) - START )) s"
tar -czf $OUT/call.tar.gz -C $R .
