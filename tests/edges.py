"""The harness for bad-input cases: the real command, as a user types it.

Every case checks the same promise (issue 10): one line on stderr that names the file
or field, the right exit code (2 for bad input, 1 for a gate or correctness failure), no
traceback, and every file that existed before the command still there, byte for byte.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner

REPO = Path(__file__).resolve().parent.parent
NO_GPU = {"CUDA_VISIBLE_DEVICES": ""}


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str


# What a command reads from the environment when it runs, not when rooflint is imported:
# a test that sets only these can run the command in this process. Others (COLUMNS and
# NO_COLOR, read as the consoles are made; PYTHONPATH, read as Python starts) need a fresh
# interpreter, as does a test that needs real streams (an encoding, a closed pipe).
READ_AT_RUN_TIME = frozenset({"CUDA_VISIBLE_DEVICES", "ROOFLINT_CACHE_DIR",
                              "GITHUB_STEP_SUMMARY", "ROOFLINT_REFERENCE_CACHE_SIZE"})


def rooflint(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
             timeout: float = 120, process: bool = False) -> Outcome:
    """``rooflint ARGS`` as a user types it, with no GPU visible unless ``env`` says: in
    this process (typer's runner, with the command line's own guarded streams), which
    costs no interpreter start, unless ``process`` or ``env`` asks for a fresh one."""
    if process or set(env or {}) - READ_AT_RUN_TIME:
        return rooflint_process(*args, cwd=cwd, env=env, timeout=timeout)
    return _rooflint_here(list(args), cwd, {**NO_GPU, **(env or {})})


def rooflint_process(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
                     timeout: float = 120) -> Outcome:
    """``python -m rooflint ARGS`` in a subprocess, with no GPU visible unless ``env`` says.

    The checkout under test comes first on PYTHONPATH (whatever ``cwd`` is), then any
    PYTHONPATH that ``env`` gives."""
    env = {**os.environ, **NO_GPU, **(env or {})}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-m", "rooflint", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=timeout, env=env)
    return Outcome(done.returncode, done.stdout, done.stderr)


def _rooflint_here(args: list[str], cwd: Path | None, env: dict[str, str]) -> Outcome:
    """The command in this process, in ``cwd``. An exception that escaped the command is written
    to stderr as its traceback, as Python would print it."""
    from rooflint.commands.cli import app
    here = Path.cwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        result = cli_runner().invoke(app, args, env=env, prog_name="rooflint")
    finally:
        os.chdir(here)
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "Traceback (most recent call last):\n" + "".join(
            traceback.format_exception(result.exception))
    return Outcome(result.exit_code, result.stdout, stderr)


class _Apart:
    """A result of an older click, whose ``output`` is standard output alone once standard
    error is kept apart: ``output`` is both, as on click 8.2 and newer."""

    def __init__(self, result) -> None:
        self._result = result

    def __getattr__(self, name: str):
        return getattr(self._result, name)

    @property
    def output(self) -> str:
        return self._result.stdout + self._result.stderr


class _RunnerApart(CliRunner):
    """typer's in-process runner on a click older than 8.2, with standard error apart."""

    def __init__(self) -> None:
        super().__init__(mix_stderr=False)

    def invoke(self, *args, **kwargs):
        return _Apart(super().invoke(*args, **kwargs))


def cli_runner() -> CliRunner:
    """typer's in-process runner as click 8.2 and newer make it on every click the floor
    allows: ``stderr`` apart, ``output`` both streams (older clicks mix the two unless
    told, and then leave standard error out of ``output``)."""
    import inspect
    if "mix_stderr" in inspect.signature(CliRunner.__init__).parameters:
        return _RunnerApart()
    return CliRunner()


def snapshot(*roots: Path) -> dict[Path, tuple[str, int]]:
    """Digest and mode of every file under ``roots`` (files or directories)."""
    files = [p for root in roots for p in ([root] if root.is_file() else root.rglob("*"))
             if p.is_file()]
    return {p: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mode) for p in files}


def assert_one_line_error(outcome: Outcome, code: int, *fragments: str) -> None:
    """Exit ``code``, exactly one line on stderr, containing every fragment, no traceback."""
    lines = [line for line in outcome.stderr.splitlines() if line.strip()]
    assert outcome.code == code, (outcome.code, outcome.stderr, outcome.stdout)
    assert "Traceback" not in outcome.stderr and "internal error" not in outcome.stderr, \
        outcome.stderr
    assert len(lines) == 1, outcome.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def assert_intact(before: dict[Path, tuple[str, int]]) -> None:
    """Every file in the snapshot still exists with the same bytes and mode."""
    after = snapshot(*before)
    assert after == before, {p for p in before if after.get(p) != before[p]}


# A user's family as small as a family gets: one kernel, one variant (v1), a reference.
TOY = """\
name: toy
params: {N: 1024}
precision: fp32
flops: 2*N
bytes: 8*N
reference: ref
tolerance: 1e-6
buffers:
  x: {dtype: float32, shape: N, role: in}
  y: {dtype: float32, shape: N, role: out}
variants:
  v1:
    source: toy.cu
    launches:
      - {entry: scale, grid: "cdiv(N, 256)", block: 256, shared_mem: 0, args: [x, y, {i32: N}]}
"""
TOY_SOURCE = 'extern "C" __global__ void scale(const float* x, float* y, int n) {}\n'


def family(tmp_path: Path, text: str = TOY) -> Path:
    """A user's family directory: kernel.yaml, a source it names, a reference.py."""
    directory = tmp_path / "toy"
    directory.mkdir()
    (directory / "toy.cu").write_text(TOY_SOURCE)
    (directory / "reference.py").write_text("def ref(inputs, params):\n    return {}\n")
    (directory / "kernel.yaml").write_text(text)
    return directory
