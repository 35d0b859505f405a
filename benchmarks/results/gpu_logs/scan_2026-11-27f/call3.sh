#!/usr/bin/env bash
# session 7, call 3: a wide walk, with and without bulk loads.
set -u
R=$OUT/r; mkdir -p $R/logs
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/logs/ab.log
B=.scratch/p7/bin
for k in 17 20 26; do for e in f_w4 f_w8 f_tw4 f_tw8; do timeout -s KILL 30 $B/$e $k f32 $e >> $R/logs/small.log 2>&1 || echo "$e exit $?" >> $R/logs/small.log; done; done
grep -v "^probe" $R/logs/small.log | cut -c1-110
for rep in 1 2 3; do for e in f_base f_tma f_w4 f_w8 f_tw4 f_tw8; do
  timeout -s KILL 40 $B/$e 28 f32 $e >> $R/logs/ab.log 2>&1 || echo "$e exit $?" >> $R/logs/ab.log; done; done
for e in g_w4 g_tw8; do echo "== $e" >> $R/logs/timing.log; timeout -s KILL 40 $B/$e 28 f32 $e >> $R/logs/timing.log 2>&1 || echo "$e exit $?" >> $R/logs/timing.log; done
grep -v "^probe: " $R/logs/ab.log | awk '{print $1, $2, $4, $6, $12}' | sort | awk '{k=$1" "$2" "$3; a[k]=a[k]" "$4"/"$5} END {for (k in a) print k, a[k]}' | sort
grep -E "^== |timing:|variant5" $R/logs/timing.log | sed 's/timing: //' | cut -c1-150
tar -czf $OUT/call.tar.gz -C $R .
