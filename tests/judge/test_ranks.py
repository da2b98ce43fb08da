"""One job from its ranks (issue 49, item 2), on what H200s recorded: two data-parallel
ranks of tests/fixtures/ranks/ddp_straggler.py on one GPU under torchrun (collectives over
gloo, on the host), rank 1 doing four extra 4096x4096 matmuls a step; and two ranks of
examples/apps/ddp_train.py on two H200s, DDP over NCCL: pass 1's CUPTI records of both
processes, and the rank documents `rooflint profile --json` wrote beside the job's. Then
hand-made ranks for three ranks and ranks from several hosts."""

from __future__ import annotations

import json
import lzma
from dataclasses import replace
from pathlib import Path

import pytest

from edges import REPO, rooflint
from rooflint.common.errors import RooflintError
from rooflint.engine.program import pass_one
from rooflint.formats.ranks import RankInfo, rank_path, ranks_of, trace_of
from rooflint.formats.results import read_result
from rooflint.formats.trace_timing import Communication, ProgramTiming, communication
from rooflint.judge.ranks import STRAGGLER_MARGIN, job_of
from rooflint.measure.pass_runner import Pass, Timer
from rooflint.measure.program import Filters

TRACE = REPO / "tests" / "fixtures" / "ranks" / "h200-ddp-gloo-pass1-trace.json.xz"
JOB = REPO / "examples" / "profile" / "h200-profile-ddp-gloo.json"
RANK_DOCUMENTS = [rank_path(JOB, RankInfo(process=0, rank=r)) for r in (0, 1)]
NCCL_TRACE = REPO / "tests" / "fixtures" / "ranks" / "h200x2-ddp-nccl-pass1-trace.json.xz"
NCCL_JOB = REPO / "examples" / "profile" / "h200x2-profile-ddp-nccl.json"
NCCL_RANKS = [rank_path(NCCL_JOB, RankInfo(process=0, rank=r)) for r in (0, 1)]
WIDE_RANK0 = REPO / "examples" / "profile" / "h200x2-profile-ddp-nccl-wide.rank0.json"
EXTRA_GEMM_LAUNCHES = 4 * 8          # rank 1's own matmuls: four a step, eight steps


@pytest.fixture(scope="module")
def first() -> Pass:
    trace = json.loads(lzma.decompress(TRACE.read_bytes()))
    return Pass("", 20.0, timer=Timer.cupti, processes=2, own_process=False, trace=trace)


def test_the_recorded_processes_are_torchruns_two_ranks_on_one_gpu(first):
    ranks = ranks_of(first.trace)
    assert [(r.rank, r.device, r.host) for r in ranks] == [(0, 0, "vm"), (1, 0, "vm")]
    assert ranks[0].process != ranks[1].process


def test_each_ranks_kernels_add_up_to_the_jobs(first):
    job, by_rank = pass_one(first, Filters())
    assert [rank.rank for rank, _ in by_rank] == [0, 1]
    for identity in {k.identity for k in job.kernels}:
        launches = sum(k.launches for _, one in by_rank for k in one.kernels
                       if k.identity == identity)
        assert launches == next(k.launches for k in job.kernels if k.identity == identity)
    total = sum(k.total_s for k in job.kernels)
    assert sum(k.total_s for _, one in by_rank for k in one.kernels) == pytest.approx(total)


def test_the_rank_that_does_more_work_is_the_straggler_and_its_gemm_is_named():
    job = job_of([read_result(p) for p in reversed(RANK_DOCUMENTS)],
                 [str(p) for p in reversed(RANK_DOCUMENTS)])
    assert [r.rank.rank for r in job.ranks] == [0, 1]            # in rank order, as given or not
    straggler = job.straggler
    assert straggler is not None and straggler.rank.rank == 1 and straggler.by_its_kernels
    assert straggler.waited_s == 0                     # gloo's collectives: no kernel waits
    assert straggler.excess == pytest.approx(job.ranks[1].compute_s / job.ranks[0].compute_s - 1)
    assert straggler.excess > STRAGGLER_MARGIN
    gemm, extra_s = straggler.kernels[0]
    assert extra_s > straggler.extra_s > 0.05          # the GEMM alone: contention on one GPU
    only_rank_1 = next(k for k in job.kernels if k.name == gemm)
    assert only_rank_1.seconds[0] is None and only_rank_1.spread is None
    rank_1 = read_result(RANK_DOCUMENTS[1])
    assert next(v.share.launches for v in rank_1.families[0].variants
                if v.name == gemm) == EXTRA_GEMM_LAUNCHES


def test_each_ranks_collectives_are_its_nccl_kernels_and_their_part_no_kernel_overlapped():
    trace = json.loads(lzma.decompress(NCCL_TRACE.read_bytes()))
    for rank in ranks_of(trace):
        mine = trace_of(trace, rank)["traceEvents"]
        nccl = sorted((e["ts"], e["ts"] + e["dur"]) for e in mine if "nccl" in e["name"])
        others = [(e["ts"], e["ts"] + e["dur"]) for e in mine if "nccl" not in e["name"]]
        alone = sum(end - start - sum(max(0.0, min(end, b) - max(start, a)) for a, b in others)
                    for start, end in nccl)            # no two of a rank's kernels overlap here
        found = communication(mine)
        assert found.ranks == 1
        assert found.collective_s == pytest.approx(sum(b - a for a, b in nccl) * 1e-6)
        assert found.exposed_s == pytest.approx(alone * 1e-6, rel=1e-6)


def test_on_two_gpus_the_rank_the_others_wait_for_is_late_from_its_host_not_its_kernels():
    """A step after the first (each rank's 13 found in its kernels) the two ranks' collectives
    wait about alike, rank 0's 3.97 ms exposed and rank 1's 3.35 ms: rank 1 came 0.61 ms late
    a step, its kernels as long as rank 0's (4.23 ms a step each), so from its host. Over the
    whole region rank 0 waited 256 ms and rank 1 46 ms, most of rank 0's in the first step
    (the job's start-up), which the region's figures would have judged as rank 1 210 ms late."""
    job = job_of([read_result(p) for p in NCCL_RANKS], [str(p) for p in NCCL_RANKS])
    assert job.steps == 13
    assert [round(r.exposed_s * 1e3, 2) for r in job.ranks] == [3.97, 3.35]
    assert [round(r.compute_s * 1e3, 2) for r in job.ranks] == [4.23, 4.24]
    region = [read_result(p).program.communication.exposed_s for p in NCCL_RANKS]
    assert [round(e * 1e3) for e in region] == [256, 46]
    straggler = job.straggler
    assert straggler.rank.rank == 1 and not straggler.by_its_kernels
    assert straggler.waited_s == pytest.approx(job.ranks[0].exposed_s - job.ranks[1].exposed_s)
    assert straggler.excess == pytest.approx(job.ranks[1].compute_s / job.ranks[0].compute_s - 1)
    out = rooflint("show", *map(str, NCCL_RANKS), "--summary")
    assert "a step's GPU time (the mean of the 12 steps after the first)" in out.stdout
    assert ("straggler: rank 1: the other ranks' collectives wait 613 us more for it a step"
            in out.stdout)
    assert "on the host" in out.stdout


def test_the_job_and_its_rank_documents_are_not_one_job():
    with pytest.raises(RooflintError, match="h200-profile-ddp-gloo.json: not a rank's document"):
        job_of([read_result(JOB), read_result(RANK_DOCUMENTS[0])],
               [str(JOB), str(RANK_DOCUMENTS[0])])
    with pytest.raises(RooflintError, match="rank 0 on vm is in more than one"):
        job_of([read_result(RANK_DOCUMENTS[0])] * 2, [str(RANK_DOCUMENTS[0])] * 2)


def _rank(number: int | None, compute_s: float, collective_s: float, exposed_s: float,
          host: str = "node-a", process: int = 100, steps: int = 0,
          a_step: tuple[float, float, float] = (0.0, 0.0, 0.0)):
    """A rank's document: the recorded rank 0's, with its times replaced; ``a_step`` its
    kernels', collectives' and exposed time a step over its ``steps`` after the first."""
    result = read_result(RANK_DOCUMENTS[0])
    result.rank = RankInfo(process=process, rank=number, host=host, device=0)
    result.settings = replace(result.settings, gpu_time_s=compute_s + collective_s)
    kernels, collective, exposed = a_step
    result.program = ProgramTiming(wall_s=1.0, busy_s=compute_s + collective_s,
                                   communication=Communication(
                                       collective_s, exposed_s, 1, steps, collective, exposed,
                                       kernels))
    return result


def test_ranks_are_compared_a_step_where_every_ranks_steps_are_known():
    """Rank 0 waited 100 ms at start-up for rank 1 and nothing after: over the region rank 1
    is the straggler, a step neither is (each waits 6 ms); with a rank 2 for which they both
    wait those 6 ms every step, it is. Where one rank's steps are unknown, the region's
    figures judge them all."""
    start_up = [_rank(0, 1.0, 0.3, 0.10, steps=11, a_step=(0.09, 0.027, 0.006)),
                _rank(1, 1.0, 0.3, 0.005, steps=11, a_step=(0.09, 0.027, 0.006))]
    job = job_of(start_up, ["a", "b"])
    assert job.steps == 11 and job.straggler is None
    assert [r.compute_s for r in job.ranks] == [0.09, 0.09]
    assert job_of([start_up[0], _rank(1, 1.0, 0.3, 0.005)], ["a", "b"]).straggler.rank.rank == 1
    late = _rank(2, 1.0, 0.3, 0.005, steps=11, a_step=(0.091, 0.027, 0.0))
    job = job_of([*start_up, late], ["a", "b", "c"])
    assert job.straggler.rank.rank == 2 and not job.straggler.by_its_kernels
    assert job.straggler.waited_s == pytest.approx(0.006)


def test_the_others_wait_for_the_straggler_in_their_exposed_collectives():
    ranks = [_rank(0, 1.00, 0.30, 0.12), _rank(1, 1.10, 0.30, 0.02), _rank(2, 1.01, 0.30, 0.11)]
    job = job_of(ranks, ["a", "b", "c"])
    assert [r.compute_s for r in job.ranks] == pytest.approx([1.00, 1.10, 1.01])
    straggler = job.straggler
    assert straggler.rank.rank == 1
    assert straggler.excess == pytest.approx(1.10 / 1.005 - 1)        # the others' median
    assert straggler.waited_s == pytest.approx(0.115 - 0.02)


def test_within_the_margin_no_rank_is_a_straggler():
    job = job_of([_rank(0, 1.00, 0.3, 0.1), _rank(1, 1.00 * (1 + STRAGGLER_MARGIN) - 1e-3,
                                                  0.3, 0.1)], ["a", "b"])
    assert job.straggler is None


def test_processes_no_launcher_numbered_are_told_apart_by_host():
    job = job_of([_rank(None, 1.0, 0.1, 0.0, "node-b", 7),
                  _rank(None, 1.0, 0.1, 0.0, "node-a", 7)],
                 ["a", "b"])
    assert [r.rank.host for r in job.ranks] == ["node-a", "node-b"]
    with pytest.raises(RooflintError, match="process 100 on node-a is in more than one"):
        job_of([_rank(None, 1.0, 0.1, 0.0), _rank(None, 1.0, 0.1, 0.0)], ["a", "b"])


def test_show_prints_the_ranks_documents_as_one_job():
    out = rooflint("show", *map(str, RANK_DOCUMENTS))
    assert out.code == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("2 ranks:")
    assert next(line for line in lines if line.startswith("straggler: rank 1: its kernels take"))
    assert any(line.startswith("kernel") and line.split()[1:3] == ["rank", "0"] for line in lines)
    brief = rooflint("show", *map(str, RANK_DOCUMENTS), "--summary")
    assert brief.code == 0 and "straggler: rank 1" in brief.stdout
    assert not any(line.startswith("kernel") for line in brief.stdout.splitlines())


@pytest.mark.parametrize("extra, said", [
    (["--csv", "t.csv"], "an export with several documents"),
    (["gemm"], "gemm with several documents"),
])
def test_show_of_several_documents_refuses_what_it_cannot_do_with_them(extra, said, tmp_path):
    out = rooflint("show", *map(str, RANK_DOCUMENTS), *extra, cwd=tmp_path)
    assert out.code == 2 and said in out.stderr and not (tmp_path / "t.csv").exists()


def test_a_rank_documents_path_sits_beside_its_jobs():
    assert rank_path(Path("r/job.json"), RankInfo(process=9, rank=3)) == Path("r/job.rank3.json")
    assert rank_path(Path("job.json"), RankInfo(process=9)) == Path("job.process9.json")


def test_rank_documents_never_replace_what_is_not_a_result_nor_the_profiles_inputs(tmp_path,
                                                                                 capsys):
    """Their paths are known only after pass 1, so a refused one is said and skipped, and
    the others and the job's document are written all the same."""
    from rooflint.commands.profile import _write_ranks
    from rooflint.output.outputs import Named
    job = tmp_path / "r.json"
    notes = tmp_path / "r.rank0.json"
    notes.write_text("my own notes\n")
    model = tmp_path / "r.rank1.json"       # the profile's --model: read, never written
    model.write_text('{"kernels": []}\n')
    stale = tmp_path / "r.rank2.json"        # an earlier profile's: replaced
    stale.write_text(RANK_DOCUMENTS[0].read_text())
    ranks = [_rank(n, 1.0, 0.1, 0.0) for n in (0, 1, 2, 3)]
    _write_ranks(ranks, job, [Named("--model", model)])
    said = capsys.readouterr().err
    assert notes.read_text() == "my own notes\n" and "not written: rank 0's document" in said
    assert model.read_text() == '{"kernels": []}\n' and "is --model" in said
    assert read_result(stale).rank.rank == 2
    assert read_result(tmp_path / "r.rank3.json").rank.rank == 3


def test_report_of_the_ranks_documents_holds_the_job_as_show_prints_it(tmp_path):
    """`report r.rank0.json r.rank1.json`: the job first (ranks, straggler, collectives,
    every kernel on each rank), in show's words; two profiles' rank 0 are compared, not
    merged into a job."""
    import html
    import re
    page = tmp_path / "job.html"
    rooflint("report", *map(str, NCCL_RANKS), "-o", str(page))
    text = html.unescape(re.sub(r"<[^>]+>", " ", page.read_text()))
    shown = rooflint("show", *map(str, NCCL_RANKS), "--detail", env={"COLUMNS": "300"}).stdout
    straggler = next(line for line in shown.splitlines() if line.startswith("straggler:"))
    assert straggler in " ".join(text.split())
    assert 'id="job"' in page.read_text() and 'href="#job"' in page.read_text()
    for row in ("rank 0 vm 0 4.23 ms 4.89 ms 3.97 ms (81%)",
                "all-reduce float32 27 MiB 36 120 us 236 GB/s 72%"):
        assert row in " ".join(text.split())
    compared = tmp_path / "two.html"
    rooflint("report", str(NCCL_RANKS[0]), str(WIDE_RANK0), "-o", str(compared))
    assert 'id="job"' not in compared.read_text() and 'id="comparison"' in compared.read_text()


def test_a_hosts_name_from_a_document_reaches_neither_terminal_nor_page_as_control_codes(
        tmp_path):
    """A rank document whose host holds an escape sequence and a bell: `show` prints the
    job with them made visible, and `report` writes a page without them."""
    paths = []
    for path in NCCL_RANKS:
        document = json.loads(path.read_text())
        document["rank"]["host"] = "node\x1b[31mRED\x07"
        paths.append(tmp_path / path.name)
        paths[-1].write_text(json.dumps(document))
    shown = rooflint("show", *map(str, paths), "--summary").stdout
    assert "\x1b" not in shown and "\x07" not in shown and "node" in shown
    page = tmp_path / "job.html"
    rooflint("report", *map(str, paths), "-o", str(page))
    text = page.read_text()
    assert 'id="job"' in text and "\x1b" not in text and "\x07" not in text


def test_ranks_of_two_programs_are_never_one_job(tmp_path):
    """rank 0 of the FSDP2 job beside rank 1 of the DDP job (a `r.rank*.json` that also
    caught another program's file): show refuses in one line naming both, report compares
    them instead of merging them."""
    fsdp = REPO / "examples" / "profile" / "h200x2-profile-fsdp.rank0.json"
    out = rooflint("show", str(fsdp), str(NCCL_RANKS[1]))
    assert out.code == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "are ranks of different programs" in out.stderr
    assert "fsdp_train.py --steps 5" in out.stderr and "ddp_train.py --steps 10" in out.stderr
    page = tmp_path / "two.html"
    assert rooflint("report", str(fsdp), str(NCCL_RANKS[1]), "-o", str(page)).code == 0
    assert 'id="job"' not in page.read_text() and 'id="comparison"' in page.read_text()
