#!/bin/bash
# Would a range pushed around chosen launches only cut the rotation's cost? (2026-11-30, one
# H200: benchmarks/results/h200/rotation/select, speed.json `cupti-user-range-probe`.)
# The product's engine with select.patch: RL_RANGE=user makes the range profiler's ranges
# the user's, pushed in the launch callback around every RL_EVERY-th launch of a pass (its
# flush launched before the push, outside the range); RL_RANGE=auto keeps automatic ranges
# (every kernel, the flush's too) and pushes as well. The training step's step
# (step_probe.py), the whole counter list. Run from the repository's root, with $OUT.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
mkdir -p /tmp/sel $OUT/sel
patch -s -o /tmp/sel/engine_select.cpp rooflint/measure/rotation_engine.cpp benchmarks/rotation/select.patch
export ROTATION_LIB=/tmp/sel/librl_select.so
python3 - <<'PY'
from pathlib import Path
from rooflint.common.toolkit import find_nvcc, toolkit_roots
from rooflint.measure.kernel_trace import build_library, cupti_dirs
include, lib = cupti_dirs(toolkit_roots())
build_library(find_nvcc(), [f"-I{include}"], Path("/tmp/sel/engine_select.cpp"),
              [f"-L{lib}", "-lcupti", "-lcuda", "-Xlinker", f"-rpath={lib}"],
              Path("/tmp/sel/librl_select.so"), "the probe's engine")
PY
export METRICS=$(python3 -c "from rooflint.measure import ncu, rotation; print(','.join(rotation.engine_metrics(ncu.metrics_for(None, None))))")
for cfg in "auto 0" "user 1" "user 4" "auto 4"; do
  set -- $cfg
  RL_RANGE=$1 RL_EVERY=$2 MAX_RANGES=800 MODE=rotate TAG=$1-$2 OUT=$OUT/sel timeout 90 \
    python3 benchmarks/rotation/step_probe.py 2>&1 | tail -8
done
tar -C $OUT -cJf $OUT/sel.tar.xz sel && rm -rf $OUT/sel
