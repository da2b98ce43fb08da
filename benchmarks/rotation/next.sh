# The rotation probe's next questions (not yet run): the SM's limits as the driver gives
# them, why the function attributes read nothing inside the launch callback (their result
# codes), and which duration metric CUPTI's range profiler takes (gpu__time_duration.sum is
# Nsight Compute's; gpc__cycles_elapsed.max over its rate is the counters' own).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
CU=/usr/local/cuda-13.0/targets/x86_64-linux
g++ -O2 -shared -fPIC -o /tmp/librotation.so rooflint/measure/rotation_engine.cpp -I$CU/include -L$CU/lib -Wl,-rpath,$CU/lib -lcupti -lcuda 2>&1 | grep -E "error" | head -30
export ROTATION_LIB=/tmp/librotation.so
for M in gpu__time_duration.sum gpc__cycles_elapsed.max,gpc__cycles_elapsed.avg.per_second sm__cycles_elapsed.max; do
  METRICS=$M MAX_RANGES=600 MODE=rotate TAG=duration-${M%%.*} timeout 60 python3 benchmarks/rotation/step_probe.py 2>&1 | tail -3
done
head -3 $OUT/rotate-duration-gpc__cycles_elapsed.tsv; head -3 $OUT/rotate-duration-gpc__cycles_elapsed.tsv.launches
