"""Nsight Compute's full set on the launches rooflint's counter pass profiles.

``python3 benchmarks/full_set.py FAMILY``: the family's variants, each run once under
``ncu --set full`` exactly as rooflint's counter pass runs them (same worker, same marked
launch per variant, same cache control), so the wall time printed is what the full set
costs on the same kernels: the denominator of the time-to-verdict ratio.
"""

from __future__ import annotations

import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from rooflint.formats.family_job import resolve
from rooflint.formats.manifest import load_manifest
from rooflint.measure import ncu
from rooflint.formats.jobs import TimingJob
from rooflint.measure.runner import WorkerPool


def full_set_seconds(target: str) -> float:
    manifest = load_manifest(target)
    with tempfile.TemporaryDirectory() as directory:
        log = Path(directory) / "full.csv"
        prefix = [ncu.ncu_path(), *ncu.BASE_OPTIONS, "--profile-from-start", "off",
                  "--cache-control", "all", "--set", "full", "--log-file", str(log)]
        began = time.perf_counter()
        pool = WorkerPool(prefix=prefix, restart=False)
        device = pool.start()
        family = resolve(manifest, {}, {"num_sms": device.sms}, TimingJob())
        for _ in pool.measure(replace(family.job, mode="profile"), 600.0, lambda *_: None):
            pass
        pool.close(timeout=600.0)
        elapsed = time.perf_counter() - began
        launches = len(ncu.parse_rows(log.read_text())) if log.exists() else 0
    print(f"{manifest.name}: ncu --set full on {launches} launches: {elapsed:.1f} s")
    return elapsed


if __name__ == "__main__":
    for name in sys.argv[1:]:
        full_set_seconds(name)
