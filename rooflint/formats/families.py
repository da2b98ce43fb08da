"""Finding kernel families on disk: a family is a directory with a ``kernel.yaml``.

A command names a family as a directory, as its ``kernel.yaml`` or by the name of a
bundled family (``rooflint run gemm_fp32``); this module turns any of these into the
manifest's path, or says what was named instead, and lists the bundled families. Reading
the manifest itself is `rooflint.formats.manifest`'s job.
"""

from __future__ import annotations

from pathlib import Path

from rooflint.common.errors import RooflintError
from rooflint.common.paths import KERNELS_DIR
from rooflint.formats.jsonfile import not_a_file

MANIFEST_NAME = "kernel.yaml"
SOURCE_SUFFIXES = (".cu", ".cuh", ".cpp", ".h", ".hpp")


def find_manifest(target: str | Path) -> Path:
    """``kernels/gemm_fp32``, ``path/to/kernel.yaml`` or a bundled family name. An empty
    name is refused: ``Path("")`` is the current directory, which nobody named."""
    if str(target) == "":
        raise RooflintError(f"TARGET is empty (''): name a directory with {MANIFEST_NAME}, a "
                            f"{MANIFEST_NAME} file, or a bundled family")
    path = Path(target)
    if path.is_dir() and path.name != MANIFEST_NAME:   # a directory named so is a mistake to name
        path = path / MANIFEST_NAME
    elif not path.exists():
        bundled = KERNELS_DIR / str(target) / MANIFEST_NAME
        if bundled.exists():
            return bundled
    if not path.is_file():
        instead = not_a_file(path)
        if instead:
            raise RooflintError(f"{path} {instead}; a kernel manifest is a {MANIFEST_NAME} file")
        raise RooflintError(f"no kernel manifest at {target} (expected a directory with "
                            f"{MANIFEST_NAME}, a {MANIFEST_NAME} file, or a bundled family name)"
                            + _taken_first(target))
    if path.suffix in SOURCE_SUFFIXES:
        raise RooflintError(f"{target} is a CUDA source; rooflint expects a {MANIFEST_NAME} "
                            f"that names it (or its directory): see docs/manifest.md")
    return path


def shadowed_family(target: str | Path) -> Path | None:
    """The bundled family's directory that a bare name (``stream``) also names where a path
    here of that name is taken instead, as find_manifest takes it: the caller says which one
    it used, since a folder that happens to share a bundled family's name would otherwise
    be measured, or refused, in its place unsaid. None where the name means one thing."""
    name = str(target)
    here, bundled = Path(name), KERNELS_DIR / name
    if (name == here.name and here.exists() and (bundled / MANIFEST_NAME).is_file()
            and here.resolve() != bundled.resolve()):
        return bundled
    return None


def _taken_first(target: str | Path) -> str:
    """For an error about ``target``: that a path here of that name was taken before the
    bundled family, and how to name the bundled one; nothing where there is none."""
    bundled = shadowed_family(target)
    return (f"; ./{target} is taken before the bundled family {target}: name that one by "
            f"its path, {bundled}") if bundled else ""


def bundled_manifests() -> list[Path]:
    """The bundled families' manifests, by name; ``_`` and ``.`` directories are not families."""
    return sorted(p for p in KERNELS_DIR.glob(f"*/{MANIFEST_NAME}")
                  if not p.parent.name.startswith(("_", ".")))
