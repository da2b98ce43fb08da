export PATH=/usr/local/cuda/bin:$PATH ROOFLINT_CACHE_DIR=/tmp/rlcache
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
nvidia-smi -L
timeout 500 python3 benchmarks/time_to_verdict.py /tmp/ttv --full-set benchmarks/results/h200/ncu-full-set.json | tail -22
cd /tmp/ttv && tar czf $OUT/ttv.tgz . 
