"""The compute capability NVML reads before any worker starts (measure/nvml.py): the
counter pass's metric names depend on it, and knowing it early lets ncu start beside the
workers. One answer only where every GPU shares it."""

from __future__ import annotations

import pytest

from rooflint.measure import nvml


class _Nvml:
    """pynvml's calls that shared_compute_capability makes, over made-up GPUs."""

    NVMLError = nvml.pynvml.NVMLError

    def __init__(self, capabilities, fails_at=None):
        self.capabilities, self.fails_at, self.open = capabilities, fails_at, 0

    def _maybe_fail(self, call):
        if call == self.fails_at:
            raise nvml.pynvml.NVMLError(1)

    def nvmlInit(self):
        self._maybe_fail("init")
        self.open += 1

    def nvmlShutdown(self):
        self.open -= 1

    def nvmlDeviceGetCount(self):
        return len(self.capabilities)

    def nvmlDeviceGetHandleByIndex(self, index):
        return index

    def nvmlDeviceGetCudaComputeCapability(self, handle):
        self._maybe_fail("capability")
        return self.capabilities[handle]


@pytest.mark.parametrize("capabilities, fails_at, expected", [
    ([(9, 0), (9, 0)], None, "9.0"),                 # a host of H200s
    ([(8, 9)], None, "8.9"),
    ([(9, 0), (8, 0)], None, None),                  # an H100 beside an A100: each its own names
    ([(9, 0)], "capability", None),
    ([(9, 0)], "init", None),                        # no driver: a laptop, a CI runner
])
def test_one_capability_where_every_gpu_shares_it(monkeypatch, capabilities, fails_at, expected):
    fake = _Nvml(capabilities, fails_at)
    monkeypatch.setattr(nvml, "pynvml", fake)
    assert nvml.shared_compute_capability() == expected
    assert fake.open == 0                            # NVML left as it was found
