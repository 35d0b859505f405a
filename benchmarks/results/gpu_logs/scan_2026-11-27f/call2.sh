#!/usr/bin/env bash
# session 7, call 2: TMA loads/stores and helping, with timings.
set -u
R=$OUT/r; mkdir -p $R/logs
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/logs/ab.log
B=.scratch/p7/bin
for e in d_base d_help d_tma d_tmas d_tmash; do timeout -s KILL 30 $B/$e 20 f32 $e >> $R/logs/small.log 2>&1 || echo "$e exit $?" >> $R/logs/small.log; done
grep -v "^probe" $R/logs/small.log | cut -c1-60
for rep in 1 2 3; do for e in d_base d_tma d_tmas d_tmash d_help d_tmas_nolb; do
  timeout -s KILL 40 $B/$e 28 f32 $e >> $R/logs/ab.log 2>&1 || echo "$e exit $?" >> $R/logs/ab.log; done; done
for e in e_base e_tmas e_help e_nolb e_tmas_nolb; do echo "== $e" >> $R/logs/timing.log; timeout -s KILL 40 $B/$e 28 f32 $e >> $R/logs/timing.log 2>&1 || echo "$e exit $?" >> $R/logs/timing.log; done
grep -v "^probe: " $R/logs/ab.log | awk '{print $1, $2, $4, $6, $12}' | sort | awk '{k=$1" "$2" "$3; a[k]=a[k]" "$4"/"$5} END {for (k in a) print k, a[k]}' | sort
grep -E "^== |timing:|variant5" $R/logs/timing.log | sed 's/timing: //' | cut -c1-150
tar -czf $OUT/call.tar.gz -C $R .
