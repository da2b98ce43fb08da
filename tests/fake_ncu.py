"""A stand-in `ncu` for `rooflint profile` on a machine without a GPU: it runs the user's
command as the real one would (pass 1 at once; pass 2 under ``--mode launch``, waiting
until an ``--mode attach`` arrives), writes back the H200 logs recorded from
examples/apps/transformer_block.py, and keeps every command line it was given (but
``--version`` and ``--query-metrics``, which it answers as Nsight Compute 2025.3.1 did)."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

NCU = Path(__file__).parent / "fixtures" / "ncu"
METRIC_LISTS = NCU / "metrics"   # ncu --query-metrics --chip CHIP, by chip (2025.3.1)

FAKE_NCU = textwrap.dedent('''\
    #!{python}
    import json, os, subprocess, sys, time
    from pathlib import Path
    args = sys.argv[1:]
    if args == ["--version"]:
        print("NVIDIA (R) Nsight Compute Command Line Profiler")
        print("Version 2025.3.1.0 (build 36398880) (public-release)")
        sys.exit(0)
    if args[:2] == ["--query-metrics", "--chip"]:   # the chip's list, as 2025.3.1 printed it
        import lzma
        print(lzma.decompress(Path({metrics!r}, args[2] + ".txt.xz").read_bytes()).decode())
        sys.exit(0)
    state = Path(os.environ["FAKE_NCU_STATE"])
    with (state / "calls.jsonl").open("a") as calls:
        calls.write(json.dumps(args) + "\\n")

    def option(name):
        return args[args.index(name) + 1] if name in args else None

    def program():
        """What follows ncu's options: the options this stand-in knows take one value."""
        flags = {{"--nvtx", "--csv"}}
        i = 0
        while i < len(args) and args[i].startswith("-"):
            i += 1 if args[i] in flags else 2
        return args[i:]

    mode = option("--mode")
    if mode == "launch":
        (state / "waiting.pid").write_text(str(os.getpid()))
        if "FAKE_NCU_WRAPPER" in os.environ:     # a shell script: it never calls CUDA itself
            sys.exit(subprocess.run(program()).returncode)
        print("==PROF== Waiting for profiler to attach on ports", option("--port"), flush=True)
        if "FAKE_NCU_DIES_WAITING" in os.environ:  # the program fails before its first CUDA call
            print("ImportError: no module named 'data'", flush=True)
            sys.exit(int(os.environ["FAKE_NCU_DIES_WAITING"]))
        attached = state / ("attached-" + option("--port"))
        while not attached.exists():
            time.sleep(0.02)
        if "FAKE_NCU_HANGS" in os.environ:
            # a rank that waits for its peers for ever, in a session of its own (as ncu
            # starts its program)
            rank = subprocess.Popen(["sleep", "120"], start_new_session=True)
            with (state / "hung.pids").open("a") as hung:
                hung.write(f"{{rank.pid}}\\n")
            sys.exit(rank.wait())
        sys.exit(subprocess.run(program()).returncode)
    recorded = "pass2.csv" if "--launch-count" in args else "pass1.csv"
    Path(option("--log-file")).write_text((state / recorded).read_text())
    if mode == "attach":
        refusals = state / "refusals"   # FAKE_NCU_NOT_YET: the first attaches find nothing
        refused = int(refusals.read_text()) if refusals.exists() else 0
        if refused < int(os.environ.get("FAKE_NCU_NOT_YET", "0")):
            refusals.write_text(str(refused + 1))
            Path(option("--log-file")).write_text(
                "==PROF== Finding attachable processes on host 127.0.0.1.\\n"
                "==ERROR== No attachable process found.\\n")
            sys.exit(1)
        (state / ("attached-" + option("--port"))).touch()
        if "FAKE_NCU_HANGS" in os.environ:   # attached to a rank that never ends, or, on
            if os.environ["FAKE_NCU_HANGS"] == option("--port"):   # this port, lost
                Path(option("--log-file")).write_text(
                    "==ERROR== The connection to the target process was lost.\\n")
                sys.exit(1)
            time.sleep(120)
        sys.exit(0)
    sys.exit(subprocess.run(program()).returncode)
''')


def stand_in(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A directory with the stand-in ``ncu``, and the environment that puts it first (the
    ``fake_ncu`` fixture of conftest.py)."""
    bin_dir, state = tmp_path / "bin", tmp_path / "state"
    bin_dir.mkdir()
    state.mkdir()
    ncu = bin_dir / "ncu"
    ncu.write_text(FAKE_NCU.format(python=sys.executable, metrics=str(METRIC_LISTS)))
    ncu.chmod(0o755)
    for n in (1, 2):
        (state / f"pass{n}.csv").write_text(
            (NCU / f"h200-transformer-block-pass{n}.csv").read_text())
    # the recorded logs are ncu's: pass 1 falls back to it as under another tool's injection
    # (a machine with a CUDA toolkit would otherwise time the program with CUPTI's records)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_NCU_STATE": str(state),
           "CUDA_INJECTION64_PATH": "another-tool.so"}
    return env, state


def calls(state: Path) -> list[list[str]]:
    """Each ncu command line, in the order they started."""
    return [json.loads(line) for line in (state / "calls.jsonl").read_text().splitlines()]


def by_mode(state: Path) -> dict[str, list[list[str]]]:
    """The command lines by mode: launch, attach, pass1 (durations), pass2 (counters)."""
    found: dict[str, list[list[str]]] = {}
    for args in calls(state):
        mode = (args[args.index("--mode") + 1] if "--mode" in args
                else "pass2" if "--launch-count" in args else "pass1")
        found.setdefault(mode, []).append(args)
    return found


def waiting_program_is_gone(state: Path) -> bool:
    pid = int((state / "waiting.pid").read_text())
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def still_running(pids: list[int]) -> list[int]:
    """Those of ``pids`` that still run (a zombie, whose memory is freed, does not): what a
    stopped job must not leave behind."""
    alive = []
    for pid in pids:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                alive.append(pid)
        except (OSError, IndexError):
            pass
    return alive
