#!/usr/bin/env bash
# benchmarks/profile.sh TAG [PART...], from the checkout: calibrate, then profile the
# training step (eager and compiled: PART "train", eager three times, with ncu --set full on
# the same kernels as pass 2, one launch of each launch shape, and every kernel's mangled name), the transformer block (eager and compiled:
# "block") and the Triton (its softmax; a matmul tuned by @triton.autotune, whole) and CuPy
# programs ("others"); each plain program is timed beside
# its profile. No PART: all three, about 9 minutes on an H100, more than one device call
# allows, so a GPU's figures are taken in two calls ("train", then "block others").
# Programs whose GPU code other people's libraries write, whole (no NVTX range): "nanogpt"
# (nanoGPT's train.py, NANOGPT naming a checkout) and "programs" (a JAX loop, Hugging
# Face's Trainer and, with NANOGPT, nanoGPT's model under CUDA graphs).
set -u
tag=$1; shift; parts=${*:-train block others}; out=/tmp/prof
for part in $parts; do   # each PART names a function below: nothing else is run
  case $part in train|block|others|nanogpt|programs) ;; *) echo "profile.sh: no part '$part' (train, block, others, nanogpt, programs)" >&2; exit 2 ;; esac
done
mkdir -p $out/logs
timed() { local name=$1; shift; local t0=$EPOCHREALTIME; timeout 300 "$@"; local rc=$?; echo "TIME $name $(python3 -c "print(round($EPOCHREALTIME - $t0, 2))") s rc=$rc" | tee -a $out/times.log; }
export COLUMNS=140 PYTHONUNBUFFERED=1
timed calibrate python3 -m rooflint calibrate -o $out/$tag-calibration.json > $out/$tag-calibration.txt 2>&1
profile() {   # NAME ARGS...: the plain program, then rooflint profile of it
  local name=$1; shift
  timed plain-$name "$@" > /dev/null 2>&1
  timed profile-$name python3 -m rooflint profile --nvtx timed --json $out/$tag-profile-$name.json -- "$@" > $out/$tag-profile-$name.txt 2>&1
  head -4 $out/$tag-profile-$name.txt
}
pairs() {   # N NAME ARGS...: as profile, N times, plain and profile alternately (the first
  # profile's files are the ones kept), then the median of each and their ratio: a plain run
  # of the training step varies by a few seconds from one run to the next (9.3-12.2 s, H200)
  local n=$1 name=$2; shift 2
  profile $name "$@"
  for i in $(seq 2 $n); do
    timed plain-$name "$@" > /dev/null 2>&1
    timed profile-$name python3 -m rooflint profile --nvtx timed --json $out/logs/$tag-profile-$name-$i.json -- "$@" > $out/logs/$tag-profile-$name-$i.txt 2>&1
  done
  python3 -c "
import statistics, sys
n, name, log = int(sys.argv[1]), sys.argv[2], open(sys.argv[3]).read().splitlines()
times = lambda kind: [float(line.split()[2]) for line in log if line.startswith(f'TIME {kind}-{name} ')][-n:]
plain, profile = statistics.median(times('plain')), statistics.median(times('profile'))
print(f'MEDIAN {name} of {n} pairs: plain {plain:.2f} s, profile {profile:.2f} s ({profile / plain:.2f}x)')" $n $name $out/times.log | tee -a $out/times.log
}
whole() {    # NAME ARGS...: as profile, for a program with no NVTX range, after an untimed run
  local name=$1; shift
  "$@" > /dev/null 2>&1   # untimed: warms the page cache
  timed plain-$name "$@" > /dev/null 2>&1
  timed profile-$name python3 -m rooflint profile --json $out/$tag-profile-$name.json -- "$@" > $out/$tag-profile-$name.txt 2>&1
  head -4 $out/$tag-profile-$name.txt
}
train() {
python3 examples/apps/train_step.py --steps 1 > /dev/null 2>&1   # untimed: the plain run is timed with a warm page cache, as the profile's passes run
pairs 3 train-eager python3 examples/apps/train_step.py
mapfile -t selection < <(python3 -c "import json; print('\n'.join(json.load(open('$out/$tag-profile-train-eager.json'))['settings']['pass2_selection']))")
timed full-set-train-eager ncu --clock-control none --set full "${selection[@]}" --log-file $out/logs/full-set.txt python3 examples/apps/train_step.py > /dev/null 2>&1
grep -c "Section: Launch Statistics" $out/logs/full-set.txt | sed 's/^/full-set launches: /'
# every kernel's mangled name beside its grid and block (tests/fixtures/ncu: pass 2's patterns on real names)
ncu --clock-control none --csv --page raw --metrics gpu__time_duration.sum --print-kernel-base mangled --filter-mode per-launch-config --launch-count 1 --log-file $out/$tag-train-mangled.csv python3 examples/apps/train_step.py --steps 1 > /dev/null 2>&1
profile train-compiled python3 examples/apps/train_step.py --compile
}
block() {
profile block-eager python3 examples/apps/transformer_block.py
profile block-compiled python3 examples/apps/transformer_block.py --compile
python3 -m rooflint compare $out/$tag-profile-block-eager.json $out/$tag-profile-block-compiled.json > $out/$tag-profile-compare.txt 2>&1; echo compare rc=$?
}
others() {
profile triton python3 examples/apps/triton_softmax.py
whole triton-autotune python3 examples/apps/triton_autotune.py
profile cupy python3 examples/apps/cupy_pipeline.py
}
nanogpt() {
[ -f "${NANOGPT:-}/train.py" ] || { echo "profile.sh: NANOGPT names no nanoGPT checkout" >&2; return 2; }
local here=$PWD; cd "$NANOGPT"
mkdir -p data/openwebtext
python3 -c "import numpy as np; r = np.random.default_rng(0); [r.integers(0, 50257, 20_000_000, dtype=np.uint16).tofile(f'data/openwebtext/{s}.bin') for s in ('train', 'val')]"
local args="--batch_size=8 --gradient_accumulation_steps=1 --max_iters=7 --eval_iters=1 --out_dir=$out/nanogpt-out"
python3 train.py $args --compile=False > /dev/null 2>&1   # untimed: warms the page cache
for mode in eager compiled; do
  local compile=False; [ $mode = compiled ] && compile=True
  timed plain-nanogpt-$mode python3 train.py $args --compile=$compile > /dev/null 2>&1
  timed profile-nanogpt-$mode python3 -m rooflint profile --json $out/$tag-profile-nanogpt-$mode.json -- python3 train.py $args --compile=$compile > $out/$tag-profile-nanogpt-$mode.txt 2>&1
  head -4 $out/$tag-profile-nanogpt-$mode.txt
done
rm -rf $out/nanogpt-out; cd "$here"
}
programs() {
whole jax python3 examples/apps/jax_mlp.py
whole hf-trainer python3 examples/apps/hf_trainer.py
if [ -f "${NANOGPT:-}/model.py" ]; then whole nanogpt-graphs python3 examples/apps/nanogpt_graphs.py
else echo "profile.sh: no NANOGPT checkout: nanoGPT's model under CUDA graphs left out"; fi
}
for part in $parts; do $part; done
pgrep -af "ncu.*--mode launch" || echo "no program left waiting for ncu"
cp $out/times.log $out/$tag-times-${parts// /-}.txt
tar -czf $OUT/$tag-profile-${parts// /-}.tgz -C $out --exclude logs .
