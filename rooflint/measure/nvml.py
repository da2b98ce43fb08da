"""NVML: driver version, clock limits, and the clocks seen while a kernel is timed.

NVML needs no CUDA context, so it can read clocks from the worker while the GPU is busy
with the launches being timed. Every reading is best effort: a VM or an old driver
that refuses one leaves it out rather than failing the measurement.
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

    def driver_version(self) -> str:
        value = pynvml.nvmlSystemGetDriverVersion()
        return value.decode() if isinstance(value, bytes) else str(value)

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

    def _try(self, query, *args):
        try:
            return query(self.handle, *args)
        except (pynvml.NVMLError, AttributeError):
            return None
