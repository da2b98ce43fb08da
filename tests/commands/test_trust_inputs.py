"""Issue 22, part A: no manifest runs code, and every input mistake is one line before
anything needs a GPU or ncu.

- Compiler options are data: only what `compile_options.FLAGS` allows reaches NVRTC or
  nvcc; the issue's two exploits (``-MD -MF victim`` overwrote a file, ``-ccbin DIR`` ran
  ``DIR/g++``) and each family of refused options are one line naming the field.
- Mistakes in sizes, launch geometry, reference.py and python variants' modules,
  ``--timeout``, ``--gpu``, ``--devices``, the profiled program and the manifest's path
  are refused before any worker starts: a stand-in CuPy that leaves a mark when a worker
  imports it shows no worker started (tests run with no GPU visible).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import yaml

from edges import REPO, TOY, TOY_SOURCE, assert_intact, assert_one_line_error, rooflint, snapshot
from rooflint.formats import compile_options
from rooflint.common.errors import RooflintError
from rooflint.formats.families import bundled_manifests
from rooflint.formats.family_code import check_code
from rooflint.formats.family_job import check_sizes
from rooflint.formats.manifest import load_manifest
from rooflint.measure import build

FAMILY = (TOY.replace("name: toy", "name: trust").replace("toy.cu", "k.cu")
          .replace("  v1:", "  fast:").replace(", shared_mem: 0", ""))
REFERENCE = "import numpy as np\n\n\ndef ref(bufs, params):\n    return {}\n"


def family(tmp_path: Path, text: str = FAMILY, options: list[str] | None = None,
           variant_options: list[str] | None = None, reference: str | None = REFERENCE
           ) -> Path:
    """A user's family: kernel.yaml (with these options), k.cu, reference.py."""
    directory = tmp_path / "trust"
    directory.mkdir()
    (directory / "k.cu").write_text(TOY_SOURCE)
    if reference is not None:
        (directory / "reference.py").write_text(reference)
    data = yaml.safe_load(text)
    if options is not None:
        data["options"] = options
    if variant_options is not None:
        data["variants"]["fast"]["options"] = variant_options
    (directory / "kernel.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return directory


@pytest.fixture
def watched(tmp_path):
    """The environment of a run whose worker, if one starts, leaves a mark: a stand-in
    CuPy that writes the file ``started`` when imported (the worker's first import)."""
    stand_in = tmp_path / "stand_in" / "cupy"
    stand_in.mkdir(parents=True)
    started = tmp_path / "started"
    (stand_in / "__init__.py").write_text(
        f"open({str(started)!r}, 'w').write('a worker started')\n"
        "raise ImportError('stand-in CuPy')\n")
    return {"PYTHONPATH": str(stand_in.parent)}, started


def refused_before_any_worker(watched, *args: str, fragments: list[str]) -> None:
    env, started = watched
    outcome = rooflint(*args, env=env, timeout=60)
    assert_one_line_error(outcome, 2, *fragments)
    assert not started.exists(), "a worker started before the input was refused"


def test_a_valid_family_does_start_a_worker(tmp_path, watched):
    """The control for every `refused_before_any_worker` case: the mark does appear."""
    env, started = watched
    outcome = rooflint("run", str(family(tmp_path)), "--counters", "off", env=env, timeout=60)
    assert outcome.code == 2 and started.exists(), outcome.stderr


# -- 1. compiler options are data ----------------------------------------------------------

@pytest.fixture
def fake_nvcc(tmp_path, monkeypatch):
    """An nvcc on PATH that does what the real one does with -MF and -ccbin: writes the
    dependency file, runs DIR/g++ (which leaves ``ran``). Then it fails the build."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    nvcc = bin_dir / "nvcc"
    nvcc.write_text(f"#!{sys.executable}\n" + """\
import pathlib, subprocess, sys
args = sys.argv[1:]
if "--version" in args:
    print("Cuda compilation tools, release 13.0, V13.0.88")
    sys.exit(0)
for flag, value in zip(args, args[1:]):
    if flag == "-MF":
        pathlib.Path(value).write_text("k.o: k.cu\\n")
    if flag == "-ccbin":
        subprocess.run([str(pathlib.Path(value) / "g++")])
sys.exit(1)
""")
    nvcc.chmod(0o755)
    host = tmp_path / "host"
    host.mkdir()
    (host / "g++").write_text(f"#!/bin/sh\necho ran > {tmp_path / 'ran'}\n")
    (host / "g++").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return host, tmp_path / "ran"


def build_as_the_worker_would(directory: Path, cache: Path) -> None:
    """Every variant's options handed to nvcc, as `compiler: nvcc` does."""
    for variant in load_manifest(directory).variants:
        build.build(directory / variant.source, ["scale"], variant.options, "sm_90", cache)


def test_the_issue_dependency_file_overwrite(tmp_path, fake_nvcc, watched):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    directory = family(tmp_path, variant_options=["-MD", "-MF", str(victim)])
    before = snapshot(victim, directory)
    with pytest.raises(RooflintError, match=r"'variants.fast.options\[0\]' is '-MD': it "
                                            r"makes the compiler write files"):
        build_as_the_worker_would(directory, tmp_path / "cache")
    refused_before_any_worker(watched, "run", str(directory), fragments=[
        str(directory / "kernel.yaml"), "'variants.fast.options[0]' is '-MD'", "write files"])
    assert_intact(before)


def test_the_issue_host_compiler_choice(tmp_path, fake_nvcc, watched):
    host, ran = fake_nvcc
    directory = family(tmp_path, variant_options=["-DTILE=4", "-lineinfo", "-ccbin", str(host)])
    with pytest.raises(RooflintError, match=r"'variants.fast.options\[2\]' is '-ccbin'"):
        build_as_the_worker_would(directory, tmp_path / "cache")
    refused_before_any_worker(watched, "run", str(directory), fragments=[
        "'variants.fast.options[2]' is '-ccbin'", "a program for the compiler to run"])
    assert not ran.exists()


# (the options, the index refused, the fragment saying why): one family per test below
WRITES = "write files"
PROGRAMS = "a program for the compiler to run, or hands options to one"
OPTION_FILES = "reads further options from a file"
OUTSIDE = "inside the family's directory"
UNKNOWN = "not an option rooflint passes to a compiler"


@pytest.mark.parametrize("options, index, shown", [
    (["-o", "/tmp/out.cubin"], 0, "'-o'"),
    (["-o/tmp/out.cubin"], 0, "'-o/tmp/out.cubin'"),
    (["-DX=1", "--output-directory=/tmp"], 1, "'--output-directory=/tmp'"),
    (["-odir", "/tmp"], 0, "'-odir'"),
    (["-keep"], 0, "'-keep'"),
    (["-keep-dir", "/tmp"], 0, "'-keep-dir'"),
    (["-MMD"], 0, "'-MMD'"),
    (["--generate-dependencies-with-compile"], 0, "'--generate-dependencies-with-compile'"),
    (["--time", "/tmp/t.csv"], 0, "'--time'"),
    (["--fdevice-time-trace=/tmp/trace.json"], 0, "'--fdevice-time-trace=/tmp/trace.json'"),
])
def test_options_that_write_files(tmp_path, options, index, shown):
    outcome = rooflint("run", str(family(tmp_path, options=options)))
    assert_one_line_error(outcome, 2, f"'options[{index}]' is {shown}", WRITES)


@pytest.mark.parametrize("options, shown", [
    (["--compiler-bindir=/usr/bin"], "'--compiler-bindir=/usr/bin'"),
    (["-Xcompiler", "-fplugin=/tmp/evil.so"], "'-Xcompiler'"),
    (["--compiler-options=-wrapper,/bin/sh"], "'--compiler-options=-wrapper,/bin/sh'"),
    (["-Xlinker", "-rpath=/tmp"], "'-Xlinker'"),
    (["--linker-options", "x"], "'--linker-options'"),
    (["--run"], "'--run'"),
    (["-run-args", "x"], "'-run-args'"),
])
def test_options_that_name_or_feed_a_program(tmp_path, options, shown):
    outcome = rooflint("run", str(family(tmp_path, options=options)))
    assert_one_line_error(outcome, 2, f"'options[0]' is {shown}", PROGRAMS)


@pytest.mark.parametrize("options, shown", [
    (["--options-file", "more.txt"], "'--options-file'"),
    (["-optf=more.txt"], "'-optf=more.txt'"),
    (["@more.txt"], "'@more.txt'"),
])
def test_options_read_from_a_file(tmp_path, options, shown):
    outcome = rooflint("run", str(family(tmp_path, options=options)))
    assert_one_line_error(outcome, 2, f"'options[0]' is {shown}", OPTION_FILES)


@pytest.mark.parametrize("options, shown", [
    (["-include", "{outside}"], "'-include {outside}'"),
    (["--pre-include=../outside.h"], "'--pre-include=../outside.h'"),
    (["-include", "/etc/hostname"], "'-include /etc/hostname'"),
])
def test_pre_includes_outside_the_family(tmp_path, options, shown):
    outside = tmp_path / "outside.h"
    outside.write_text("#define X 1\n")
    options = [o.format(outside=outside) for o in options]
    outcome = rooflint("run", str(family(tmp_path, variant_options=options)))
    assert_one_line_error(outcome, 2, "'variants.fast.options[0]' is " +
                          shown.format(outside=outside), OUTSIDE)


@pytest.mark.parametrize("make, options, shown", [
    (None, ["-I/etc"], "'-I/etc'"),
    (None, ["-I", "../.."], "'-I ../..'"),
    (None, ["--include-path=include/../../.."], "'--include-path=include/../../..'"),
    ("link", ["-Ilink"], "'-Ilink'"),       # a link inside the family to a directory outside
])
def test_include_directories_outside_the_family(tmp_path, make, options, shown):
    directory = family(tmp_path, options=options)
    (directory / "include").mkdir()
    if make == "link":
        (directory / "link").symlink_to(tmp_path)
    outcome = rooflint("run", str(directory))
    assert_one_line_error(outcome, 2, f"'options[0]' is {shown}", OUTSIDE)


@pytest.mark.parametrize("options, index, fragments", [
    (["--frobnicate"], 0, ["'--frobnicate'", UNKNOWN]),
    (["-lineinfo", "/tmp/other.cu"], 1, ["'/tmp/other.cu'", UNKNOWN]),
    (["-isystem", "/usr/include"], 0, ["'-isystem'", UNKNOWN]),
    (["-arch=native"], 0, ["'-arch=native'", "a plain sm_XX or compute_XX"]),
    (["-DX=$(touch /tmp/rooflint-pwned)"], 0, ["-D takes NAME or NAME=VALUE",
                                               "no spaces, quotes, $"]),
    (["-D", "X=`id`"], 0, ["'-D X=`id`'", "no spaces, quotes, $"]),
    (["-Iinclude$(id)"], 0, ["a path in options may not hold spaces, quotes, $"]),
    (["-Xptxas", "-o,/tmp/x"], 0, ["-Xptxas takes -O0 to -O3"]),
    (["-maxrregcount"], 0, ["-maxrregcount needs a register count"]),
    (["-lineinfo=true"], 0, ["-lineinfo takes no value"]),
])
def test_unknown_options_and_values(tmp_path, options, index, fragments):
    outcome = rooflint("run", str(family(tmp_path, options=options)))
    assert_one_line_error(outcome, 2, str(tmp_path / "trust" / "kernel.yaml"),
                          f"'options[{index}]'", *fragments)


def test_allowed_options_reach_the_compiler_as_written(tmp_path):
    """Each allowed flag in its spellings; include paths made absolute, inside the tree."""
    options = ["-DTILE=64", "-D", "FAST", "-UDEBUG", "-Iinclude", "-I", "include/sub",
               "--include-path=include", "-include", "include/pre.h", "-std=c++17",
               "--std", "c++20", "-O3", "-Xptxas", "-O3,-v", "-Xptxas=--warn-on-spills",
               "-lineinfo", "--generate-line-info", "-maxrregcount=64", "--maxrregcount",
               "32", "--use_fast_math", "-use_fast_math", "--extra-device-vectorization",
               "--ftz=true", "-prec-div=false", "--prec-sqrt", "true", "--fmad=false",
               "-arch=sm_90a", "--gpu-architecture", "compute_90", "--restrict", "-w",
               "--expt-relaxed-constexpr", "--extended-lambda"]
    directory = family(tmp_path, variant_options=options)
    (directory / "include" / "sub").mkdir(parents=True)
    (directory / "include" / "pre.h").write_text("")
    include = directory / "include"
    [variant] = load_manifest(directory).variants
    expected = [*options]
    expected[4:10] = [f"-I{include}", "-I", str(include / "sub"), f"--include-path={include}",
                      "-include", str(include / "pre.h")]
    assert variant.options == expected
    assert compile_options.include_dirs(variant.options) == [include, include / "sub", include]


def test_a_family_kept_under_a_spaced_directory_builds_its_include_paths(tmp_path):
    """Only what the manifest writes must be plain: where the user keeps it may not be."""
    spaced = tmp_path / "my kernels"
    spaced.mkdir()
    directory = family(spaced, options=["-Iinclude"])
    (directory / "include").mkdir()
    options = load_manifest(directory).variants[0].options
    assert compile_options.include_dirs(options) == [directory / "include"]


def test_an_include_directory_that_is_missing_is_named(tmp_path):
    outcome = rooflint("run", str(family(tmp_path, options=["-Iinclude"])))
    assert_one_line_error(outcome, 2, "'options[0]' is '-Iinclude'", "is not a directory")


def test_every_bundled_and_test_family_still_loads():
    """Their options are allowed, their sizes valid without a device, their code there."""
    paths = [*bundled_manifests(), *sorted((REPO / "tests" / "families").glob("*/kernel.yaml"))]
    assert len(paths) >= 8
    for path in paths:
        manifest = load_manifest(path)
        check_sizes(manifest, {})
        check_code(manifest)


def test_a_source_named_for_the_shell_is_refused(tmp_path):
    directory = family(tmp_path, FAMILY.replace("source: k.cu", "source: k$(id).cu"))
    (directory / "k$(id).cu").write_text("")
    outcome = rooflint("run", str(directory))
    assert_one_line_error(outcome, 2, "'variants.fast.source' is 'k$(id).cu'", "shell")


def test_nvcc_never_gets_a_path_its_shell_would_expand(tmp_path, fake_nvcc):
    """The family's own directory may be named so (the manifest cannot see that): the
    build refuses it instead of handing it to nvcc, which would run ``touch``."""
    directory = tmp_path / "fam$(touch pwned)"
    directory.mkdir()
    (directory / "k.cu").write_text("")
    with pytest.raises(build.BuildError, match=r"would expand; rename that directory"):
        build.build(directory / "k.cu", ["scale"], [], "sm_90", tmp_path / "cache")
    assert not (tmp_path / "pwned").exists() and not Path("pwned").exists()


def test_a_python_variant_module_outside_the_family(tmp_path):
    (tmp_path / "elsewhere.py").write_text("def launch(xp, bufs, params):\n    pass\n")
    text = FAMILY + "  other:\n    python: ../elsewhere.py:launch\n"
    outcome = rooflint("run", str(family(tmp_path, text)))
    assert_one_line_error(outcome, 2, "'variants.other.python' names ../elsewhere.py",
                          "outside the family's directory")


@pytest.mark.parametrize("entry", ['"k<1>\\n#include \\"/dev/zero\\""', '"k<1>}; int x[] = {0"'])
def test_an_entry_cannot_write_code_into_the_unit_rooflint_compiles(tmp_path, entry):
    """A template entry is written into the C++ unit nvcc builds (to instantiate it)."""
    outcome = rooflint("run", str(family(tmp_path, FAMILY.replace("entry: scale",
                                                                  f"entry: {entry}"))))
    assert_one_line_error(outcome, 2, "'variants.fast.launches[0].entry' is", "a kernel's name")


@pytest.mark.parametrize("change, fragments", [
    (("reference: ref", "reference: ref()"), ["'reference' is 'ref()'", "name of a function"]),
    (("reference: ref", "reference: ref\nprepare: [p]"), ["'prepare' is ['p']"]),
])
def test_function_fields_are_names(tmp_path, change, fragments):
    outcome = rooflint("run", str(family(tmp_path, FAMILY.replace(*change))))
    assert_one_line_error(outcome, 2, *fragments)


# -- 2. every input mistake before any worker starts -------------------------------------

@pytest.mark.parametrize("change, size, fragments", [
    (("params: {N: 1024}", "params: {N: 0}"), None, ["'buffers.x.shape' is 'N' = 0"]),
    (("params: {N: 1024}", "params: {N: -8}"), None, ["'buffers.x.shape' is 'N' = -8"]),
    (("params: {N: 1024}", "params: {N: 1000.5}"), None, ["'buffers.x.shape' is 'N' = 1000.5",
                                                         "whole number"]),
    (None, "N=0", ["'buffers.x.shape' is 'N' = 0", "N=0"]),
    (None, "N=-4", ["'buffers.x.shape' is 'N' = -4"]),
    (None, "N=2.5", ["'buffers.x.shape' is 'N' = 2.5"]),
    (("block: 256", "block: 2048"), None, ["'variants.fast.launches[0].block' is [2048]",
                                            "over the 1024"]),
    (("block: 256", "block: [1, 1, 128]"), None, ["'variants.fast.launches[0].block'",
                                                  "z is 128, over the 64"]),
    (('grid: "cdiv(N, 256)"', "grid: 0"), None, ["'variants.fast.launches[0].grid' is 0 = 0"]),
    (('grid: "cdiv(N, 256)"', "grid: [1, 70000]"), None, ["y is 70000, over the 65535"]),
    (('grid: "cdiv(N, 256)"', "grid: 2**31"), None, ["x is 2147483648, over the 2147483647"]),
    (("block: 256", "block: 256, shared_mem: -1"), None, ["'variants.fast.launches[0]."
                                                         "shared_mem' is -1"]),
])
def test_sizes_and_geometry_before_any_worker(tmp_path, watched, change, size, fragments):
    directory = family(tmp_path, FAMILY.replace(*change) if change else FAMILY)
    refused_before_any_worker(watched, "run", str(directory), "--counters", "off",
                              *(["--size", size] if size else []),
                              fragments=[str(directory / "kernel.yaml"), *fragments])


def test_a_size_naming_the_device_waits_for_it(tmp_path, watched):
    """``num_sms - 132`` is 0 on an H200 only: with no device known it is not refused."""
    env, started = watched
    text = FAMILY.replace('grid: "cdiv(N, 256)"', "grid: num_sms - 132")
    outcome = rooflint("run", str(family(tmp_path, text)), "--counters", "off", env=env)
    assert outcome.code == 2 and started.exists(), outcome.stderr
    assert "grid" not in outcome.stderr


MODULE = "def launch(xp, bufs, params):\n    pass\n"


@pytest.mark.parametrize("reference, extra, fragments", [
    (None, "", ["'reference' names ref()", "reference.py, which is not a file"]),
    ("def ref(bufs, params):\n    return {\n", "", ["'reference' names ref()",
                                                    "syntax error at line 2"]),
    ("def other(bufs, params):\n    return {}\n", "", ["'reference' names ref(), which",
                                                       "does not define (it defines: other)"]),
    ("import numpy\nraise RuntimeError('no data directory')\ndef ref(b, p):\n    return {}\n",
     "", ["'reference' names ref()", "raised RuntimeError at line 2 when imported: "
                                     "no data directory"]),
    ("import no_such_module_here\ndef ref(b, p):\n    return {}\n", "",
     ["raised ModuleNotFoundError at line 1"]),
    ("import torch\ndef other(b, p):\n    return {}\n", "",     # read, not imported
     ["'reference' names ref(), which", "does not define (it defines: other)"]),
    (REFERENCE, "  py:\n    python: module.py:launhc\n",
     ["'variants.py.python' names launhc()", "module.py does not define (it defines: launch)"]),
    (REFERENCE, "  py:\n    python: broken.py:launch\n",
     ["'variants.py.python' names launch()", "broken.py, which has a syntax error at line 1"]),
    (REFERENCE, "  py:\n    python: double_it\n", ["'variants.py.python' names double_it()"]),
    (REFERENCE, "  py:\n    baseline: cublas\n", ["'variants.py.baseline' names cublas()"]),
    (REFERENCE.replace("def ref", "def prep(bufs, params):\n    return {}\n\n\ndef ref"),
     "prepare: prepare_inputs\n", ["'prepare' names prepare_inputs()"]),
])
def test_python_code_mistakes_before_any_worker(tmp_path, watched, reference, extra,
                                                fragments):
    text = FAMILY + extra if extra.startswith("  ") else extra + FAMILY
    directory = family(tmp_path, text, reference=reference)
    (directory / "module.py").write_text(MODULE)
    (directory / "broken.py").write_text("def launch(:\n")
    refused_before_any_worker(watched, "run", str(directory), "--counters", "off",
                              fragments=[str(directory / "kernel.yaml"), *fragments])


def test_only_the_chosen_variants_code_is_needed(tmp_path, watched):
    """A mistake in a variant not asked for does not stop the one that is."""
    env, started = watched
    directory = family(tmp_path, FAMILY + "  py:\n    python: module.py:gone\n")
    (directory / "module.py").write_text(MODULE)
    outcome = rooflint("run", str(directory), "fast", "--counters", "off", env=env)
    assert outcome.code == 2 and started.exists(), outcome.stderr


def test_a_star_import_or_a_conditional_def_is_not_called_missing(tmp_path):
    directory = family(tmp_path, FAMILY + "  a:\n    python: star.py:anything\n"
                                          "  b:\n    python: guarded.py:launch\n")
    (directory / "star.py").write_text("from math import *\n")
    (directory / "guarded.py").write_text("try:\n    import triton\nexcept ImportError:\n"
                                          "    triton = None\nelse:\n" + "    " +
                                          MODULE.replace("\n    ", "\n        "))
    check_code(load_manifest(directory))


def test_reference_printing_stays_off_stdout(tmp_path):
    """`run --json -` keeps stdout for the result: reference.py's print at import (now
    made in rooflint's own process too) goes to stderr."""
    directory = family(tmp_path, reference="print('loading')\n" + REFERENCE)
    outcome = rooflint("run", str(directory), "--json", "-", "--counters", "off")
    assert "loading" not in outcome.stdout and "loading" in outcome.stderr


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "0"])
def test_timeout_must_be_a_positive_number_of_seconds(tmp_path, watched, value):
    refused_before_any_worker(watched, "run", str(family(tmp_path)), f"--timeout={value}",
                              fragments=[f"--timeout {value}", "above zero"])


def test_gpu_must_be_a_known_spec(tmp_path, watched):
    refused_before_any_worker(watched, "run", str(family(tmp_path)), "--gpu", "nosuch",
                              fragments=["--gpu: unknown GPU 'nosuch'", "h100-sxm"])


@pytest.mark.parametrize("devices, fragment", [
    ("foo", "--devices 'foo': expected 'all' or GPU indices"),
    ("-1", "--devices -1: GPU indices count from 0"),
    ("0,0", "--devices 0,0: a GPU is named twice"),
])
def test_devices_nonsense_is_named_before_the_gpus_are_counted(tmp_path, watched, devices,
                                                              fragment):
    """No GPU is visible, and none is needed to see these are wrong."""
    refused_before_any_worker(watched, "run", str(family(tmp_path)), f"--devices={devices}",
                              fragments=[fragment])


def not_executable(tmp_path: Path) -> str:
    script = tmp_path / "train.sh"
    script.write_text("echo hi\n")
    script.chmod(0o644)
    return str(script)


@pytest.mark.parametrize("program, fragments", [
    (lambda tmp: "/nonexistent", ["profile: /nonexistent: no such file"]),
    (lambda tmp: "no-such-program-here", ["no program 'no-such-program-here' on PATH"]),
    (not_executable, ["is not executable", "rooflint profile -- python"]),
    (lambda tmp: str(tmp), ["is a directory, not a program"]),
])
def test_profile_names_a_program_that_cannot_run(tmp_path, program, fragments):
    """Checked before ncu is looked for (it is not on this machine's PATH)."""
    outcome = rooflint("profile", "--", program(tmp_path))
    assert_one_line_error(outcome, 2, *fragments)


def test_profile_checks_gpu_before_ncu():
    outcome = rooflint("profile", "--gpu", "nosuch", "--", sys.executable, "-c", "pass")
    assert_one_line_error(outcome, 2, "--gpu: unknown GPU 'nosuch'")


def test_the_ncu_check_still_comes_for_a_valid_program():
    """The control: a program that exists passes on to the (missing) ncu."""
    outcome = rooflint("profile", "--", sys.executable, "-c", "pass",
                       env={"PATH": str(Path(sys.executable).parent)})
    assert_one_line_error(outcome, 2, "ncu")


@pytest.mark.parametrize("make, fragment", [
    (lambda p: p.mkdir(), "is a directory, not a file"),
    (lambda p: os.mkfifo(p), "is a named pipe (FIFO), not a file"),
    (lambda p: p.symlink_to(p.name), "is a symbolic link that loops"),
    (lambda p: p.symlink_to("gone.yaml"), "is a symbolic link to gone.yaml, which does not "
                                          "exist"),
])
def test_a_manifest_that_is_not_a_file_says_what_it_is(tmp_path, make, fragment):
    directory = tmp_path / "fam"
    directory.mkdir()
    make(directory / "kernel.yaml")
    for target in (directory, directory / "kernel.yaml"):
        outcome = rooflint("run", str(target), timeout=20)
        assert_one_line_error(outcome, 2, f"{directory / 'kernel.yaml'} {fragment}")


def test_a_missing_manifest_keeps_its_message(tmp_path):
    outcome = rooflint("run", str(tmp_path / "nowhere"))
    assert_one_line_error(outcome, 2, "no kernel manifest at", "nowhere")
