"""Issue 45, the campaign's "unclear" and "wrong exit" rows: each message says what is
wrong, with the exact inputs the campaign typed (no GPU visible, as edges.rooflint runs).

- A file a manifest names that does not exist, or is a directory, is said to be so.
- A path here named like a bundled family is said to be the one taken.
- A word where a number belongs is "not a number", not an unknown name among none.
- ``--devices 99`` says there is no GPU 99 and what there is, without a GPU.
- ``run ''`` is an empty target, not a missing CuPy.
- explain: a time under a nanosecond is a slip of units, not "inf PB/s"; nothing to place
  (no FLOPs, no bytes) is refused, and so are FLOPs over 0 bytes; a copy is placed.
- compare's measured sides without a variant each say which side (A, B, or --rev's).
- ``plot -v nosuch`` names the variant and lists those there are.
- run and calibrate without a GPU leave standard output empty (rich's progress display
  printed a lone newline as it stopped).
- ``--show-completion zsh`` prints zsh's script, an unknown shell is refused, and an
  install that cannot write its files is one line.
"""

from __future__ import annotations

import shutil

import pytest

from edges import REPO, TOY, assert_one_line_error, family, rooflint
from rooflint.common.errors import RooflintError
from rooflint.common.paths import KERNELS_DIR
from rooflint.measure import devices

RESULT = REPO / "examples" / "h200-bundled.json"
EXPLAIN = ["explain", "--gpu", "h100-sxm"]


# -- files a manifest names ---------------------------------------------------------------

def test_a_source_outside_the_family_that_does_not_exist_is_said_to_be_missing(tmp_path):
    """Sources may lie outside the family: one that is nowhere is missing, not 'not in'."""
    deep = tmp_path / "a" / "b" / "c" / "d"
    deep.mkdir(parents=True)
    directory = family(deep, TOY.replace("source: toy.cu", "source: ../../../../etc/passwd"))
    outcome = rooflint("run", str(directory))
    assert_one_line_error(outcome, 2, "'variants.v1.source' names ../../../../etc/passwd, "
                          f"which does not exist ({tmp_path / 'a' / 'etc' / 'passwd'})")


def test_a_python_module_that_is_a_directory_is_said_to_be_one(tmp_path):
    in_module = TOY.split("variants:")[0] + "variants:\n  v1:\n    python: sub.py:launch\n"
    directory = family(tmp_path, in_module)
    (directory / "sub.py").mkdir()
    outcome = rooflint("run", str(directory))
    assert_one_line_error(outcome, 2, "'variants.v1.python' names sub.py, which is a "
                          "directory, not a file")


# -- which family a name means ------------------------------------------------------------

def test_a_directory_here_named_like_a_bundled_family_is_said_to_be_taken(tmp_path):
    shutil.copytree(KERNELS_DIR / "stream", tmp_path / "stream")
    outcome = rooflint("run", "stream", "--counters", "off", cwd=tmp_path)
    assert (f"rooflint: stream: measuring ./stream, not the bundled family of that name "
            f"({KERNELS_DIR / 'stream'})") in outcome.stderr.splitlines()


def test_a_directory_here_without_a_manifest_names_the_bundled_family(tmp_path):
    (tmp_path / "stream").mkdir()
    outcome = rooflint("run", "stream", cwd=tmp_path)
    assert_one_line_error(outcome, 2, "no kernel manifest at stream",
                          "./stream is taken before the bundled family stream: name that one "
                          f"by its path, {KERNELS_DIR / 'stream'}")


def test_an_empty_target_is_an_input_error_not_a_missing_gpu():
    assert_one_line_error(rooflint("run", ""), 2, "TARGET is empty")


# -- numbers and devices ------------------------------------------------------------------

def test_a_word_where_no_name_is_defined_is_not_a_number():
    outcome = rooflint("run", "stream", "--size", "N=abc")
    assert_one_line_error(outcome, 2, "--size N=abc: 'abc' is not a number, and no names are "
                          "defined here")
    assert "known: none" not in outcome.stderr


def test_a_gpu_index_past_those_there_are_says_so():
    assert_one_line_error(rooflint("run", "stream", "--devices", "99"), 2,
                          "--devices 99: no GPU 99 (this process sees no GPU)")


def test_without_an_nvidia_driver_no_gpu_is_visible(monkeypatch):
    """NVML's library missing: nothing could run on a GPU, so there is none to pick."""
    import pynvml

    def no_library():
        raise pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(pynvml, "nvmlInit", no_library)
    assert devices.visible_devices() == []


def test_gpus_nvml_cannot_count_are_named_through_cuda_visible_devices(monkeypatch):
    import pynvml

    def no_permission():
        raise pynvml.NVMLError(pynvml.NVML_ERROR_NO_PERMISSION)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(pynvml, "nvmlInit", no_permission)
    with pytest.raises(RooflintError, match="set CUDA_VISIBLE_DEVICES to the ones"):
        devices.visible_devices()


# -- explain --------------------------------------------------------------------------------

def test_a_time_under_a_nanosecond_is_a_slip_of_units():
    outcome = rooflint(*EXPLAIN, "--time", "1e-300", "--flops", "1e9", "--bytes", "1e9")
    assert_one_line_error(outcome, 2, "time '1e-300' is under a nanosecond", "check the units")
    assert "inf" not in outcome.stderr


@pytest.mark.parametrize("flops, bytes_, fragment", [
    ("0", "0", "--flops 0 and --bytes 0: nothing to place on the roofline"),
    ("1e9", "0", "--bytes 0: a kernel reads its inputs and writes its outputs"),
])
def test_nothing_to_place_is_refused(flops, bytes_, fragment):
    outcome = rooflint(*EXPLAIN, "--time", "1ms", "--flops", flops, "--bytes", bytes_)
    assert_one_line_error(outcome, 2, fragment)


def test_a_copy_with_no_flops_is_placed_under_the_dram_roof():
    outcome = rooflint(*EXPLAIN, "--time", "1ms", "--flops", "0", "--bytes", "1GB",
                       env={"COLUMNS": "200"})
    assert outcome.code == 0, outcome.stderr
    assert "AI observed 0 FLOP/B" in outcome.stdout and "left of the ridge" in outcome.stdout


# -- compare and plot -----------------------------------------------------------------------

@pytest.mark.parametrize("sides, fragment", [
    (["stream", "stream:triad"], "A (stream) is measured now, so it names one variant: "
                                 "stream:VARIANT (stream has copy_scalar, copy_float4, triad"),
    (["stream:triad", "stream"], "B (stream) is measured now, so it names one variant"),
    (["stream", "--rev", "HEAD"], "--rev HEAD measures one variant as it was then and as it "
                                  "is now: name it, stream:VARIANT (stream has"),
])
def test_a_measured_side_without_a_variant_says_which_side(sides, fragment):
    assert_one_line_error(rooflint("compare", *sides), 2, fragment)


def test_plotting_a_variant_no_result_holds_names_it_and_those_there_are(tmp_path):
    outcome = rooflint("plot", str(RESULT), "-v", "nosuch", "-o", str(tmp_path / "r.svg"))
    assert_one_line_error(outcome, 2, f"{RESULT} has no variant nosuch; it has causes: "
                          "barrier_bound", "stream: copy_scalar, copy_float4")
    assert not (tmp_path / "r.svg").exists()


# -- standard output without a GPU ----------------------------------------------------------

@pytest.mark.parametrize("args", [["run", "stream"], ["calibrate"],
                                  ["compare", "stream:triad", "stream:copy_scalar"]])
def test_a_command_that_fails_for_want_of_a_gpu_prints_nothing_on_standard_output(args):
    outcome = rooflint(*args)
    assert outcome.code == 2 and outcome.stdout == "", (outcome.stdout, outcome.stderr)


# -- shell completion -----------------------------------------------------------------------

def test_show_completion_prints_the_script_of_the_shell_named():
    outcome = rooflint("--show-completion", "zsh")
    assert outcome.code == 0 and outcome.stdout.startswith("#compdef rooflint"), outcome


def test_show_completion_refuses_a_shell_it_has_no_script_for():
    assert_one_line_error(rooflint("--show-completion", "zsh2"), 2, "--show-completion zsh2: "
                          "unknown shell; rooflint completes bash, zsh, fish")


def test_an_install_that_cannot_write_its_files_is_one_line(tmp_path):
    """A HOME where nothing can be made (a file: root writes through permissions)."""
    home = tmp_path / "home"
    home.write_text("not a directory\n")
    outcome = rooflint("--install-completion", "bash", env={"HOME": str(home)})
    assert_one_line_error(outcome, 2, f"--install-completion: cannot write {home}",
                          "is HOME")
    assert home.read_text() == "not a directory\n"
