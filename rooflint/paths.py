"""Where the bundled data lives: the GPU specs and the kernel families.

rooflint is installed from its checkout (``pip install -e .``), so the data folders sit
beside the package; one module knows that, so nothing else hard-codes it.
"""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SPECS_DIR = REPO_ROOT / "specs"
KERNELS_DIR = REPO_ROOT / "kernels"
