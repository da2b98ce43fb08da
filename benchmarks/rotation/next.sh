# The rotation's next questions on the GPU (not yet run: the next session's first call):
# the SM's limits as the driver gives them, why the function attributes read nothing inside
# the launch callback (their result codes), and which duration metric CUPTI's range
# profiler takes (gpu__time_duration.sum is Nsight Compute's; gpc__cycles_elapsed.max over
# its rate is the counters' own).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
export ROOFLINT_CACHE_DIR=/tmp/rl-cache   # the engine built once, for the profiles below too
export ROTATION_LIB=$(python3 -c "from rooflint.measure import rotation; print(rotation.engine_library())")
for M in gpu__time_duration.sum gpc__cycles_elapsed.max,gpc__cycles_elapsed.avg.per_second sm__cycles_elapsed.max; do
  METRICS=$M MAX_RANGES=600 MODE=rotate TAG=duration-${M%%.*} timeout 60 python3 benchmarks/rotation/step_probe.py 2>&1 | tail -3
done
head -3 $OUT/rotate-duration-gpc__cycles_elapsed.tsv; head -3 $OUT/rotate-duration-gpc__cycles_elapsed.tsv.launches
# Then pass 2 by rotation as a whole (rooflint profile with ROOFLINT_PASS_TWO=rotation), side
# by side with Nsight Compute's pass 2 and the plain program, on the training step and the
# ResNet-50 step; and its GPU test.
for P in examples/apps/train_step.py examples/apps/convnet_train.py; do
  n=$(basename $P .py)
  s=$(date +%s.%N); python3 $P > /dev/null 2>&1; echo "$n plain $(python3 -c "import time;print(round(time.time()-$s,1))") s"
  for mode in ncu rotation; do
    s=$(date +%s.%N)
    ROOFLINT_PASS_TWO=$mode python3 -m rooflint profile --no-counter-cache --json $OUT/$n-$mode.json -- python3 $P > $OUT/$n-$mode.txt 2>&1
    echo "$n $mode rc=$? $(python3 -c "import time;print(round(time.time()-$s,1))") s"; grep -E "pass 2|rotation" $OUT/$n-$mode.txt | head -5
  done
done
timeout 560 python3 -m pytest -m gpu -s tests/gpu/test_rotation_pass.py 2>&1 | tail -5
