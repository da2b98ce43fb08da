"""A stand-in PyTorch for the bootstrap's tests on a machine without one
(test_trace_pass.py, test_step_limit.py): CUDA never initialised, NVTX and torch function
modes that do nothing, and a profiler that writes into its trace what the program's torch
saw of the environment (``SEEN``, where the package sets it) and the metadata it was
given; PROFILER=fail makes the profiler's start fail."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

MODULES = {
    "cuda/__init__.py": "from . import nvtx\ndef is_initialized():\n    return False\n",
    "cuda/nvtx.py": "def range_push(message):\n    return 0\ndef range_pop():\n    return 0\n",
    "overrides.py": "class TorchFunctionMode:\n    def __enter__(self):\n        return self\n"
                    "    def __exit__(self, *exc):\n        pass\n",
    "profiler.py": """\
import contextlib, json
class ProfilerActivity:
    CPU, CUDA = "cpu", "cuda"
@contextlib.contextmanager
def record_function(name):
    yield
class profile:
    def __init__(self, activities, record_shapes):
        self.metadata = {}
    def __enter__(self):
        import os
        if os.environ.get("PROFILER") == "fail":
            raise RuntimeError("CUPTI would not start")
        return self
    def __exit__(self, *exc):
        pass
    def add_metadata_json(self, key, value):
        self.metadata[key] = json.loads(value)
    def export_chrome_trace(self, path):
        import torch
        json.dump({"traceEvents": [], "torch saw": getattr(torch, "SEEN", None),
                   **self.metadata}, open(path, "w"))
""",
}


# torch.optim with its hooks after every optimizer's step (PyTorch 2.0 on), its submodule's
# name deleted from torch.optim as PyTorch's is: for the bootstrap's step counting.
OPTIMIZER_HOOKS = {
    "optim/__init__.py": "from .optimizer import Optimizer\ndel optimizer\n",
    "optim/optimizer.py": """\
_hooks = []
def register_optimizer_step_post_hook(hook):
    _hooks.append(hook)
class Optimizer:
    def step(self):
        for hook in list(_hooks):
            hook(self, (), {})
""",
}


def stand_in_torch(site: Path, modules: dict[str, str]) -> Path:
    """The package ``torch`` written into ``site`` (made if missing): MODULES with
    ``modules`` (its ``__init__.py`` at least) over them; ``site`` for PYTHONPATH."""
    for name, text in {**MODULES, **modules}.items():
        path = site / "torch" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return site


def stand_in_program(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, modules: dict[str, str],
                     text: str) -> list[str]:
    """The command that runs ``text`` (``train.py`` in ``tmp_path``) as this interpreter
    would, the stand-in PyTorch of ``modules`` (stand_in_torch) on its PYTHONPATH."""
    monkeypatch.setenv("PYTHONPATH", str(stand_in_torch(tmp_path / "site", modules)))
    script = tmp_path / "train.py"
    script.write_text(text)
    return [sys.executable, str(script)]
