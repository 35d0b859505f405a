#!/usr/bin/env bash
# session 7, call 5: tile shapes with the bulk loads; the four sanitizers over the bulk-load probe.
set -u
R=$OUT/r; mkdir -p $R/logs
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/logs/ab.log
B=.scratch/p7/bin
for k in 17 20 26; do for e in j_t128r7 j_t128r8 j_t256r6 j_t64r12; do timeout -s KILL 30 $B/$e $k f32 $e >> $R/logs/small.log 2>&1 || echo "$e exit $?" >> $R/logs/small.log; done; done
grep -v "^probe: [0-9]" $R/logs/small.log | cut -c1-110
for t in memcheck initcheck racecheck synccheck; do for k in 20 22; do echo "== $t 2^$k" >> $R/logs/sanitize.log
  timeout -s KILL 120 compute-sanitizer --tool $t --error-exitcode 1 $B/j_tma $k f32 j_tma >> $R/logs/sanitize.log 2>&1; echo "$t 2^$k exit $?" | tee -a $R/logs/sanitize.log; done; done
grep -E "ERROR SUMMARY|RACECHECK SUMMARY|exit" $R/logs/sanitize.log | head -20
for rep in 1 2 3; do for e in j_base j_tma j_t128r7 j_t128r8 j_t256r6 j_t64r12; do
  timeout -s KILL 40 $B/$e 28 f32 $e >> $R/logs/ab.log 2>&1 || echo "$e exit $?" >> $R/logs/ab.log; done; done
grep "blocks a SM" $R/logs/ab.log | sort | uniq -c
grep -v "^probe: " $R/logs/ab.log | awk '{print $1, $2, $4, $6, $12}' | sort | awk '{k=$1" "$2" "$3; a[k]=a[k]" "$4"/"$5} END {for (k in a) print k, a[k]}' | sort
tar -czf $OUT/call.tar.gz -C $R .
