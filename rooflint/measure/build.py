"""Building a variant's CUDA source with nvcc, as its author wrote it for nvcc.

NVRTC (CuPy's compiler, and rooflint's first choice: no toolkit needed; measure/kernels
keeps its builds in rooflint's cache, under ``nvrtc/``, not in CuPy's) has no C++
standard library and no glibc: a kernel file that includes ``<cstdio>``, ``<cassert>``
or ``<cublas_v2.h>``, or uses ``uint``, does not compile there. nvcc takes
such files unmodified; this module builds them to a cubin for the device's architecture
(with line information, for ``ncu --source``) and finds the kernels the manifest names in
it, by the names written in the source, C++ linkage and templates included.

Nothing here needs CuPy or a GPU: the cubin is loaded by the caller.

- Builds are cached in rooflint's cache directory, under ``cubin/``, keyed on the source,
  every header it includes from the family's directories, the options, the architecture
  and nvcc's version: an edited header rebuilds, an unchanged family loads in
  milliseconds.
- A template entry (``sgemm<32>``) is instantiated by a generated wrapper that includes
  the source and takes the entry's address, as a kernel launch in the author's host code
  would; nvcc itself has no name expressions.
- Entries are matched to the cubin's kernel symbols through their demangled names, so a
  kernel with C++ linkage is found by the name in the source; a name that is not there is
  reported with the list of kernels the cubin has.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import shutil
import struct
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rooflint.formats import compile_options
from rooflint.formats.compile_options import SHELL_ACTIVE
from rooflint.common.toolkit import find_nvcc

from rooflint.common import paths
from rooflint.formats.jsonfile import replacing

NVCC_TIMEOUT_S = 600          # a large templated family can take minutes; a hang cannot
NVCC_HINT = ("install the CUDA toolkit (https://developer.nvidia.com/cuda-downloads) and put "
             "its bin/ on PATH, or set CUDA_HOME")
_STO_CUDA_ENTRY = 0x10         # st_other bit nvcc sets on __global__ functions in a cubin
_SHT_SYMTAB = 2
_STT_FUNC = 2


class BuildError(Exception):
    """The variant cannot be built; the message is one line for the user."""


class MissingEntry(BuildError):
    """The source builds but does not define an entry the manifest launches."""


@dataclass
class Cubin:
    path: Path
    symbols: dict[str, str]     # each manifest entry as written -> its symbol in the cubin
    compiler: str               # "nvcc 13.0.88": recorded with the result


@functools.cache
def nvcc_version(nvcc: Path) -> str:
    """``13.0.88`` from ``nvcc --version`` (part of the cache key: headers and code
    generation change with the toolkit)."""
    output = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True,
                            timeout=60).stdout
    match = re.search(r"V(\d+\.\d+\.\d+)", output)
    return match.group(1) if match else output.strip().splitlines()[-1]


def toolkit_version() -> str | None:
    """The version of the nvcc a build would use (recorded with a run's result), or None
    where there is none, or it will not say."""
    nvcc = find_nvcc()
    try:
        return nvcc_version(nvcc) if nvcc else None
    except (OSError, subprocess.SubprocessError):
        return None


def included_files(source: Path, include_dirs: list[Path]) -> set[Path]:
    """Every file ``source`` includes with quotes, directly or through another, looked up
    as the preprocessor does: beside the including file, then in ``include_dirs``. System
    headers (``<...>``) are the toolkit's and are covered by its version."""
    found: set[Path] = set()
    pending = [source]
    while pending:
        current = pending.pop()
        for name in re.findall(r'#\s*include\s+"([^"]+)"', current.read_text(errors="replace")):
            header = next((d / name for d in (current.parent, *include_dirs)
                           if (d / name).is_file()), None)
            if header is not None and header.resolve() not in found:
                found.add(header.resolve())
                pending.append(header)
    return found


def kernels_in_source(source: Path) -> list[str]:
    """The __global__ functions defined in ``source`` and the headers it includes, as
    written there: what an entry name can be (templates take their arguments)."""
    kernels = []
    for path in (source, *sorted(included_files(source, []))):
        text = re.sub(r"__launch_bounds__\s*\([^)]*\)", "", path.read_text(errors="replace"))
        kernels += re.findall(r"__global__\b[^;{()]*?\b(\w+)\s*\(", text)
    return list(dict.fromkeys(kernels))


def build(source: Path, entries: list[str], options: list[str], arch: str,
          cache_dir: Path | None = None) -> Cubin:
    """The cubin of ``source`` for ``arch`` (``sm_90``), from the cache or built now."""
    nvcc = find_nvcc()
    if nvcc is None:
        raise BuildError(f"{source.name} needs nvcc, which was not found; {NVCC_HINT}")
    version = nvcc_version(nvcc)
    wrapper = _wrapper(source, entries)
    command_options = ["-std=c++17", "-lineinfo", f"-I{source.parent}", *options]
    key = _cache_key(source, wrapper, command_options, arch, version)
    cubin = (cache_dir or paths.cache_dir() / "cubin") / f"{source.stem}-{key}.cubin"
    if not cubin.is_file():
        _compile(nvcc, wrapper, command_options, arch, cubin, source)
    return Cubin(cubin, match_entries(entries, kernel_symbols(cubin.read_bytes()), source),
                 f"nvcc {version}")


def _wrapper(source: Path, entries: list[str]) -> str:
    """The translation unit nvcc compiles: the source, and for each template entry a use
    that instantiates it (taking a kernel's address in host code does, as a launch does)."""
    templates = [e for e in dict.fromkeys(entries) if "<" in e]
    lines = [f'#include "{source.resolve()}"']
    if templates:
        uses = ", ".join(f"(const void*)&{e}" for e in templates)
        lines.append(f"const void* rooflint_entries[] = {{{uses}}};")
    return "\n".join(lines) + "\n"


def _cache_key(source: Path, wrapper: str, options: list[str], arch: str, version: str) -> str:
    files = sorted(included_files(source, compile_options.include_dirs(options))
                   | {source.resolve()})
    digest = hashlib.sha256(json.dumps([wrapper, options, arch, version]).encode())
    for path in files:
        digest.update(str(path).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:20]


def _compile(nvcc: Path, wrapper: str, options: list[str], arch: str, cubin: Path,
             source: Path) -> None:
    """nvcc -cubin into a temporary file renamed into place (jsonfile.replacing): a cubin in
    the cache is whole."""
    cubin.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cubin.parent) as work, replacing(cubin) as output:
        unit = Path(work) / "unit.rooflint.cu"     # not the source's name: see shell_safe
        unit.write_text(wrapper)
        command = [str(nvcc), "-cubin", f"-arch={arch}", *options, "-o", str(output), str(unit)]
        shell_safe(command, source)
        try:
            done = subprocess.run(command, capture_output=True, text=True,
                                  timeout=NVCC_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise BuildError(f"nvcc did not finish {source.name} in {NVCC_TIMEOUT_S} s") from None
        if done.returncode != 0:
            raise BuildError(compile_message(done.stderr or done.stdout, source, unit))




def shell_safe(command: list[str], source: Path) -> None:
    """Refuse a command nvcc's shell would expand: a manifest's options cannot hold such
    characters, but the family's directory or the cache directory might."""
    active = next((item for item in command if SHELL_ACTIVE.search(item)), None)
    if active is not None:
        raise BuildError(f"cannot build {source.name} with nvcc: {active!r} holds $, `, \" "
                         f"or \\, which the shell nvcc runs would expand; rename that directory")


def compile_message(log: str, source: Path, unit: Path) -> str:
    """nvcc's first error, paths shortened to the file's name; an error in the generated
    wrapper is a template entry that does not instantiate."""
    errors = [line.strip() for line in log.splitlines() if re.search(r"\berror\b", line)]
    first = errors[0] if errors else (log.strip().splitlines() or ["nvcc failed"])[-1]
    if first.startswith(str(unit)):
        detail = first.split("error:", 1)[-1].strip()
        return (f"compile error: a template entry does not instantiate from "
                f"{source.name}: {detail}")
    first = re.sub(r"(?<![\w.])/\S*/([^/\s(]+)\((\d+)\)", r"\1(\2)", first)
    return f"compile error (nvcc): {first}"


def kernel_symbols(cubin: bytes) -> list[str]:
    """The __global__ functions of a cubin (an ELF file): function symbols marked as CUDA
    entries. Read straight from the symbol table: no cuobjdump needed."""
    if cubin[:4] != b"\x7fELF" or cubin[4] != 2:
        raise BuildError("nvcc's output is not a 64-bit ELF cubin")
    (section_offset,) = struct.unpack_from("<Q", cubin, 0x28)
    entry_size, count = struct.unpack_from("<HH", cubin, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", cubin, section_offset + i * entry_size)
                for i in range(count)]
    names = []
    for _, kind, _, _, offset, size, link, _, _, symbol_size in sections:
        if kind != _SHT_SYMTAB or not symbol_size:
            continue
        strings = sections[link][4]
        for at in range(offset, offset + size, symbol_size):
            name, info, other = struct.unpack_from("<IBB", cubin, at)
            if info & 0xF == _STT_FUNC and other & _STO_CUDA_ENTRY:
                end = cubin.index(b"\0", strings + name)
                names.append(cubin[strings + name:end].decode())
    return names


def demangle(symbols: list[str]) -> dict[str, str]:
    """Symbol -> its C++ name (``sgemm_tiled<32>``); an extern "C" symbol is its own name,
    and so is every symbol when no demangler is installed (then only extern "C" entries
    can be found, and the list shown says why)."""
    mangled = [s for s in symbols if s.startswith("_Z")]
    names = {s: s for s in symbols}
    tool = _demangler()
    if mangled and tool:
        output = subprocess.run([tool], input="\n".join(mangled) + "\n", capture_output=True,
                                text=True, timeout=60).stdout.splitlines()
        if len(output) == len(mangled):
            names.update({s: _function_name(d) for s, d in zip(mangled, output)})
    return names


def _demangler() -> str | None:
    """The toolkit's cu++filt (beside nvcc or on PATH), else binutils' c++filt, which
    nvcc's host compiler brings along."""
    nvcc = find_nvcc()
    if nvcc and (nvcc.resolve().parent / "cu++filt").is_file():
        return str(nvcc.resolve().parent / "cu++filt")
    return shutil.which("cu++filt") or shutil.which("c++filt")


def _function_name(signature: str) -> str:
    """``void sgemm_tiled<32>(int, float const*)`` -> ``sgemm_tiled<32>``: the return type
    and parameters dropped, template arguments kept."""
    depth, start = 0, 0
    for i, char in enumerate(signature):
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif char == " " and depth == 0:
            start = i + 1
        elif char == "(" and depth == 0:
            return signature[start:i]
    return signature[start:]


def normalized(name: str) -> str:
    """A kernel name compared as written and as demangled: no spaces, no casts or
    suffixes on integer template arguments (``(unsigned int)32``/``32u`` is ``32``)."""
    name = re.sub(r"\((?:unsigned |signed )?\w+\)(?=-?\d)", "", name)
    name = re.sub(r"(?<=\d)(?:ull|ul|ll|u|l)\b", "", name, flags=re.IGNORECASE)
    return re.sub(r"\s+", "", name)


def match_entries(entries: list[str], symbols: list[str], source: Path) -> dict[str, str]:
    """Each entry as written -> the symbol that defines it; BuildError listing the kernels
    the cubin has when one is not there (or is ambiguous, e.g. overloaded)."""
    names = demangle(symbols)
    by_name: dict[str, list[str]] = {}
    for symbol, name in names.items():
        by_name.setdefault(normalized(name), []).append(symbol)
    found = {}
    for entry in dict.fromkeys(entries):
        candidates = by_name.get(normalized(entry), [])
        if len(candidates) != 1:
            problem = "is defined more than once (overloads?)" if candidates else "is not a kernel"
            listed = ", ".join(sorted(names.values())) or "none"
            raise MissingEntry(f"entry '{entry}' {problem} in {source.name}; its kernels: {listed}")
        found[entry] = candidates[0]
    return found
