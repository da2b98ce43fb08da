"""The compiler options a manifest may give: data read against a table, never a command line.

A family's ``options:`` reach NVRTC and nvcc, and nvcc writes files and runs programs
where its options say (``-MF FILE``, ``-ccbin DIR``, ``--options-file``), through a shell
that expands ``$(...)`` and backquotes inside its arguments (nvcc 13.0, checked). So an
option is accepted only if `FLAGS` has it: what a kernel build legitimately needs
(macros, include directories, the language standard, code-generation switches), each
with how it takes its value and what that value may be. Anything else, an unknown option
included, is refused, naming why when the option is a known danger (`REFUSED`). Values
are plain text: no spaces, quotes, ``$``, backquotes or backslashes. A path value is
the manifest's to check (it knows the family's directory): plain as written, inside the
family once resolved.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

PLAIN = r"[^\s$`\"'\\]"    # a character nvcc's shell leaves alone inside its double quotes


class Value(Enum):
    """What a flag takes after it: (the pattern the whole value must match, said to the
    user when it does not)."""

    NONE = ("", "nothing")
    MACRO = (rf"[A-Za-z_]\w*(={PLAIN}*)?", "NAME or NAME=VALUE (no spaces, quotes, $ or \\)")
    NAME = (r"[A-Za-z_]\w*", "a macro name")
    DIRECTORY = (r"[^-].*", "a directory inside the family")   # see plain()
    FILE = (r"[^-].*", "a file inside the family")
    STANDARD = (r"c\+\+(03|11|14|17|20)", "c++03, c++11, c++14, c++17 or c++20")
    LEVEL = (r"[0-3]", "0, 1, 2 or 3")
    COUNT = (r"[1-9]\d{0,2}", "a register count such as 64")
    BOOLEAN = (r"true|false", "true or false")
    ARCH = (r"(sm|compute)_\d{2,3}[af]?", "a plain sm_XX or compute_XX")
    PTXAS = (r"(-O[0-3]|-v|--verbose|--warn-on-spills|--warn-on-local-memory-usage)"
             r"(,(-O[0-3]|-v|--verbose|--warn-on-spills|--warn-on-local-memory-usage))*",
             "-O0 to -O3, -v, --warn-on-spills or --warn-on-local-memory-usage "
             "(comma-separated)")

    @property
    def pattern(self) -> str:
        return self.value[0]

    @property
    def expects(self) -> str:
        return self.value[1]


@dataclass(frozen=True)
class Flag:
    spellings: tuple[str, ...]     # nvcc's and NVRTC's names for it, short first
    value: Value = Value.NONE
    attached: bool = False         # the short spelling takes it unspaced too: -DTILE=64


# What a manifest's options may be (nvcc and NVRTC documentation, CUDA 12/13). Each takes
# its value as FLAG=VALUE or as the next option; ``attached`` ones also as FLAGVALUE.
FLAGS = (
    Flag(("-D", "--define-macro"), Value.MACRO, attached=True),
    Flag(("-U", "--undefine-macro"), Value.NAME, attached=True),
    Flag(("-I", "--include-path"), Value.DIRECTORY, attached=True),
    Flag(("-include", "--pre-include"), Value.FILE),
    Flag(("-std", "--std"), Value.STANDARD),
    Flag(("-O", "--optimize"), Value.LEVEL, attached=True),
    Flag(("-Xptxas", "--ptxas-options"), Value.PTXAS),
    Flag(("-lineinfo", "--generate-line-info")),
    Flag(("-maxrregcount", "--maxrregcount"), Value.COUNT),
    Flag(("-use_fast_math", "--use_fast_math")),
    Flag(("-extra-device-vectorization", "--extra-device-vectorization")),
    Flag(("-ftz", "--ftz"), Value.BOOLEAN),
    Flag(("-prec-div", "--prec-div"), Value.BOOLEAN),
    Flag(("-prec-sqrt", "--prec-sqrt"), Value.BOOLEAN),
    Flag(("-fmad", "--fmad"), Value.BOOLEAN),
    Flag(("-arch", "--gpu-architecture"), Value.ARCH),
    Flag(("-restrict", "--restrict")),
    Flag(("-w", "--disable-warnings")),
    Flag(("-expt-relaxed-constexpr", "--expt-relaxed-constexpr")),
    Flag(("-extended-lambda", "--extended-lambda", "--expt-extended-lambda")),
)
_BY_SPELLING = {s: flag for flag in FLAGS for s in flag.spellings}


class Danger(Enum):
    """Why a known option is refused, as the error says it."""

    WRITES = "it makes the compiler write files"
    PROGRAM = "it chooses a program for the compiler to run, or hands options to one"
    OPTIONS_FILE = "it reads further options from a file"


REFUSED = {
    **dict.fromkeys(("-o", "--output-file", "-M", "-MM", "-MD", "-MMD", "-MF", "-MT", "-MP",
                     "--generate-dependencies", "--generate-nonsystem-dependencies",
                     "--generate-dependencies-with-compile",
                     "--generate-nonsystem-dependencies-with-compile",
                     "--dependency-output", "-odir", "--output-directory", "-keep",
                     "--keep", "-keep-dir", "--keep-dir", "-save-temps", "--save-temps",
                     "-time", "--time", "-create-pch", "--create-pch", "-pch-dir",
                     "--pch-dir", "-fdevice-time-trace", "--fdevice-time-trace"),
                    Danger.WRITES),
    **dict.fromkeys(("-ccbin", "--compiler-bindir", "-Xcompiler", "--compiler-options",
                     "-Xlinker", "--linker-options", "-Xnvlink", "--nvlink-options",
                     "-Xarchive", "--archive-options", "-Xcudafe", "-Xfatbin",
                     "--fatbin-options", "-run", "--run", "-run-args", "--run-args"),
                    Danger.PROGRAM),
    **dict.fromkeys(("-optf", "--options-file"), Danger.OPTIONS_FILE),
}


class Form(Enum):
    """How an option was written, kept so that it reaches the compiler as written."""

    ALONE = "alone"            # -lineinfo
    ATTACHED = "attached"      # -DTILE=64
    EQUALS = "equals"          # -std=c++17
    SEPARATE = "separate"      # -I include


@dataclass(frozen=True)
class Option:
    flag: Flag
    spelling: str
    form: Form
    value: str | None
    index: int                 # of its first item in the list it was read from

    @property
    def items(self) -> list[str]:
        """The option as the compiler gets it: one item, or the flag and its value."""
        if self.form is Form.ALONE:
            return [self.spelling]
        if self.form is Form.SEPARATE:
            return [self.spelling, self.value]
        joint = "=" if self.form is Form.EQUALS else ""
        return [f"{self.spelling}{joint}{self.value}"]

    @property
    def is_path(self) -> bool:
        return self.flag.value in (Value.DIRECTORY, Value.FILE)


class OptionError(Exception):
    """An option that is refused: where in the list, what was written, and why."""

    def __init__(self, index: int, written: str, problem: str):
        super().__init__(problem)
        self.index, self.written, self.problem = index, written, problem


def parse(items: list[str]) -> list[Option]:
    """The options ``items`` spell, each checked against FLAGS; OptionError otherwise."""
    options, i = [], 0
    while i < len(items):
        option = _read(items, i)
        options.append(option)
        i += 2 if option.form is Form.SEPARATE else 1
    return options


def plain(text: str) -> bool:
    """Whether ``text`` is plain: no spaces, quotes, ``$``, backquotes or backslashes. A
    path a manifest writes must be (rooflint's own, made absolute, may hold spaces)."""
    return re.fullmatch(f"{PLAIN}*", text) is not None


def include_dirs(items: list[str]) -> list[Path]:
    """The directories ``-I`` / ``--include-path`` options name, in order."""
    return [Path(o.value) for o in parse(items) if o.flag.value is Value.DIRECTORY]


def _read(items: list[str], i: int) -> Option:
    written = items[i]
    name, equals, after = written.partition("=")
    flag = _BY_SPELLING.get(written)
    if flag is not None and flag.value is Value.NONE:
        return Option(flag, written, Form.ALONE, None, i)
    if flag is not None:
        if i + 1 == len(items):
            raise OptionError(i, written, f"{written} needs {flag.value.expects} after it")
        return _checked(Option(flag, written, Form.SEPARATE, items[i + 1], i))
    flag = _BY_SPELLING.get(name) if equals else None
    if flag is not None:
        if flag.value is Value.NONE:
            raise OptionError(i, written, f"{name} takes no value")
        return _checked(Option(flag, name, Form.EQUALS, after, i))
    for flag in FLAGS:
        short = flag.spellings[0]
        if flag.attached and written.startswith(short) and written != short:
            return _checked(Option(flag, short, Form.ATTACHED, written[len(short):], i))
    raise OptionError(i, written, _refusal(written))


def _checked(option: Option) -> Option:
    if not re.fullmatch(option.flag.value.pattern, option.value):
        raise OptionError(option.index, " ".join(option.items),
                          f"{option.spelling} takes {option.flag.value.expects}")
    return option


def _refusal(written: str) -> str:
    """Why ``written`` is refused: its danger when it is a known one, else that it is not
    an option rooflint passes on."""
    name = written.partition("=")[0]
    danger = REFUSED.get(name)
    if danger is None and written.startswith("@"):
        danger = Danger.OPTIONS_FILE
    if danger is None and written.startswith(("-o", "-M")) and name not in _BY_SPELLING:
        danger = Danger.WRITES      # -o/path, -MFdeps.d: gcc's attached spellings
    allowed = ", ".join(flag.spellings[0] for flag in FLAGS)
    reason = danger.value if danger else "it is not an option rooflint passes to a compiler"
    return f"{reason}; a manifest's options may only be {allowed}"


# nvcc runs its steps through sh, each argument in double quotes, inside which these still
# act: an argument holding them could run commands (``-DX=$(...)`` does, nvcc 13.0): no
# manifest path nor build command rooflint runs may hold one.
SHELL_ACTIVE = re.compile(r'[$`"\\\n]')
