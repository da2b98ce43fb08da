"""On a host of two GPUs or more (`pytest -m gpu`): the interconnect's sweep of `rooflint
calibrate` over every GPU, through NCCL. Skipped with one GPU or no PyTorch."""

import pytest

from rooflint.measure import interconnect

pytestmark = pytest.mark.gpu


def test_the_sweep_over_every_gpu_grows_with_size_to_each_collectives_roof():
    import cupy
    gpus = cupy.cuda.runtime.getDeviceCount()
    if gpus < 2:
        pytest.skip(f"the interconnect needs 2 GPUs, this host shows {gpus}")
    pytest.importorskip("torch")
    steps = interconnect.steps(gpus, "")
    rates = {(s.collective, s.size): s.value for s in steps}
    assert len(steps) == len(interconnect.COLLECTIVES) * len(interconnect.SIZES)
    for collective in interconnect.COLLECTIVES:
        smallest, largest = (max(v for (c, size), v in rates.items() if c == collective
                                 and size <= limit) for limit in (64 << 10, 1 << 30))
        assert largest > 10e9 and largest > 4 * smallest, (collective, rates)
