# Both passes in one run of the program? (issue 50's 2x: pass 2 is a second run of the
# program today.) `bash benchmarks/rotation/one_run.sh` from the repository's root on the GPU
# machine, $OUT a folder for results. First (2026-12-01): the rotation right after Kineto's
# stop is refused (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, TEARDOWN_CUPTI 0 or 1), so
# now: the rotation after Kineto's teardown is given time (step_probe.wait_for_cupti), and
# the other order, the rotation first and PyTorch's profiler after it.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
export ROTATION_LIB=$(python3 -c "from rooflint.measure import rotation; print(rotation.engine_library())")
export METRICS=$(python3 -c "from rooflint.measure import ncu, rotation; print(','.join(rotation.engine_metrics(ncu.metrics_for(['bf16-tensor'], None))))")
probe() {  # TAG, then the environment of the run
  local tag=$1; shift
  echo "== $tag: $*"
  ( time env "$@" TAG=$tag timeout 60 python3 benchmarks/rotation/step_probe.py ) 2>&1 \
    | grep -v "UserWarning\|_warn_once" | tail -16
}
probe step-teardown1 TEARDOWN_CUPTI=1 WAIT_S=10 MAX_RANGES=600 MODE=traced-rotate
probe step-teardown0 TEARDOWN_CUPTI=0 WAIT_S=3 MAX_RANGES=600 MODE=traced-rotate
probe step-rotate-first MAX_RANGES=600 MODE=rotate-traced
probe convnet-teardown1 TEARDOWN_CUPTI=1 WAIT_S=10 MAX_RANGES=1900 PROGRAM=convnet MODE=traced-rotate
probe convnet-rotate-first MAX_RANGES=1900 PROGRAM=convnet MODE=rotate-traced
ls -la $OUT
