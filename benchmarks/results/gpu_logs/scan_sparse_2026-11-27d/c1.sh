#!/usr/bin/env bash
# session 5, call 1: scan A/B (main vs scan-tiles variant 5, CUB beside), scan_lab with the merged
# branch, power-law SpMV timings (csr_subwarp's first) and ncu of SpMV and compaction.
set -u
START=$(date +%s); DEADLINE=$((START + ${LIMIT:-560}))
left() { echo $((DEADLINE - $(date +%s))); }
R=$OUT/r; mkdir -p $R/logs $R/results
export TMPDIR=/tmp/gc GPULAB_RESULTS=$R/results GPULAB_COMMIT=${GPULAB_COMMIT:-unknown} PYTHONPATH=$PWD PYTHONUNBUFFERED=1; mkdir -p $TMPDIR
step() { local name=$1 s=$2; shift 2; local l=$(( $(left) - 12 )); [ $s -gt $l ] && s=$l
  if [ $s -lt 10 ]; then echo "$name: skipped (no time)"; return; fi
  timeout -s KILL $s "$@" > $R/logs/$name.log 2>&1; echo "$name: exit $? at $(( $(date +%s) - START )) s"; tail -n ${TAILN:-3} $R/logs/$name.log | cut -c1-300; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ab() { for c in "26 f32" "28 f32" "28 i32"; do for r in 1 2; do for v in main tiles; do .scratch/p1/scan_$v $c $v; done; done; done; }
export -f ab
TAILN=30 step scan_ab 120 bash -c ab
TAILN=25 step scan_lab 150 python3 benchmarks/scan_lab.py --repeat 20 --log2n 28
TAILN=20 step spmv_time 120 python3 .scratch/p1/spmv_time.py
NCU="ncu --profile-from-start off --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
TAILN=5 step ncu_spmv 150 $NCU python3 .scratch/p1/spmv_ncu.py
TAILN=5 step ncu_compact 120 $NCU python3 .scratch/p1/compact_ncu.py
tar -czf $OUT/call.tar.gz -C $R .
