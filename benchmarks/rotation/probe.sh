# The rotation probe on the GPU machine (one H200, 2026-11-30; benchmarks/results/h200/rotation):
# `bash benchmarks/rotation/probe.sh` from the repository's root, $OUT a folder for results.
# The training step and the ResNet-50 step rotated (ranges sized to the step: the first
# pass's cost grew with the ranges asked for), then ncu twice on the training step (its own
# run-to-run spread is the yardstick for the rotation's differences: compare.py).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
export ROTATION_LIB=$(python3 -c "from rooflint.measure import rotation; print(rotation.engine_library())")
export METRICS=$(python3 -c "from rooflint.measure import ncu, rotation; print(','.join(rotation.engine_metrics(ncu.metrics_for(['bf16-tensor'], None))))")
( time MAX_RANGES=600 MODE=rotate TAG=sized FLUSH=1 timeout 120 python3 benchmarks/rotation/step_probe.py ) 2>&1 | tail -13
( time MAX_RANGES=1900 PROGRAM=convnet MODE=rotate TAG=convnet-sized FLUSH=1 timeout 150 python3 benchmarks/rotation/step_probe.py ) 2>&1 | tail -13
for n in 1 2; do
( time MODE=ncu timeout 200 ncu --clock-control none --cache-control all --profile-from-start off --metrics $METRICS --csv --page raw --log-file $OUT/ncu-cold-$n.csv python3 benchmarks/rotation/step_probe.py ) 2>&1 | tail -4
done
ls -la $OUT
