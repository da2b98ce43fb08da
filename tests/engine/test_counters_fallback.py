"""When Nsight Compute cannot count, rooflint says so once and carries on with model bytes."""

import stat

import pytest

from recorded import RECORDED, use_stand_in_pools

from rooflint.engine import families as run_module
from rooflint.engine.counters_switch import CountersSwitch
from rooflint.common.errors import RooflintError
from rooflint.formats.family_job import resolve
from rooflint.formats.manifest import load_manifest
from rooflint.formats.settings import Settings
from rooflint.measure import ncu, runner
from rooflint.measure.ncu import CountersUnavailable
from rooflint.formats.jobs import Measurement, TimingJob

PERM_ERROR = ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access "
              "NVIDIA GPU Performance Counters on the target device 0. For instructions on "
              "enabling permissions and to get more information see "
              "https://developer.nvidia.com/ERR_NVGPUCTRPERM")


@pytest.fixture
def fake_ncu(tmp_path, monkeypatch):
    """An `ncu` on PATH that refuses like a cloud VM does, without running the worker."""
    script = tmp_path / "ncu"
    script.write_text(f"#!/bin/sh\necho '{PERM_ERROR}'\nexit 1\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    return script


@pytest.fixture
def stream():
    return resolve(load_manifest("stream"), {"N": 1024}, {"num_sms": 132}, TimingJob(),
                   ["copy_float4"])


def test_profile_reports_the_permission_error(fake_ncu, stream):
    with pytest.raises(CountersUnavailable, match="ERR_NVGPUCTRPERM") as info:
        runner.profile(stream.job, timeout=30, progress=lambda event, variant: None,
                       metrics=ncu.BASE_METRICS)
    assert "run as root" in str(info.value)


def ok(name):
    return Measurement(name, "ok", samples_s=[1e-3] * 10)


def switch_on(warn=lambda message: None):
    return CountersSwitch(True, Settings(), warn)


def test_auto_warns_once_and_falls_back(fake_ncu, stream):
    warnings = []
    settings = Settings(counters="auto")
    switch = CountersSwitch(True, settings, warnings.append)
    options = run_module.RunOptions(targets=[], variants=[], sizes={}, counters="auto")
    counters = run_module.family_counters(stream, [ok("copy_float4")], options, switch,
                                          lambda e, v: None, RECORDED.gpu)
    assert counters == {}
    assert settings.counters == "off" and "ERR_NVGPUCTRPERM" in settings.counters_unavailable
    assert len(warnings) == 1 and "model bytes" in warnings[0]
    # the next family does not try again, and does not warn again
    assert run_module.family_counters(stream, [ok("copy_float4")], options, switch,
                                      lambda e, v: None, RECORDED.gpu) == {}
    assert len(warnings) == 1


def test_ncu_required_makes_it_an_error(fake_ncu, stream):
    options = run_module.RunOptions(targets=[], variants=[], sizes={}, counters="ncu")
    with pytest.raises(RooflintError, match="--counters ncu: ERR_NVGPUCTRPERM"):
        run_module.family_counters(stream, [ok("copy_float4")], options, switch_on(),
                                   lambda e, v: None, RECORDED.gpu)


def test_missing_ncu_falls_back(monkeypatch, tmp_path, stream):
    monkeypatch.setenv("PATH", str(tmp_path))
    warnings = []
    options = run_module.RunOptions(targets=[], variants=[], sizes={})
    run_module.family_counters(stream, [ok("copy_float4")], options,
                               switch_on(warnings.append), lambda e, v: None, RECORDED.gpu)
    assert "not on PATH" in warnings[0]


def test_failed_variants_are_not_profiled(stream):
    options = run_module.RunOptions(targets=[], variants=[], sizes={})
    failed = Measurement("copy_float4", "fail", "out: relative error 1.0e+00 > tolerance 0.0e+00")
    assert run_module.family_counters(stream, [failed], options, switch_on(),
                                      lambda e, v: None, RECORDED.gpu) == {}


def test_no_ncu_on_path_is_known_before_any_gpu_work(monkeypatch, tmp_path):
    """auto: one warning and model bytes, no profiler started; ncu: the run's one error."""
    from recorded import RecordedPool
    monkeypatch.setenv("PATH", str(tmp_path))
    use_stand_in_pools(monkeypatch, lambda env=None: RecordedPool())
    monkeypatch.setattr(run_module, "Profiler", lambda *args: pytest.fail("profiler started"))
    warnings = []
    result = run_module.run(run_module.RunOptions(targets=["stream"], variants=[], sizes={}),
                            run_module.Listener(warn=warnings.append))
    assert result.settings.counters == "off" and "not on PATH" in warnings[0]
    with pytest.raises(RooflintError, match="--counters ncu: ncu .* is not on PATH"):
        run_module.run(run_module.RunOptions(targets=["stream"], variants=[], sizes={},
                                             counters="ncu"))


@pytest.mark.parametrize("counters", ["auto", "ncu"])
def test_a_profiler_that_gives_nothing_at_the_end(monkeypatch, counters):
    """Counters come when ncu's session ends: a refusal found then falls back (auto), with
    every family kept on model bytes, or is the run's error (ncu)."""
    from recorded import RecordedPool, RecordedProfiler

    class Refusing(RecordedProfiler):
        def close(self):
            raise CountersUnavailable("ERR_NVGPUCTRPERM: this user may not read GPU counters")
    use_stand_in_pools(monkeypatch, lambda env=None: RecordedPool())
    monkeypatch.setattr(run_module, "Profiler", lambda *args: Refusing())
    monkeypatch.setattr(run_module.ncu, "ncu_path", lambda: "/usr/local/cuda/bin/ncu")
    warnings, finished = [], []
    listener = run_module.Listener(warn=warnings.append,
                                   finished=lambda result, family: finished.append(family.name))
    options = run_module.RunOptions(targets=["stream", "gemm_fp32"], variants=[], sizes={},
                                    counters=counters)
    if counters == "ncu":
        with pytest.raises(RooflintError, match="--counters ncu: ERR_NVGPUCTRPERM"):
            run_module.run(options, listener)
        return
    result = run_module.run(options, listener)
    assert finished == ["stream", "gemm_fp32"] and len(warnings) == 1
    assert result.settings.counters == "off"
    assert all(v.counters is None for f in result.families for v in f.variants)
