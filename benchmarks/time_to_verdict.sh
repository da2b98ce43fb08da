#!/usr/bin/env bash
# The figures of issue 13's table in one GPU call (benchmarks/time_to_verdict.sh TAG, from
# the checkout; TAG names the GPU, e.g. h100): each rooflint figure (wall time of the
# whole command, second run so builds are cached) beside ncu --set full on the same
# launches. With more than one GPU visible, all bundled families on all of them too.
set -u
tag=$1; out=/tmp/ttv; mkdir -p $out
timed() { local name=$1; shift; local t0=$EPOCHREALTIME; timeout 500 "$@" > $out/$name.txt 2>&1; local rc=$?; echo "TIME $name $(python3 -c "print(round($EPOCHREALTIME - $t0, 2))") s rc=$rc" | tee -a $out/times.log; }
export COLUMNS=120
timed warm-caches python3 -m rooflint run --counters off
timed one-variant-off python3 -m rooflint run stream copy_float4 --counters off
timed one-variant-on python3 -m rooflint run stream copy_float4 --counters ncu
timed stream-on python3 -m rooflint run stream --counters ncu --timings --json $out/$tag-stream.json
timed all-on python3 -m rooflint run --counters ncu --timings --json $out/$tag-all.json
for family in $(python3 -c "from rooflint.manifest import bundled_manifests as b; print(' '.join(p.parent.name for p in b()))"); do
  timed family-$family python3 -m rooflint run $family --counters ncu
  timed full-set-$family python3 benchmarks/full_set.py $family
done
gpus=$(nvidia-smi -L | wc -l)
if [ "$gpus" -gt 1 ]; then
  timed all-on-devices-$gpus python3 -m rooflint run --counters ncu --devices all --timings --json $out/$tag-all-devices.json
fi
cat $out/times.log
tar -czf $OUT/$tag-time-to-verdict.tgz -C $out .
