# Both passes in one run of the program? (issue 50's 2x: pass 2 is a second run of the
# program today.) `bash benchmarks/rotation/one_run.sh` from the repository's root on the GPU
# machine, $OUT a folder for results: the training step and the ResNet-50 step traced by
# PyTorch's profiler for 5 steps, then rotated in the same process, with Kineto's CUPTI left
# as it is and finalized at its stop (TEARDOWN_CUPTI=1); the ranges to compare with a
# rotation of its own process (probe.sh's) by compare.py.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
export ROTATION_LIB=$(python3 -c "from rooflint.measure import rotation; print(rotation.engine_library())")
export METRICS=$(python3 -c "from rooflint.measure import ncu, rotation; print(','.join(rotation.engine_metrics(ncu.metrics_for(['bf16-tensor'], None))))")
for teardown in 0 1; do
  ( time TEARDOWN_CUPTI=$teardown MAX_RANGES=600 MODE=traced-rotate TAG=step-teardown$teardown timeout 120 python3 benchmarks/rotation/step_probe.py ) 2>&1 | tail -14
done
( time MAX_RANGES=600 MODE=rotate TAG=step-alone timeout 120 python3 benchmarks/rotation/step_probe.py ) 2>&1 | tail -12
( time TEARDOWN_CUPTI=1 MAX_RANGES=1900 PROGRAM=convnet MODE=traced-rotate TAG=convnet-one-run timeout 150 python3 benchmarks/rotation/step_probe.py ) 2>&1 | tail -14
ls -la $OUT
