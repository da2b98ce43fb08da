import textwrap
from pathlib import Path

import pytest

from rooflint.common.errors import RooflintError
from rooflint.formats.families import bundled_manifests
from rooflint.formats.family_job import resolve
from rooflint.formats.manifest import load_manifest
from rooflint.formats.jobs import FamilyJob, TimingJob

DEVICE = {"num_sms": 132}


def resolved(target, sizes=None, variants=None):
    return resolve(load_manifest(target), sizes or {}, DEVICE, TimingJob(), variants)


def test_bundled_families_are_found():
    assert {p.parent.name for p in bundled_manifests()} >= {"stream", "gemm_fp32"}


def test_gemm_model_and_launches():
    family = resolved("gemm_fp32")
    naive = family.models["naive"]
    assert naive.flops == 2 * 4096**3 and naive.bytes == 12 * 4096**2
    assert naive.flops / naive.bytes == pytest.approx(4096 / 6)
    launch = next(v for v in family.job.variants if v.name == "blocked_2d").launches[0]
    assert launch.grid == [32, 32] and launch.block == [256]
    assert [a.buffer or a.ctype for a in launch.args] == ["i32", "A", "B", "C"]
    assert launch.args[0].value == 4096
    assert family.models["cublas"].baseline and not family.job.variants[-1].launches


def test_size_overrides_flow_into_everything():
    family = resolved("gemm_fp32", {"N": 1024})
    assert family.models["tiled"].flops == 2 * 1024**3
    assert family.job.buffers[0].shape == [1024, 1024]
    tiled = next(v for v in family.job.variants if v.name == "tiled")
    assert tiled.launches[0].grid == [32, 32]


def test_per_variant_model_overrides_and_device_names():
    family = resolved("stream", {"N": 2**20})
    assert family.models["copy_float4"].flops == 0
    assert family.models["triad"].flops == 2 * 2**20 and family.models["triad"].bytes == 12 * 2**20
    assert family.models["copy_float4"].grid_blocks == 8 * 132
    assert family.models["copy_few_blocks"].grid_blocks == 16
    triad = next(v for v in family.job.variants if v.name == "triad")
    assert triad.reference == "triad" and triad.tolerance == 1e-7
    scalar = [a for a in triad.launches[0].args if a.ctype == "f32"][0]
    assert scalar.value == 2.0 and isinstance(scalar.value, float)


def test_variant_selection():
    family = resolved("gemm_fp32", variants=["tiled", "cublas"])
    assert [v.name for v in family.job.variants] == ["tiled", "cublas"]
    with pytest.raises(RooflintError, match="no variant nope"):
        resolved("gemm_fp32", variants=["nope"])


def test_unknown_size_parameter():
    with pytest.raises(RooflintError, match="unknown size parameter"):
        resolved("gemm_fp32", {"K": 4})


def test_job_survives_json_round_trip():
    import json
    job = resolved("stream").job
    assert FamilyJob.from_json(json.loads(json.dumps(job.to_json()))) == job


GOOD = """\
name: toy
params: {N: 1024, HALF: N/2}
precision: fp32
flops: 2*N
bytes: 12*N
reference: ref
tolerance: 1e-6
buffers:
  x: {dtype: float32, shape: N, role: in}
  y: {dtype: float32, shape: [N], role: inout}
variants:
  v1:
    source: toy.cu
    launches:
      - {entry: "k<4>", grid: "cdiv(N, 256)", block: 256, shared_mem: 1024,
         args: [x, y, {i32: HALF}]}
    expect: {bound: bandwidth, faster_than: v0}
"""


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "toy.cu").write_text("// toy\n")
    (tmp_path / "kernel.yaml").write_text(textwrap.dedent(text))
    return tmp_path


def test_user_manifest_anywhere_on_disk(tmp_path):
    directory = write(tmp_path, GOOD)
    for target in (directory, directory / "kernel.yaml", str(directory)):
        family = resolve(load_manifest(target), {}, DEVICE, TimingJob())
        launch = family.job.variants[0].launches[0]
        assert launch.entry == "k<4>" and launch.grid == [4] and launch.shared_mem == 1024
        assert launch.args[2].value == 512
        assert family.models["v1"].expect.bound == "bandwidth"


@pytest.mark.parametrize("change, message", [
    (("role: inout", "role: output"), "'buffers.y.role' is 'output'"),
    (("dtype: float32, shape: N", "dtype: float33, shape: N"), "'buffers.x.dtype'"),
    (("tolerance: 1e-6\n", ""), "missing field 'tolerance'"),
    (("source: toy.cu", "source: missing.cu"), "names missing.cu"),
    (("args: [x, y, {i32: HALF}]", "args: [x, z, {i32: HALF}]"), "'z', which is not a buffer"),
    (("args: [x, y, {i32: HALF}]", "args: [x, y, HALF]"), "{i32: HALF}"),
    (("{i32: HALF}", "{int: HALF}"), "expected one of i32"),
    (("bound: bandwidth", "bound: memory"), "'variants.v1.expect.bound'"),
    (("precision: fp32", "precision: fp31"), "precision"),
    (("HALF: N/2", "HALF: N/"), "'params.HALF' is not a number"),
    (("    source: toy.cu\n", "    baseline: lib\n    source: toy.cu\n"), "exactly one of"),
])
def test_mistakes_name_the_file_and_field(tmp_path, change, message):
    directory = write(tmp_path, GOOD.replace(*change))
    with pytest.raises(RooflintError) as info:
        load_manifest(directory)
    assert str(directory / "kernel.yaml") in str(info.value)
    assert message in str(info.value)


def test_malformed_yaml(tmp_path):
    directory = write(tmp_path, "name: [toy\n")
    with pytest.raises(RooflintError, match="not valid YAML"):
        load_manifest(directory)


def test_bad_launch_geometry_is_caught_at_resolve(tmp_path):
    directory = write(tmp_path, GOOD.replace('"cdiv(N, 256)"', "N/3"))
    with pytest.raises(RooflintError,
                       match=r"launches\[0\].grid. is .N/3. = 341.333; expected a whole number"):
        resolve(load_manifest(directory), {}, DEVICE, TimingJob())


def test_missing_target():
    with pytest.raises(RooflintError, match="no kernel manifest at nowhere"):
        load_manifest("nowhere")
