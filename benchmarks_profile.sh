#!/usr/bin/env bash
# One GPU call: calibrate, profile the PyTorch example (eager and compiled), compare them,
# and time the plain program and ncu --set full on the same kernels.
set -u
tag=$1; out=$OUT
timed() { local name=$1; shift; local t0=$EPOCHREALTIME; "$@"; local rc=$?; echo "TIME $name $(python3 -c "print(round($EPOCHREALTIME - $t0, 2))") s rc=$rc"; }
export COLUMNS=120
timed calibrate python3 -m rooflint calibrate -o $out/$tag-calibration.json > $out/$tag-calibration.txt 2>&1
tail -20 $out/$tag-calibration.txt
APP="python3 examples/apps/transformer_block.py"
timed plain $APP
mkdir -p $out/logs-eager $out/logs-compiled
timed profile-eager python3 -m rooflint profile --coverage 0.99 --nvtx timed --logs $out/logs-eager --json $out/$tag-profile-eager.json --svg $out/$tag-profile-eager.svg -- $APP > $out/$tag-profile-eager.txt 2>&1
cat $out/$tag-profile-eager.txt | head -60
timed profile-compiled python3 -m rooflint profile --coverage 0.99 --nvtx timed --logs $out/logs-compiled --json $out/$tag-profile-compiled.json -- $APP --compile > $out/$tag-profile-compiled.txt 2>&1
head -30 $out/$tag-profile-compiled.txt
python3 -m rooflint compare $out/$tag-profile-eager.json $out/$tag-profile-compiled.json > $out/$tag-profile-compare.txt 2>&1; echo compare rc=$?; head -20 $out/$tag-profile-compare.txt
