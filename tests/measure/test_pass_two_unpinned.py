"""Pass 2 runs a program's DataLoaders with pin_memory off (trace_bootstrap._unpinned), on a
stand-in PyTorch: Nsight Compute saves and restores every pinned host buffer around each
replay pass, and pytorch/examples' imagenet/main.py (16 workers keeping batches pinned)
took 4.4 s a profiled launch against 0.3 s unpinned (H200, 2026-11-30): its pass 2 had not
ended after 277 s."""

from __future__ import annotations

import os
import subprocess

import pytest

from rooflint.measure import program as passes
from stand_in_torch import stand_in_program

# A DataLoader as PyTorch's takes pin_memory: its eighth parameter, or by keyword.
STAND_IN = {
    "__init__.py": "from . import cuda, overrides, profiler, utils\n",
    "utils/__init__.py": "from . import data\n",
    "utils/data/__init__.py": "from .dataloader import DataLoader\n",
    "utils/data/dataloader.py": """\
class DataLoader:
    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None,
                 batch_sampler=None, num_workers=0, collate_fn=None, pin_memory=False):
        self.dataset, self.pin_memory = dataset, pin_memory
""",
}
# A subclass whose pin_memory is a read-only property (a library's loader) runs on pinned.
PROGRAM = '''\
import sys
from torch.utils.data import DataLoader
class Pinned(DataLoader):
    @property
    def pin_memory(self):
        return True
    @pin_memory.setter
    def pin_memory(self, value):
        if value is not True:
            raise AttributeError("read-only")
by_keyword = DataLoader(range(8), 4, num_workers=2, pin_memory=True)
by_position = DataLoader(range(8), 4, None, None, None, 2, None, True)
print(by_keyword.pin_memory, by_position.pin_memory, list(by_keyword.dataset)[-1],
      Pinned(range(8), pin_memory=True).pin_memory)
'''


@pytest.fixture
def program(tmp_path, monkeypatch):
    return stand_in_program(tmp_path, monkeypatch, STAND_IN, PROGRAM)


def _output(command):
    done = subprocess.run(command, capture_output=True, text=True, timeout=60,
                          env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.parametrize("steps", [0, 20])
def test_pass_two_runs_a_dataloader_unpinned_however_pin_memory_was_given(program, steps):
    assert _output(passes.pass_two_command(program, steps)) == ["False", "False", "7", "True"]


def test_the_program_itself_keeps_its_pinning(program):
    assert _output(program) == ["True", "True", "7", "True"]
