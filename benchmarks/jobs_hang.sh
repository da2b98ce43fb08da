#!/usr/bin/env bash
# benchmarks/jobs_hang.sh N, from the checkout on a host of N GPUs (four: 2026-11-30's hang):
# where the FSDP2 job's pass 2 stops with N ranks. Each step has its own limit; OUT/hang
# (OUT: /tmp) keeps the outputs and NCCL's logs.
# 1. rooflint as it is, NCCL's calls logged in pass 2 too (each rank's last call), a process
#    snapshot in pass 2, and its selection and counter list kept for 4;
# 2. the same with pass 2's kernels GEMMs alone (--kernel nvjet): the selection, or not;
# 3. the job without --standalone: pass 2 under one ncu around torchrun, not attached;
# 4. every rank under its own plain `ncu --mode launch`, 1's selection and counter list, GPU
#    0 profiled: rooflint's attach and bootstrap, or ncu with those kernels and counters.
set -u
n=${1:?how many ranks}; out=${OUT:-/tmp}/hang
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
job=(fsdp_train.py --steps 5)
cd examples/apps
elapsed() { python3 -c "import sys, time; print(round(time.time() - float(sys.argv[1]), 1))" "$1"; }
clean() { pkill -9 -f fsdp_train.py; pkill -9 -f "ncu --mode"; sleep 2; }
snapshot() { sleep "$1"; ps -eo pid,ppid,pgid,sid,stat,etimes,args | grep -E "[n]cu|[f]sdp_train" | cut -c1-300 > "$2"; }
( snapshot 80 "$out/1-ps.txt" ) &
t0=$(date +%s.%N)
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL NCCL_DEBUG_FILE="$out/1-nccl.%p.log" timeout -s KILL 120 \
  python3 -m rooflint profile --no-counter-cache --json "$out/1.json" -- \
  torchrun --standalone --nproc_per_node="$n" "${job[@]}" > "$out/1.txt" 2>&1
echo "1 as it is: rc=$? $(elapsed "$t0") s"; clean
for log in "$out"/1-nccl.*.log; do echo "$(basename "$log") $(grep -c opCount "$log") calls, last: $(grep opCount "$log" | tail -1 | cut -c1-90)"; done
t0=$(date +%s.%N)
timeout -s KILL 100 python3 -m rooflint profile --no-counter-cache --kernel nvjet --json "$out/2.json" -- \
  torchrun --standalone --nproc_per_node="$n" "${job[@]}" > "$out/2.txt" 2>&1
echo "2 GEMMs alone: rc=$? $(elapsed "$t0") s"; clean
t0=$(date +%s.%N)
timeout -s KILL 120 python3 -m rooflint profile --no-counter-cache --json "$out/3.json" -- \
  torchrun --nproc_per_node="$n" "${job[@]}" > "$out/3.txt" 2>&1
echo "3 not standalone: rc=$? $(elapsed "$t0") s"; clean
selection=$(python3 -c "import json, shlex; print(shlex.join(json.load(open('$out/1.json'))['settings']['pass2_selection']))" 2>/dev/null)
metrics=$(python3 -c "from rooflint.measure import ncu; print(','.join(ncu.metrics_for(['bf16-tensor'], None)))")
cat > "$out/rank.sh" <<RANK
exec ncu --clock-control none --cache-control all --metrics $metrics $selection --csv --log-file $out/4-rank\$LOCAL_RANK.csv python3 "\$@"
RANK
t0=$(date +%s.%N)
timeout -s KILL 120 torchrun --standalone --nproc_per_node="$n" --no-python bash "$out/rank.sh" "${job[@]}" > "$out/4.txt" 2>&1
echo "4 every rank under plain ncu, rooflint's selection: rc=$? $(elapsed "$t0") s"; clean
wc -l "$out"/4-rank*.csv
