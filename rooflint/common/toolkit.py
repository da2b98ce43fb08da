"""Where the CUDA toolkit is: nvcc, and the include directories a build may read.

Read by the builds (measure/build.py) and by the manifest reader, which lets a family's
``-I`` name the toolkit's include directory and nothing else outside the family: plain
file-system lookups, no GPU.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def find_nvcc() -> Path | None:
    """nvcc on PATH, else under $CUDA_HOME / $CUDA_PATH, else the usual /usr/local/cuda."""
    found = shutil.which("nvcc")
    if found:
        return Path(found)
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (Path(root) / "bin" / "nvcc").is_file():
            return Path(root) / "bin" / "nvcc"
    return None


def toolkit_roots() -> list[Path]:
    """The CUDA toolkits rooflint would build with (symbolic links resolved): nvcc's own
    (where nvcc is the toolkit's, not a wrapper script elsewhere), $CUDA_HOME, $CUDA_PATH
    and /usr/local/cuda, each once."""
    nvcc = find_nvcc()
    roots = [nvcc.resolve().parent.parent] if nvcc else []
    roots += [Path(root) for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"),
                                      "/usr/local/cuda") if root]
    return list(dict.fromkeys(root.resolve() for root in roots if root.is_dir()))


def toolkit_include_dirs() -> list[Path]:
    """The include directories of the CUDA toolkits rooflint would build with: what a
    manifest's ``-I`` may name outside its family."""
    return [root / "include" for root in toolkit_roots() if (root / "include").is_dir()]
