"""Pass 2 ends its program once the launches it needs are profiled (judge/kernel_choice.
early_end; measure/pass_runner.Ending): ncu's lines read as they come from a stand-in ncu
that writes a report, as the real one does (`-o`, a line per profiled launch, "Connected to
process PID"; on one H200 its results stayed whole when the program was killed, in launch
mode and attached alike), the program killed there, the report printed as the CSV."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from rooflint.measure import ncu
from rooflint.measure.pass_runner import Ending, PassProgress, run_ncu

CSV = Path(__file__).parents[1] / "fixtures" / "ncu" / "h200-transformer-block-pass2.csv"
REPORTING_NCU = '''#!{python}
import os, subprocess, sys, time
from pathlib import Path
args = sys.argv[1:]
if args[0] == "--import":
    print(Path(args[1]).read_text())
    sys.exit(0)
out = args[args.index("-o") + 1]
child = subprocess.Popen(args[args.index("-o") + 2:])
print("==PROF== Connected to process", os.environ.get("NAMED_PID", child.pid), "(python)",
      flush=True)
for name in os.environ["PROFILED"].split("|"):
    time.sleep(0.05)
    print(f'==PROF== Profiling "{{name}}": 0%....50%....100% - 8 passes', flush=True)
code = child.wait()
Path(out + ".ncu-rep").write_text(Path({csv!r}).read_text())
sys.exit(-code if code < 0 else code)
'''
NAMES = ("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>"
         "(int, at::native::AddFunctor<float>)", "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA",
         "void at::native::reduce_kernel<512, 1>(at::native::ReduceOp<float>)")
FUNCTIONS = ("vectorized_elementwise_kernel", "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA",
             "reduce_kernel")


@pytest.fixture
def reporting_ncu(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ncu").write_text(REPORTING_NCU.format(python=sys.executable, csv=str(CSV)))
    (bin_dir / "ncu").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{Path(sys.executable).parent}:/usr/bin:/bin")
    return monkeypatch


def profiled(monkeypatch, names, program_s, tmp_path):
    monkeypatch.setenv("PROFILED", "|".join(names))
    said: list[str] = []
    ending = Ending(FUNCTIONS, after_s=80.0)
    began = time.monotonic()
    done = run_ncu([*ncu.CLOCKS_UNTOUCHED], [sys.executable, "-c",
                                              f"import time; time.sleep({program_s})"],
                   tmp_path, "pass2-counters.csv", PassProgress("pass 2", said.append),
                   ending=ending)
    return done, ending, said, time.monotonic() - began


def test_the_program_is_ended_once_its_launches_are_profiled(reporting_ncu, tmp_path):
    done, ending, said, wall = profiled(reporting_ncu, NAMES, 60, tmp_path)
    assert ending.ended and ending.seen == 3 and wall < 20
    assert len(ncu.parse_rows(done.log)) == len(ncu.parse_rows(CSV.read_text()))
    assert (tmp_path / "pass2-counters.csv").read_text().strip() == CSV.read_text().strip()
    assert said == [f"pass 2: its 3 launches profiled {ending.ended_at_s:.0f} s in, the program "
                    f"was ended there (pass 1 ran it 80 s more, to its end)"]


@pytest.mark.parametrize("names", [
    (NAMES[1], NAMES[0], NAMES[2]),                     # another order
    (NAMES[0], "void other_kernel<1>(int)", *NAMES[1:]),  # a launch pass 1 did not see
    NAMES[:2],                                          # one never launched
])
def test_a_program_that_launches_otherwise_runs_to_its_end(reporting_ncu, tmp_path, names):
    done, ending, said, wall = profiled(reporting_ncu, names, 1.5, tmp_path)
    assert not ending.ended and wall >= 1.5 and said == []
    assert ncu.parse_rows(done.log)


@pytest.mark.parametrize("lines, ends", [
    (["==PROF== Connected to process 42 (python)", *(f'==PROF== Profiling "{n}": 100%'
                                                     for n in NAMES)], [False] * 3 + [True]),
    ([*(f'==PROF== Profiling "{n}": 100%' for n in NAMES)], [False] * 3),   # no process named
    (["==PROF== Connected to process 42 (python)", f'==PROF== Profiling "{NAMES[0]}": 100%',
      f'==PROF== Profiling "{NAMES[0]}": 100%', f'==PROF== Profiling "{NAMES[1]}": 100%',
      f'==PROF== Profiling "{NAMES[2]}": 100%'], [False] * 5),
])
def test_an_ending_reads_ncus_lines(lines, ends):
    ending = Ending(FUNCTIONS, 10.0)
    assert [ending.read(line) for line in lines] == ends


def test_no_process_outside_the_programs_session_is_killed(reporting_ncu, tmp_path):
    """Launched by ncu, the program prints to ncu's lines: a "Connected to process" naming
    another process (here a sleeper of its own session, standing for PID 1 or the user's
    shell) is not killed, and the program runs to its end."""
    import subprocess
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                             start_new_session=True)
    try:
        reporting_ncu.setenv("NAMED_PID", str(other.pid))
        done, ending, said, wall = profiled(reporting_ncu, NAMES, 1.5, tmp_path)
        assert other.poll() is None
        assert not ending.ended and ending.off and wall >= 1.5 and said == []
        assert ncu.parse_rows(done.log)
    finally:
        other.kill()
        other.wait()
