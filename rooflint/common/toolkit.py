"""Where the CUDA toolkit is: nvcc, and the include directories a build may read.

Read by the builds (measure/build.py) and by the manifest reader, which lets a family's
``-I`` name the toolkit's include directory and nothing else outside the family: plain
file-system lookups, no GPU.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

USUAL_ROOT = Path("/usr/local/cuda")    # where NVIDIA's installers link the toolkit
RUNTIME_HEADER = "cuda_runtime.h"       # in every toolkit's include directory
ELF_MAGIC = b"\x7fELF"                  # how NVIDIA ships nvcc for Linux: a compiled program


def _named_roots() -> list[Path]:
    """The toolkit directories the environment names: $CUDA_HOME, $CUDA_PATH, then the
    usual /usr/local/cuda."""
    return [Path(root) for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"),
                                    USUAL_ROOT) if root]


def find_nvcc() -> Path | None:
    """nvcc on PATH, else under $CUDA_HOME / $CUDA_PATH, else the usual /usr/local/cuda."""
    found = shutil.which("nvcc")
    if found:
        return Path(found)
    return next((root / "bin" / "nvcc" for root in _named_roots()
                 if (root / "bin" / "nvcc").is_file()), None)


def toolkit_roots() -> list[Path]:
    """The CUDA toolkits rooflint would build with, symbolic links resolved, each once:
    nvcc's own, $CUDA_HOME, $CUDA_PATH and /usr/local/cuda, where each is a toolkit.

    A directory is a toolkit when both hold: its ``bin/nvcc`` is a compiled program (an
    executable ELF file, not a script) and it has the runtime's header (`_headers`).
    nvcc on PATH is often a wrapper script (``exec /usr/local/cuda-13.0/bin/nvcc "$@"``
    in /usr/local/bin): the directory above a wrapper is whatever holds it (/usr/local),
    whose include directory is other software's (a copied cuda_runtime.h among them, at
    times), and a manifest's ``-I`` must never reach it through a wrapper. A wrapper's
    own toolkit counts where the environment names it ($CUDA_HOME, /usr/local/cuda)."""
    nvcc = find_nvcc()
    candidates = [nvcc.resolve().parent.parent] if nvcc else []
    roots = [root.resolve() for root in [*candidates, *_named_roots()]]
    return [root for root in dict.fromkeys(roots) if _is_toolkit(root)]


def toolkit_include_dirs() -> list[Path]:
    """The include directories of the CUDA toolkits rooflint would build with, resolved
    (NVIDIA's ``include`` is a link into ``targets/x86_64-linux``, and a manifest's path
    is compared once resolved): what a manifest's ``-I`` may name outside its family."""
    return list(dict.fromkeys(d for root in toolkit_roots() for d in _headers(root)))


def _headers(root: Path) -> list[Path]:
    """The directories under ``root`` that hold the CUDA runtime's header, resolved: its
    ``include``, or ``targets/<platform>/include`` (where conda's packages keep them)."""
    dirs = [root / "include", *sorted((root / "targets").glob("*/include"))]
    return [d.resolve() for d in dirs if (d / RUNTIME_HEADER).is_file()]


def _is_toolkit(root: Path) -> bool:
    return _is_compiled(root / "bin" / "nvcc") and bool(_headers(root))


def _is_compiled(program: Path) -> bool:
    """Whether ``program`` is an executable ELF file (a wrapper script starts ``#!``)."""
    try:
        with program.open("rb") as file:
            return file.read(len(ELF_MAGIC)) == ELF_MAGIC and os.access(program, os.X_OK)
    except OSError:
        return False
