"""The kernels a variant launches, compiled and loaded with CuPy.

NVRTC first (``compiler: auto``, the default): no toolkit needed; builds are kept in
rooflint's cache (``nvrtc/``) so a second run, and the counter pass, load instead of
compiling. A source NVRTC cannot compile (host headers, glibc's ``uint``) goes to nvcc
(`rooflint.measure.build`) when it is installed; ``compiler: nvcc`` or ``nvrtc`` in the
manifest skips the choice. Either way entries are found by the names the source gives
them: NVRTC looks every entry up as a name expression, so a kernel with C++ linkage needs
no ``extern "C"``.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

import cupy

from rooflint.common.vocabularies import CompilerChoice
from rooflint.formats import compile_options

from rooflint.common import paths
from rooflint.formats.jsonfile import replacing
from rooflint.measure import build
from rooflint.measure.build import BuildError, MissingEntry
from rooflint.formats.jobs import VariantJob

DEFAULT_SHARED_LIMIT = 48 * 1024   # dynamic shared memory above this must be opted into


@dataclass
class Kernels:
    kernels: dict[str, cupy.RawKernel]    # entry as written in the manifest -> kernel
    compiler: str                          # "nvrtc 12.8" or "nvcc 13.0.88"


def load_kernels(variant: VariantJob, directory: Path, arch: str) -> Kernels:
    """Compile (or load from cache) the variant's source; BuildError says why not."""
    source = Path(variant.source)
    if variant.compiler == CompilerChoice.NVCC:
        loaded = _with_nvcc(variant, source, arch)
    elif variant.compiler == CompilerChoice.NVRTC:
        loaded = _with_nvrtc(variant, source, directory, arch)
    else:
        loaded = _nvrtc_else_nvcc(variant, source, directory, arch)
    most: dict[str, int] = {}      # the largest dynamic shared memory each entry launches with
    for launch in variant.launches:
        most[launch.entry] = max(most.get(launch.entry, 0), launch.shared_mem)
    for entry, shared_mem in most.items():
        if shared_mem > DEFAULT_SHARED_LIMIT:
            loaded.kernels[entry].max_dynamic_shared_size_bytes = shared_mem
    return loaded


def _nvrtc_else_nvcc(variant: VariantJob, source: Path, directory: Path, arch: str) -> Kernels:
    """NVRTC's build, else nvcc's when NVRTC cannot build the source at all (a wrong entry
    name is the manifest's mistake, whichever compiler is used)."""
    try:
        return _with_nvrtc(variant, source, directory, arch)
    except MissingEntry:
        raise
    except BuildError:
        if build.find_nvcc() is None:
            raise
        return _with_nvcc(variant, source, arch)  # its error, if any, names NVRTC's as cause


def _entries(variant: VariantJob) -> list[str]:
    return list(dict.fromkeys(launch.entry for launch in variant.launches))


def _with_nvrtc(variant: VariantJob, source: Path, directory: Path, arch: str) -> Kernels:
    """NVRTC's build of the source, from rooflint's cache when it is there. CuPy's own
    disk cache is skipped whenever name expressions are given (it does not keep their
    lowered names), which would recompile every family on every run, in both passes."""
    entries = _entries(variant)
    code = _with_header_digest(source,
                               [directory, *compile_options.include_dirs(variant.options)])
    options = ("-std=c++17", "-lineinfo", f"-I{directory}", *variant.options)
    version = ".".join(map(str, cupy.cuda.nvrtc.getVersion()))
    key = hashlib.sha256(json.dumps([code, options, entries, version, arch]).encode())
    binary = paths.cache_dir() / "nvrtc" / f"{source.stem}-{key.hexdigest()[:20]}.bin"
    lowered = binary.with_suffix(".json")
    try:
        if not (binary.is_file() and lowered.is_file()):
            _nvrtc_build(code, options, entries, source.name, binary, lowered)
        names = json.loads(lowered.read_text())
        module = cupy.RawModule(path=str(binary))
        kernels = {e: module.get_function(names.get(e, e)) for e in entries}
    except cupy.cuda.compiler.CompileException as exc:
        raise _nvrtc_error(variant, source, str(exc)) from None
    except cupy.cuda.driver.CUDADriverError as exc:
        raise BuildError(f"cannot load {source.name}: {exc}") from None
    return Kernels(kernels, f"nvrtc {version}")


def _nvrtc_build(code: str, options: tuple[str, ...], entries: list[str], filename: str,
                 binary: Path, lowered: Path) -> None:
    """Compile for this device (a cubin) and keep it with the entries' lowered names;
    each file is renamed into place whole, the names first."""
    compiled, names = cupy.cuda.compiler.compile_using_nvrtc(
        code, options, filename=filename, name_expressions=entries)
    binary.parent.mkdir(parents=True, exist_ok=True)
    for path, content in ((lowered, json.dumps(names or {}).encode()),
                          (binary, compiled if isinstance(compiled, bytes) else compiled.encode())):
        with replacing(path) as temporary:
            temporary.write_bytes(content)


def _with_nvcc(variant: VariantJob, source: Path, arch: str) -> Kernels:
    cubin = build.build(source, _entries(variant), variant.options, arch)
    try:
        module = cupy.RawModule(path=str(cubin.path))
        kernels = {e: module.get_function(symbol) for e, symbol in cubin.symbols.items()}
    except cupy.cuda.driver.CUDADriverError as exc:
        raise BuildError(f"cannot load the cubin nvcc built from {source.name}: {exc}") from None
    return Kernels(kernels, cubin.compiler)


def _with_header_digest(source: Path, include_dirs: list[Path]) -> str:
    """The source plus a digest of the headers it includes, nested ones too. rooflint's
    NVRTC cache (`_with_nvrtc`) keys on this text, so without the digest an edited header
    would reuse a stale binary. A ``#line`` directive first names the file itself, so the line
    information (``-lineinfo``) points at the user's .cu and Nsight Compute's source pass
    can show its lines."""
    digest = hashlib.sha256()
    for header in sorted(build.included_files(source, include_dirs)):
        digest.update(str(header).encode() + header.read_bytes())
    name = str(source.resolve()).replace("\\", "\\\\").replace('"', '\\"')
    return (f'#line 1 "{name}"\n{source.read_text()}\n'
            f"// rooflint: local headers {digest.hexdigest()[:16]}\n")


def _nvrtc_error(variant: VariantJob, source: Path, log: str) -> BuildError:
    """NVRTC's first error with the user's file name; an entry the source does not define
    is named with the kernels it does."""
    log = re.sub(rf"\S*\.cubin\.cu|\S*/{re.escape(source.name)}", source.name, log)
    lines = [line.strip() for line in log.splitlines() if "error" in line.lower()]
    first = lines[0] if lines else log.strip().splitlines()[-1]
    missing = [e for e in _entries(variant) if f'"{e.split("<")[0]}" is undefined' in log]
    if missing:
        kernels = ", ".join(build.kernels_in_source(source)) or "none"
        return MissingEntry(f"entry '{missing[0]}' is not a kernel in {source.name}; "
                            f"its kernels: {kernels}")
    return BuildError(f"compile error: {first}{_header_hint(log, variant.compiler)}")


def _header_hint(log: str, compiler: str) -> str:
    """What to do about a header NVRTC cannot open: usually a host header, which nvcc has."""
    if "cannot open source file" not in log:
        return ""
    if build.find_nvcc() is None:
        return ("; NVRTC has no host or C++ standard library headers: rooflint builds such "
                f"sources with nvcc, which was not found ({build.NVCC_HINT})")
    if compiler == CompilerChoice.NVRTC:
        return "; NVRTC has no host headers: drop 'compiler: nvrtc' to build it with nvcc"
    return ""
