"""A family's buffers: its inputs, drawn once per family on the GPU (seeded, non-zero) and
kept there pristine, so every variant and the reference see the same values; their host
copies, made when a reference or prepare reads one; and the device buffers the variants
read and write, reset from the pristine inputs (and outputs poisoned) before a checked
run so an unwritten element cannot pass."""

from __future__ import annotations

from typing import Callable

import cupy
import numpy as np

from rooflint.formats.jobs import FamilyJob
from rooflint.measure.checks import poison
from rooflint.measure.inputs import HostCopies, RandomInputs, read_only


class FamilyBuffers:
    """The inputs (pristine on the GPU, copied to the host on demand) and the device
    buffers of one family, made on the current stream (the session's)."""

    def __init__(self, job: FamilyJob, reference_function: Callable[[str], Callable]):
        """``reference_function`` finds a function of the family's reference.py: its
        ``prepare``, where the manifest names one."""
        self.job = job
        self.pristine = RandomInputs([b for b in job.buffers if b.role != "out"],
                                     job.seed, xp=cupy)
        self.host = HostCopies(self.pristine)
        if job.prepare:
            prepare = reference_function(job.prepare)
            for name, array in prepared_inputs(job, self.host, prepare).items():
                self.host.copied[name] = array
                self.pristine.drawn[name] = cupy.asarray(array)
        self.device = {b.name: cupy.empty(b.shape, dtype=b.dtype) for b in job.buffers}

    def reset(self) -> None:
        """Inputs and in-out buffers to their initial values, outputs to poison."""
        for b in self.job.buffers:
            target = self.device[b.name]
            if b.role == "out":
                target.fill(poison(target.dtype))
            else:
                cupy.copyto(target, self.pristine[b.name])


def prepared_inputs(job: FamilyJob, inputs: HostCopies, prepare: Callable
                    ) -> dict[str, np.ndarray]:
    """Inputs derived by reference.py (quantized weights, scales) from the random ones;
    a buffer it derives is never drawn at random unless it reads it."""
    derived = prepare(inputs, dict(job.params))
    buffers = {b.name: b for b in job.buffers if b.role != "out"}
    prepared = {}
    for name, array in derived.items():
        if name not in buffers:
            raise ValueError(f"{job.prepare}() returned {name!r}, which is not an input buffer")
        array = np.asarray(array)
        if list(array.shape) != buffers[name].shape:
            raise ValueError(f"{job.prepare}() returned {name} with shape {array.shape}; "
                             f"the manifest says {buffers[name].shape}")
        prepared[name] = read_only(array.astype(buffers[name].dtype))
    return prepared
