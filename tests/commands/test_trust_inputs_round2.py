"""Issue 45: the toolkit's include directory, and input errors said before "no GPU"/"no ncu".

- A manifest's ``-I`` may name the CUDA toolkit's include directory: compared once both
  sides are resolved (NVIDIA's ``include`` is a link into ``targets/x86_64-linux``), and
  only a real toolkit counts (its ``bin/nvcc`` compiled, its runtime header there): nvcc
  on PATH as a wrapper script in ``/usr/local/bin`` never makes ``/usr/local`` one.
- The campaign's inputs that were answered "CuPy is not installed" or "ncu is not on PATH"
  each get their own one line naming the file or option, exit 2, before either check
  (this machine has neither CuPy nor ncu, so an answer that names them came too early).
  ``profile -- true`` and ``-- false`` name programs that exist: nothing about them is
  wrong until they run, so Nsight Compute's absence is the first thing to say; given ncu
  (a stand-in), each gets its own answer.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from edges import TOY, assert_one_line_error, family, rooflint
from rooflint.common import toolkit
from rooflint.common.errors import RooflintError
from rooflint.formats.manifest import load_manifest
from rooflint.measure.program import LOGS

NO_NCU = {"PATH": "/usr/bin:/bin"}        # where true, false and sh are; never ncu
ELF_PROGRAM = b"\x7fELF\x02\x01\x01" + bytes(57)


def with_options(parent: Path, include: Path | str) -> Path:
    """The toy family, in ``parent``, with ``-I<include>`` among its options."""
    parent.mkdir(exist_ok=True)
    return family(parent, TOY.replace("buffers:", f'options: ["-I{include}"]\nbuffers:'))


def nvidia_toolkit(root: Path) -> Path:
    """NVIDIA's layout: ``cuda -> cuda-13.0``, a compiled ``bin/nvcc``, the headers in
    ``targets/x86_64-linux/include`` and ``include`` a link to them."""
    real = root / "cuda-13.0"
    headers = real / "targets" / "x86_64-linux" / "include"
    headers.mkdir(parents=True)
    (headers / "cuda_runtime.h").write_text("")
    (real / "include").symlink_to(Path("targets") / "x86_64-linux" / "include")
    (real / "bin").mkdir()
    (real / "bin" / "nvcc").write_bytes(ELF_PROGRAM)
    (real / "bin" / "nvcc").chmod(0o755)
    (root / "cuda").symlink_to("cuda-13.0")
    return root / "cuda"


def wrapper_in_usr_local(root: Path, toolkit_root: Path) -> Path:
    """``/usr/local`` as a cluster has it: nvcc in ``bin`` a script that runs the
    toolkit's, ``include`` other software's headers (a cuda_runtime.h among them)."""
    usr_local = root / "usr" / "local"
    (usr_local / "bin").mkdir(parents=True)
    (usr_local / "bin" / "nvcc").write_text(f'#!/bin/sh\nexec {toolkit_root}/bin/nvcc "$@"\n')
    (usr_local / "bin" / "nvcc").chmod(0o755)
    (usr_local / "include").mkdir()
    (usr_local / "include" / "cuda_runtime.h").write_text("")
    return usr_local


@pytest.fixture
def no_toolkit(tmp_path, monkeypatch):
    """An environment that names no toolkit: no nvcc on PATH, no $CUDA_HOME or
    $CUDA_PATH, and the usual /usr/local/cuda somewhere empty."""
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(toolkit, "USUAL_ROOT", tmp_path / "no-usual-cuda")
    return monkeypatch


@pytest.mark.parametrize("found_by", ["usual root", "CUDA_HOME", "CUDA_PATH", "PATH"])
def test_the_toolkit_include_directory_is_allowed_through_its_targets_link(
        tmp_path, no_toolkit, found_by):
    cuda = nvidia_toolkit(tmp_path / "opt")
    if found_by == "usual root":
        no_toolkit.setattr(toolkit, "USUAL_ROOT", cuda)
    elif found_by == "PATH":
        no_toolkit.setenv("PATH", str(cuda / "bin"))
    else:
        no_toolkit.setenv(found_by, str(cuda))
    headers = (cuda / "include").resolve()
    assert toolkit.toolkit_include_dirs() == [headers]
    for number, written in enumerate((cuda / "include", headers)):
        directory = with_options(tmp_path / str(number), written)
        assert load_manifest(directory).variants[0].options == [f"-I{written}"]


def test_a_wrapper_scripts_directory_is_not_a_toolkit(tmp_path, no_toolkit):
    """nvcc on PATH a wrapper in usr/local/bin: /usr/local is no toolkit, whatever it
    holds; the toolkit the wrapper runs counts where the environment names it."""
    cuda = nvidia_toolkit(tmp_path / "opt")
    usr_local = wrapper_in_usr_local(tmp_path, cuda.resolve())
    no_toolkit.setenv("PATH", str(usr_local / "bin"))
    assert toolkit.find_nvcc() == usr_local / "bin" / "nvcc"    # builds still use it
    assert toolkit.toolkit_roots() == []
    with pytest.raises(RooflintError, match=r"'options\[0\]' is '-I.*usr/local/include': -I "
                       r"takes a directory .* \(none found: set CUDA_HOME to the toolkit\)"):
        load_manifest(with_options(tmp_path / "a", usr_local / "include"))
    no_toolkit.setattr(toolkit, "USUAL_ROOT", cuda)
    assert toolkit.toolkit_roots() == [cuda.resolve()]
    with pytest.raises(RooflintError, match=f"toolkit's include directory "
                                            f"\\({(cuda / 'include').resolve()}\\)"):
        load_manifest(with_options(tmp_path / "b", usr_local / "include"))
    directory = with_options(tmp_path / "c", cuda / "include")
    assert load_manifest(directory).variants[0].options == [f"-I{cuda / 'include'}"]


@pytest.mark.parametrize("broken", ["nvcc a script", "nvcc not executable", "no headers"])
def test_a_directory_is_a_toolkit_only_with_its_compiled_nvcc_and_headers(
        tmp_path, no_toolkit, broken):
    cuda = nvidia_toolkit(tmp_path / "opt")
    nvcc = cuda / "bin" / "nvcc"
    if broken == "nvcc a script":
        nvcc.write_text("#!/bin/sh\n")
    elif broken == "nvcc not executable":
        nvcc.chmod(0o644)
    else:
        (cuda / "include" / "cuda_runtime.h").unlink()
    no_toolkit.setenv("CUDA_HOME", str(cuda))
    assert toolkit.toolkit_roots() == []


def test_the_campaigns_usr_local_include_is_refused(tmp_path, no_toolkit):
    """The campaign's case as written: nvcc found at /usr/local/bin/nvcc (a wrapper there,
    or nothing at all on this machine), ``-I/usr/local/include`` in the manifest."""
    no_toolkit.setattr(toolkit, "find_nvcc", lambda: Path("/usr/local/bin/nvcc"))
    directory = with_options(tmp_path, "/usr/local/include")
    with pytest.raises(RooflintError, match=r"'options\[0\]' is '-I/usr/local/include': -I "
                                            r"takes a directory inside the family's"):
        load_manifest(directory)


# --- input errors said before CuPy and ncu are looked for --------------------------------

@pytest.mark.parametrize("replaced, written, shown", [
    ("  v1:", "  ../../x:", "'variants.../../x' is '../../x'"),
    ("  v1:", '  "\\e[2J\\e]0;pwned\\avariant":', "'variants.\\x1b[2J\\x1b]0;pwned\\x07variant'"),
    ("  v1:", "  !!binary aGVsbG8=:", "'variants.b'hello'' is b'hello', which YAML read as bytes"),
    ("  v1:", '  "v\\0x":', "'variants.v\\x00x' is 'v\\x00x'"),
    ("name: toy", "name: !!binary aGVsbG8=", "'name' is b'hello', which YAML read as bytes"),
    ("name: toy", 'name: "to\\0y"', "'name' is 'to\\x00y'"),
    ("name: toy", 'name: "../../x"', "'name' is '../../x'"),
    ("name: toy", 'name: ""', "'name' is ''"),
])
def test_a_family_or_variant_name_that_is_not_a_word(tmp_path, replaced, written, shown):
    directory = family(tmp_path, TOY.replace(replaced, written))
    outcome = rooflint("run", str(directory))
    assert_one_line_error(outcome, 2, f"{directory / 'kernel.yaml'}: {shown}",
                          "a name is one word of letters, digits")
    assert "\x1b" not in outcome.stderr and "\x00" not in outcome.stderr


def test_names_that_are_words_still_load(tmp_path):
    text = TOY.replace("name: toy", "name: toy-2.0+fast").replace("  v1:", "  v1.tiled_32-x+:")
    manifest = load_manifest(family(tmp_path, text))
    assert (manifest.name, manifest.variants[0].name) == ("toy-2.0+fast", "v1.tiled_32-x+")


def test_run_of_an_empty_target(tmp_path):
    """Not every bundled family (nor the current directory, which Path('') is)."""
    family(tmp_path)
    outcome = rooflint("run", "", cwd=tmp_path / "toy")
    assert_one_line_error(outcome, 2, "TARGET is empty ('')")


@pytest.mark.parametrize("program", ["false", "true"])
def test_profile_of_a_program_that_exists_waits_for_ncu(program):
    """``false`` and ``true`` are programs: whether one fails or launches no kernel is
    known only once it runs, so with no ncu that is the one thing wrong."""
    outcome = rooflint("profile", "--", program, env=NO_NCU)
    assert_one_line_error(outcome, 2, "needs Nsight Compute: ncu is not on PATH")


@pytest.fixture
def ncu_of_no_kernels(fake_ncu) -> dict[str, str]:
    """The stand-in ncu's environment, its logs those of a program that launches none."""
    env, state = fake_ncu
    for log in ("pass1.csv", "pass2.csv"):
        (state / log).write_text("==WARNING== No kernels were profiled.\n")
    return env


@pytest.mark.parametrize("program, fragment", [
    ("false", "the command failed under ncu (exit 1)"),
    ("true", "true launched no CUDA kernel that ncu saw"),
])
def test_profile_of_false_and_true_given_ncu(ncu_of_no_kernels, program, fragment):
    outcome = rooflint("profile", "--", program, env=ncu_of_no_kernels)
    assert outcome.code == 2, outcome.stderr
    assert fragment in outcome.stderr.splitlines()[-1] and "Traceback" not in outcome.stderr


@pytest.mark.parametrize("option, value, fragment", [
    ("--nvtx", "", "--nvtx '': name the NVTX range"),
    ("--kernel", "", "--kernel '': an empty pattern matches every kernel"),
])
def test_profile_of_an_empty_filter(option, value, fragment):
    outcome = rooflint("profile", option, value, "--", "true", env=NO_NCU)
    assert_one_line_error(outcome, 2, fragment)


@pytest.mark.parametrize("match, fragment", [
    ('"gemm("', "is not a regular expression: missing )"),
    ('""', "is empty, which matches every kernel"),
    ("", "is empty, which matches every kernel"),
    ("12", "is 12, which YAML read as int, not text"),
    ("[gemm]", "is ['gemm'], which YAML read as list, not text"),
])
def test_profile_model_with_a_bad_pattern(tmp_path, match, fragment):
    model = tmp_path / "models.yaml"
    model.write_text(f"kernels:\n  - match: {match}\n    flops: 1\n    bytes: 1\n")
    outcome = rooflint("profile", "--model", str(model), "--", "true", env=NO_NCU)
    assert_one_line_error(outcome, 2, f"{model}: 'kernels[0].match' {fragment}")


def test_profile_logs_folder_is_not_made_for_a_refused_profile(tmp_path):
    logs = tmp_path / "new" / "logs"
    outcome = rooflint("profile", "--logs", str(logs), "--", "true", env=NO_NCU)
    assert_one_line_error(outcome, 2, "needs Nsight Compute")
    assert not (tmp_path / "new").exists()


def test_profile_logs_folder_that_cannot_be_made_is_said_before_ncu(tmp_path):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine\n")
    outcome = rooflint("profile", "--logs", str(a_file / "logs"), "--", "true", env=NO_NCU)
    assert_one_line_error(outcome, 2, f"--logs {a_file / 'logs'}: cannot make the directory "
                                      f"({a_file} is not a directory)")
    assert a_file.read_text() == "mine\n"


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write in any directory")
def test_profile_logs_folder_under_a_read_only_directory_is_said_before_ncu(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    outcome = rooflint("profile", "--logs", str(locked / "logs"), "--", "true", env=NO_NCU)
    assert_one_line_error(outcome, 2, f"({locked} may not be written in)")


def test_profile_logs_folder_is_made_once_ncu_is_found(ncu_of_no_kernels, tmp_path):
    logs = tmp_path / "new" / "logs"
    rooflint("profile", "--logs", str(logs), "--", "true", env=ncu_of_no_kernels)
    assert logs.is_dir() and {p.name for p in logs.iterdir()} <= set(LOGS)


# --- a variant the family does not have, said before the GPU is looked for ---------------

STREAM_VARIANTS = ", ".join(variant.name for variant in load_manifest("stream").variants)


@pytest.mark.parametrize("args", [
    ("compare", "stream:nosuch", "stream:copy_scalar"),
    ("compare", "stream:copy_scalar", "stream:nosuch"),
    ("compare", "stream:nosuch", "--rev", "HEAD"),
    ("run", "stream", "nosuch"),
])
def test_a_variant_the_family_lacks_is_named_before_the_gpu(args):
    """The campaign's case (`compare stream:nosuch stream:copy_scalar` had answered "CuPy
    is not installed"), either side, against a revision, and `run`'s alike."""
    outcome = rooflint(*args)
    assert_one_line_error(outcome, 2, f"stream: no variant nosuch (variants: "
                                      f"{STREAM_VARIANTS})")


# --- the -I refusal says where a path leads only when that is not where it is written ----

@pytest.mark.parametrize("written, leads_to", [
    ("/usr/local/include", None),
    ("../outside", "../outside is {outside}"),
    ("linked", "linked is {outside}"),
])
def test_the_include_refusal_says_where_a_path_leads_only_elsewhere(tmp_path, no_toolkit,
                                                                   written, leads_to):
    """The GPU machine's refusal of ``-I/usr/local/include`` ended "; /usr/local/include is
    /usr/local/include": said only for a path that ``..`` or a link takes elsewhere (the
    family is toy/, beside outside/)."""
    cuda = nvidia_toolkit(tmp_path / "opt")
    no_toolkit.setattr(toolkit, "USUAL_ROOT", cuda)
    outside = (tmp_path / "parent" / "outside").resolve()
    outside.mkdir(parents=True)
    directory = with_options(tmp_path / "parent", written)
    (directory / "linked").symlink_to(outside)
    with pytest.raises(RooflintError) as refused:
        load_manifest(directory)
    listed = f"or the CUDA toolkit's include directory ({(cuda / 'include').resolve()})"
    expected = listed + (f"; {leads_to.format(outside=outside)}" if leads_to else "")
    assert str(refused.value).endswith(expected), str(refused.value)
