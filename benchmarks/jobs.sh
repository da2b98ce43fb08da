#!/usr/bin/env bash
# benchmarks/jobs.sh TAG N [PART...], from the checkout on a host of N GPUs: "calibrate"
# (the interconnect's roof over every GPU), the data-parallel jobs of examples/apps under
# `torchrun --standalone --nproc_per_node=N` ("ddp": DDP over NCCL, "fsdp": FSDP2), each
# plain, profiled (--no-counter-cache, so pass 2 runs; its lines stamped with the time, its
# logs kept) and plain again, and "all": the bundled families spread over every GPU (`run
# --devices all`). No PART: all four. Times go to OUT/times.log (OUT: /tmp/jobs), the
# calibration and profiles to OUT/TAG-*.
set -u
tag=$1; n=$2; shift 2; parts=${*:-calibrate ddp fsdp all}; out=${OUT:-/tmp/jobs}
for part in $parts; do
  case $part in calibrate|ddp|fsdp|all) ;; *) echo "jobs.sh: no part '$part' (calibrate, ddp, fsdp, all)" >&2; exit 2 ;; esac
done
mkdir -p "$out/logs"
# NVLink multicast off, in every program launched on these hosts
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export COLUMNS=140 PYTHONUNBUFFERED=1
timed() { local name=$1; shift; local t0=$EPOCHREALTIME; timeout 400 "$@"; local rc=$?; echo "TIME $name $(python3 -c "print(round($EPOCHREALTIME - $t0, 2))") s rc=$rc" | tee -a "$out/times.log"; }
stamped() { while IFS= read -r line; do echo "$EPOCHREALTIME $line"; done; }
calibrate() { timed calibrate python3 -m rooflint calibrate --json "$out/$tag-calibration.json" > "$out/$tag-calibration.txt" 2>&1; }
job() {   # NAME ARGS...: plain, profiled, plain again
  local name=$1; shift
  timed plain-$name "$@" > "$out/logs/plain-$name-1.txt" 2>&1
  echo "$EPOCHREALTIME start" > "$out/logs/profile-$name.stamped"
  timed profile-$name python3 -m rooflint profile --no-counter-cache --logs "$out/logs/$name" --json "$out/$tag-profile-$name.json" -- "$@" 2>&1 > "$out/$tag-profile-$name.txt" | stamped >> "$out/logs/profile-$name.stamped"
  cat "$out/logs/profile-$name.stamped"
  timed plain-$name "$@" > "$out/logs/plain-$name-2.txt" 2>&1
}
ddp() { (cd examples/apps && job ddp-nccl torchrun --standalone --nproc_per_node="$n" ddp_train.py --steps 10); }
fsdp() { (cd examples/apps && job fsdp torchrun --standalone --nproc_per_node="$n" fsdp_train.py --steps 5); }
all() {
  timed run-devices-all python3 -m rooflint run --devices all --summary --json "$out/$tag-all.json" > "$out/$tag-all.txt" 2>&1
  tail -3 "$out/$tag-all.txt"
}
for part in $parts; do $part; done
