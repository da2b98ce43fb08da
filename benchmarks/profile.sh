#!/usr/bin/env bash
# One GPU call (benchmarks/profile.sh TAG, from the checkout): calibrate; profile the
# training step (eager and compiled), the transformer block (eager and compiled), the
# Triton and CuPy programs; time each plain program beside its profile, and ncu --set full
# on the same kernels as pass 2 (one launch of each launch shape), all in this one run.
set -u
tag=$1; out=/tmp/prof; mkdir -p $out/logs
timed() { local name=$1; shift; local t0=$EPOCHREALTIME; timeout 300 "$@"; local rc=$?; echo "TIME $name $(python3 -c "print(round($EPOCHREALTIME - $t0, 2))") s rc=$rc" | tee -a $out/times.log; }
export COLUMNS=120 PYTHONUNBUFFERED=1
timed calibrate python3 -m rooflint calibrate -o $out/$tag-calibration.json > $out/$tag-calibration.txt 2>&1
profile() {   # NAME ARGS...: the plain program, then rooflint profile of it
  local name=$1; shift
  timed plain-$name "$@" > /dev/null 2>&1
  timed profile-$name python3 -m rooflint profile --nvtx timed --json $out/$tag-profile-$name.json -- "$@" > $out/$tag-profile-$name.txt 2>&1
  head -4 $out/$tag-profile-$name.txt
}
profile train-eager python3 examples/apps/train_step.py
selection=$(python3 -c "
import json
from rooflint.measure.application import Filters, _selection
print(' '.join(_selection(Filters(), json.load(open('$out/$tag-profile-train-eager.json'))['settings']['pass2_kernels'])))")
timed full-set-train-eager ncu --clock-control none --set full $selection --log-file $out/logs/full-set.txt python3 examples/apps/train_step.py > /dev/null 2>&1
grep -c "^  Section: Launch Statistics" $out/logs/full-set.txt | sed 's/^/full-set launches: /'
profile train-compiled python3 examples/apps/train_step.py --compile
profile block-eager python3 examples/apps/transformer_block.py
profile block-compiled python3 examples/apps/transformer_block.py --compile
python3 -m rooflint compare $out/$tag-profile-block-eager.json $out/$tag-profile-block-compiled.json > $out/$tag-profile-compare.txt 2>&1; echo compare rc=$?
profile triton python3 examples/apps/triton_softmax.py
profile cupy python3 examples/apps/cupy_pipeline.py
pgrep -af "ncu.*--mode launch" || echo "no program left waiting for ncu"
cp $out/times.log $out/$tag-times.txt
tar -czf $OUT/$tag-profile.tgz -C $out --exclude logs .
