"""The worker's GPU: what it is (a DeviceInfo, from CUDA's properties and NVML) and the
memory CuPy's pools hold on it, handed back between families."""

from __future__ import annotations

import gc
import sys

import cupy

from rooflint.measure.nvml import Nvml, driver_version
from rooflint.formats.jobs import DeviceInfo


def device_info(device_id: int, nvml: Nvml | None) -> DeviceInfo:
    props = cupy.cuda.runtime.getDeviceProperties(device_id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    max_sm, max_mem = nvml.max_clocks_mhz() if nvml else (None, None)
    return DeviceInfo(
        name=name,
        index=device_id,
        compute_capability=f"{props['major']}.{props['minor']}",
        sms=int(props["multiProcessorCount"]),
        l2_bytes=int(props["l2CacheSize"]),
        memory_bytes=int(props["totalGlobalMem"]),
        max_sm_clock_mhz=max_sm,
        max_mem_clock_mhz=max_mem,
        driver=driver_version() if nvml else str(cupy.cuda.runtime.driverGetVersion()),
        cuda_runtime=str(cupy.cuda.runtime.runtimeGetVersion()),
        cupy=cupy.__version__,
    )


def open_nvml(device_id: int) -> Nvml | None:
    try:
        return Nvml(cupy.cuda.runtime.deviceGetPCIBusId(device_id))
    except Exception as exc:  # NVML missing in a container: measure without clocks
        print(f"rooflint worker: NVML unavailable ({exc}); clocks will not be recorded",
              file=sys.stderr)
        return None


def free_memory() -> None:
    """Hand the blocks CuPy's pool keeps back to CUDA between families: the next family
    may need them, and under Nsight Compute every allocation a kernel could reach is saved
    and restored on each replay pass (4 GB more cost 70 ms per kernel on an H100)."""
    gc.collect()   # a session's runners refer back to it: only the collector frees them
    cupy.get_default_memory_pool().free_all_blocks()
    cupy.get_default_pinned_memory_pool().free_all_blocks()
