"""NVML: driver version, clock limits, clocks seen while a kernel is timed, and GPM.

NVML needs no CUDA context, so it can read clocks from the worker while the GPU is busy
with the launches being timed. Every reading is best effort: a VM or an old driver
that refuses one leaves it out rather than failing the measurement.

GPM (GPU Performance Monitoring, Hopper and newer) gives utilizations between two
samples at least 100 ms apart. They are labelled supporting evidence only: measured
here, GPM's DRAM_BW_UTIL turned into bytes was from 24 % low to 40x high against ncu's
DRAM bytes, so rooflint never converts it into a byte count.
"""

from __future__ import annotations

from dataclasses import dataclass

import pynvml

# nvmlClocksEventReason* bits (formerly "throttle reasons"), as named in nvml.h.
_REASONS = {
    0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap",
    0x8: "hw_slowdown", 0x10: "sync_boost", 0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown", 0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


GPM_METRICS = {
    "sm_util": pynvml.NVML_GPM_METRIC_SM_UTIL,
    "sm_occupancy": pynvml.NVML_GPM_METRIC_SM_OCCUPANCY,
    "any_tensor_util": pynvml.NVML_GPM_METRIC_ANY_TENSOR_UTIL,
    "fp64_util": pynvml.NVML_GPM_METRIC_FP64_UTIL,
    "fp32_util": pynvml.NVML_GPM_METRIC_FP32_UTIL,
    "fp16_util": pynvml.NVML_GPM_METRIC_FP16_UTIL,
    "dram_bw_util": pynvml.NVML_GPM_METRIC_DRAM_BW_UTIL,
}
GPM_MIN_INTERVAL_S = 0.1


def driver_version() -> str:
    """The NVIDIA driver's version, as NVML reports it (a result names it): the one
    reading of it. NVML counts its initialisations, so this may run with or without an
    open `Nvml`; raises pynvml.NVMLError where NVML cannot answer."""
    pynvml.nvmlInit()
    try:
        value = pynvml.nvmlSystemGetDriverVersion()
    finally:
        pynvml.nvmlShutdown()
    return _text(value)


def gpu_names() -> list[str]:
    """The names of the GPUs NVML sees on this machine (``NVIDIA H100 PCIe``): what settles
    a GPU family name (``--gpu h100``) that has several spec ids. None where NVML cannot
    answer (no driver: a laptop, a CI runner)."""
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return []
    try:
        return [_text(pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(index)))
                for index in range(pynvml.nvmlDeviceGetCount())]
    except pynvml.NVMLError:
        return []
    finally:
        pynvml.nvmlShutdown()


def shared_compute_capability() -> str | None:
    """The compute capability ("9.0") every GPU NVML sees shares, read without a CUDA
    context: what the counter pass's metric names depend on (ncu.listed_metrics), known
    before any worker starts; None where the GPUs differ or NVML cannot answer."""
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return None
    try:
        found = {"{}.{}".format(*pynvml.nvmlDeviceGetCudaComputeCapability(
                     pynvml.nvmlDeviceGetHandleByIndex(index)))
                 for index in range(pynvml.nvmlDeviceGetCount())}
    except pynvml.NVMLError:
        return None
    finally:
        pynvml.nvmlShutdown()
    return found.pop() if len(found) == 1 else None


def _text(value: str | bytes) -> str:
    """NVML's strings: bytes from older bindings, str from newer."""
    return value.decode() if isinstance(value, bytes) else str(value)


@dataclass
class ClockReading:
    sm_mhz: float | None
    mem_mhz: float | None
    reasons: list[str]


class Nvml:
    """An NVML handle for the device with the given PCI bus id (the one CUDA uses)."""

    def __init__(self, pci_bus_id: str):
        pynvml.nvmlInit()
        self.handle = pynvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id)

    def max_clocks_mhz(self) -> tuple[float | None, float | None]:
        return (self._try(pynvml.nvmlDeviceGetMaxClockInfo, pynvml.NVML_CLOCK_SM),
                self._try(pynvml.nvmlDeviceGetMaxClockInfo, pynvml.NVML_CLOCK_MEM))

    def read(self) -> ClockReading:
        mask = self._try(pynvml.nvmlDeviceGetCurrentClocksEventReasons) or 0
        return ClockReading(
            sm_mhz=self._try(pynvml.nvmlDeviceGetClockInfo, pynvml.NVML_CLOCK_SM),
            mem_mhz=self._try(pynvml.nvmlDeviceGetClockInfo, pynvml.NVML_CLOCK_MEM),
            reasons=[name for bit, name in _REASONS.items() if mask & bit],
        )

    def gpm_supported(self) -> bool:
        support = self._try(pynvml.nvmlGpmQueryDeviceSupport)
        return bool(support and support.isSupportedDevice)

    def gpm_sample(self):
        """A GPM sample taken now; pass two of them to `gpm_utilizations`."""
        sample = pynvml.nvmlGpmSampleAlloc()
        pynvml.nvmlGpmSampleGet(self.handle, sample)
        return sample

    def gpm_utilizations(self, first, second) -> dict[str, float]:
        """Percent utilizations between two samples (at least GPM_MIN_INTERVAL_S apart)."""
        request = pynvml.c_nvmlGpmMetricsGet_t()
        request.version = pynvml.NVML_GPM_METRICS_GET_VERSION
        request.numMetrics = len(GPM_METRICS)
        request.sample1, request.sample2 = first, second
        for slot, metric in zip(request.metrics, GPM_METRICS.values()):
            slot.metricId = metric
        try:
            pynvml.nvmlGpmMetricsGet(request)
        finally:
            pynvml.nvmlGpmSampleFree(first)
            pynvml.nvmlGpmSampleFree(second)
        return {name: float(slot.value) for name, slot in zip(GPM_METRICS, request.metrics)
                if slot.nvmlReturn == pynvml.NVML_SUCCESS}

    def active_nvlinks(self) -> int:
        """How many of this GPU's NVLinks are up (0 on a GPU without: NVML refuses to say
        for each link)."""
        return sum(self._try(pynvml.nvmlDeviceGetNvLinkState, link) == pynvml.NVML_FEATURE_ENABLED
                   for link in range(pynvml.NVML_NVLINK_MAX_LINKS))

    def _try(self, query, *args):
        try:
            return query(self.handle, *args)
        except (pynvml.NVMLError, AttributeError):
            return None
