#!/usr/bin/env bash
# One GPU call (benchmarks/profile.sh TAG, from the checkout): calibrate, profile the
# PyTorch example (eager and compiled), compare them,
# and time the plain program and ncu --set full on the same launches.
set -u
tag=$1; out=/tmp/prof; mkdir -p $out
timed() { local name=$1; shift; local t0=$EPOCHREALTIME; timeout 240 "$@"; local rc=$?; echo "TIME $name $(python3 -c "print(round($EPOCHREALTIME - $t0, 2))") s rc=$rc" | tee -a $out/times.log; }
export COLUMNS=120
timed calibrate python3 -m rooflint calibrate -o $out/$tag-calibration.json > $out/$tag-calibration.txt 2>&1
APP="python3 examples/apps/transformer_block.py"
timed plain $APP
timed plain $APP
timed plain $APP
mkdir -p $out/logs
timed profile-eager python3 -m rooflint profile --coverage 0.99 --nvtx timed --logs $out/logs --json $out/$tag-profile-eager.json -- $APP > $out/$tag-profile-eager.txt 2>&1
timed plot python3 -m rooflint plot $out/$tag-profile-eager.json -o $out/$tag-profile-eager.svg
head -40 $out/$tag-profile-eager.txt
[ -f $out/$tag-profile-eager.json ] || exit 1
w=$(python3 -c "import json; a, b = json.load(open('$out/$tag-profile-eager.json'))['settings']['pass2_launches']; print(a, b - a + 1)")
set -- $w
timed full-set ncu --clock-control none --set full --nvtx --nvtx-include timed/ --launch-skip $1 --launch-count $2 --log-file /tmp/full.txt $APP > /dev/null 2>&1
timed profile-compiled python3 -m rooflint profile --coverage 0.99 --nvtx timed --json $out/$tag-profile-compiled.json -- $APP --compile > $out/$tag-profile-compiled.txt 2>&1
head -25 $out/$tag-profile-compiled.txt
python3 -m rooflint compare $out/$tag-profile-eager.json $out/$tag-profile-compiled.json > $out/$tag-profile-compare.txt 2>&1; echo compare rc=$?; head -30 $out/$tag-profile-compare.txt
timed profile-triton python3 -m rooflint profile --nvtx timed --json $out/$tag-profile-triton.json -- python3 examples/apps/triton_softmax.py > $out/$tag-profile-triton.txt 2>&1; head -12 $out/$tag-profile-triton.txt
timed profile-cupy python3 -m rooflint profile --nvtx timed --json $out/$tag-profile-cupy.json -- python3 examples/apps/cupy_pipeline.py > $out/$tag-profile-cupy.txt 2>&1; head -12 $out/$tag-profile-cupy.txt
pgrep -af "ncu.*--mode launch" || echo "no program left waiting for ncu"
cat $out/times.log
tar -czf $OUT/$tag-profile.tgz -C $out .
