"""The program's summary (issue 47) fits MAX_LINES lines at 140 and 100 columns for every
committed profile, the hostile fixtures' long and odd kernel names among them."""

from __future__ import annotations

import json

import pytest

from edges import REPO, rooflint
from rooflint.formats.json_schema import schema_of
from rooflint.formats.results import read_result, write_result
from rooflint.formats.trace_timing import IdleTime, ProgramTiming, Steps
from rooflint.judge.program_fixes import fixes_of
from rooflint.output.program_summary import MAX_LINES, summary_lines

PROFILES = sorted(p for p in [*(REPO / "examples" / "profile").glob("*.json"),
                              *(REPO / "tests" / "fixtures" / "results").glob("*.json")]
                  if '"mode": "profile"' in p.read_text())


@pytest.mark.parametrize("width", [140, 100])
@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.name)
def test_the_summary_fits_its_lines_and_columns(path, width):
    result = read_result(path)
    lines = summary_lines(result, fixes_of(result), width)
    assert len(lines) <= MAX_LINES
    assert all(len(line) <= width and line.isprintable() for line in lines)


def test_a_long_summary_shows_fewer_fixes_rather_than_cut_its_last_lines():
    """The FSDP2 job at 100 columns: its timing line wraps to four, and ten fixes would
    make 30 lines, one more than the room `show` leaves above the top kernels; the summary
    shows nine, counts the tenth, and keeps the lines that say which fixes torch.compile
    makes at once and which save from one exposed time."""
    result = read_result(REPO / "examples" / "profile" / "h200x2-profile-fsdp.json")
    wide, narrow = (summary_lines(result, fixes_of(result), w) for w in (400, 100))
    assert sum(line[:3].strip().rstrip(".").isdigit() for line in wide) == 10
    assert sum(line[:3].strip().rstrip(".").isdigit() for line in narrow) == 9
    assert len(narrow) == MAX_LINES
    assert narrow[-3].startswith("    and 1 more fixes over ")
    assert narrow[-2].startswith("    torch.compile makes fixes ")
    assert narrow[-1].endswith("their savings do not add up")


def test_the_eager_step_s_summary_leads_with_its_unfused_work():
    result = read_result(REPO / "examples" / "profile" / "h200-profile-train-eager.json")
    lines = summary_lines(result, fixes_of(result), 140)
    assert lines[1].startswith("GPU time by kind: GEMM / convolution 32%")
    fixes = [line for line in lines if line[:3].strip().rstrip(".").isdigit()]
    assert "torch.compile the chain" in fixes[0] and "bf16" in fixes[1]


def with_program(result):
    result.program = ProgramTiming(
        wall_s=29.2e-3, busy_s=22.1e-3,
        idle=IdleTime(sync_s=4.0e-3, launch_s=2.5e-3, other_s=0.6e-3),
        steps=Steps(count=11, step_s=2.9e-3, warmup_s=5.1e-3))
    return result


def test_the_summary_says_gpu_busy_against_wall_time_under_its_first_line():
    result = with_program(read_result(REPO / "examples" / "profile" /
                                      "h200-profile-train-eager.json"))
    lines = summary_lines(result, fixes_of(result), 140)
    assert " ".join(line.strip() for line in lines[1:3]) == (
        "under the profiler, GPU busy 22.1 ms of 29.2 ms (76%); idle 7.1 ms: 4 ms "
        "synchronisation, 2.5 ms launch-bound, 600 us other; 10 steps of 2.9 ms after a 5.1 ms "
        "warm-up")
    assert lines[2].startswith("    ") and lines[3].startswith("GPU time by kind")


def test_a_result_without_the_program_s_timing_prints_no_timing_line(tmp_path):
    result = read_result(REPO / "examples" / "profile" / "h200-profile-train-eager.json")
    assert result.program is None
    assert not any(line.startswith("under the profiler") for line in
                   summary_lines(result, fixes_of(result), 140))
    write_result(result, tmp_path / "r.json")
    assert "program" not in json.loads((tmp_path / "r.json").read_text())


def test_the_program_s_timing_is_kept_in_the_document(tmp_path):
    result = with_program(read_result(REPO / "examples" / "profile" /
                                      "h200-profile-train-eager.json"))
    write_result(result, tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["program"]["idle"]["sync_s"] == 4.0e-3
    assert jsonschema_valid(data)
    assert read_result(tmp_path / "r.json").program == result.program


def jsonschema_valid(data: dict) -> bool:
    jsonschema = pytest.importorskip("jsonschema")
    return jsonschema.Draft202012Validator(schema_of("result")).is_valid(data)


def test_the_summary_says_the_collectives_exposed_time_a_step_after_the_first():
    """A data-parallel job's collectives on each of two ranks: 150 ms over the region, 110 ms
    of it exposed (the first step's all-reduce waits for every rank's start-up); over the
    nine steps after the first, 4 ms a step, 1 ms of it exposed. Without steps, the
    region's."""
    from rooflint.formats.trace_timing import Communication
    result = with_program(read_result(REPO / "examples" / "profile" /
                                      "h200-profile-train-eager.json"))
    result.program.communication = Communication(
        collective_s=150e-3, exposed_s=110e-3, ranks=2, steps=10, step_collective_s=4e-3,
        step_exposed_s=1e-3)
    said = summary_lines(result, fixes_of(result), 400)[1]
    assert said.endswith("warm-up; collectives 4 ms a step on each of 2 ranks over 9 steps "
                         "after the first, 75% beside compute, 1 ms exposed"), said
    result.program.communication = Communication(collective_s=150e-3, exposed_s=110e-3, ranks=2)
    said = summary_lines(result, fixes_of(result), 400)[1]
    assert said.endswith("warm-up; collectives 150 ms on each of 2 ranks, 27% beside compute, "
                         "110 ms exposed"), said


def test_a_jobs_collectives_are_its_communication_not_kernels_left_unprofiled():
    """The wide DDP job on two H200s: its NCCL kernels (timed from the trace, never
    profiled) are 61 % of its GPU time, said as communication; what is left unprofiled is
    the rest, 4 %; the kinds and the rest add up to the whole. Its communication fixes say
    the exposed time they act on, and the calls' own time that bounds it (the document's
    stored estimate kept)."""
    import re
    result = read_result(REPO / "examples" / "profile" / "h200x2-profile-ddp-nccl-wide.json")
    lines = summary_lines(result, fixes_of(result), 400)
    kinds = next(line for line in lines if line.startswith("GPU time by kind: "))
    assert kinds.startswith("GPU time by kind: communication 61%, ")
    assert kinds.endswith("not profiled 4% (39 kernels, the collectives among them)")
    assert sum(int(p) for p in re.findall(r"(\d+)%", kinds)) in range(98, 103)
    fix = lines.index(next(line for line in lines if "accumulate the gradients" in line))
    assert lines[fix + 1].strip() == ("exposed 7.28 ms a step on the rank that waits least, of "
                                      "14.7 ms of collectives a step, their calls 17.2 ms "
                                      "(exposed and optimizer, once a batch)")


def test_a_jobs_communication_fixes_are_said_not_to_add_up():
    """Accumulation, larger buckets and overlap each save from the one exposed time: said
    once under the fixes, by their ranks; a program with one such fix says nothing."""
    result = read_result(REPO / "examples" / "profile" / "h200x2-profile-ddp-nccl-wide.json")
    fixes = fixes_of(result)
    ranks = [str(rank) for rank, f in enumerate(fixes, 1)
             if f.id in ("accumulate_gradients", "larger_buckets", "overlap_collectives")]
    assert len(ranks) >= 2
    lines = summary_lines(result, fixes, 400)
    assert lines.count(f"    fixes {', '.join(ranks[:-1])} and {ranks[-1]} each save from the "
                       f"same exposed communication: their savings do not add up") == 1
    alone = [f for f in fixes if f.id != "larger_buckets" and f.id != "overlap_collectives"]
    assert not any("do not add up" in line for line in summary_lines(result, alone, 400))


def test_the_report_says_the_communication_fixes_do_not_add_up_as_the_terminal_does(tmp_path):
    """The FSDP2 job's page (examples/profile/h200x2-profile-fsdp.json): its three
    communication fixes, by their ranks, in the line the terminal prints."""
    import html
    import re
    page = tmp_path / "fsdp.html"
    job = REPO / "examples" / "profile" / "h200x2-profile-fsdp.json"
    assert rooflint("report", str(job), "-o", str(page)).code == 0
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page.read_text())).split())
    said = next(line for line in summary_lines(read_result(job), fixes_of(read_result(job)),
                                               400) if "do not add up" in line)
    assert said.strip() in text


def test_a_program_ended_at_its_steps_says_so_with_how_to_run_it_to_its_end(tmp_path):
    """A training run of hours is profiled on its first --steps optimizer steps: the
    summary says the times are of those, and how to time the whole run; the step is kept
    in the document."""
    result = with_program(read_result(REPO / "examples" / "profile" /
                                      "h200-profile-train-eager.json"))
    result.program.stopped_at_step = 20
    lines = summary_lines(result, fixes_of(result), 100)
    said = " ".join(line.strip() for line in lines[1:5])
    assert ("after a 5.1 ms warm-up; the program ended after 20 optimizer steps (--stop-after); "
            "0 runs it to its end") in said
    assert all(len(line) <= 100 for line in lines)
    write_result(result, tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["program"]["stopped_at_step"] == 20 and jsonschema_valid(data)
    assert read_result(tmp_path / "r.json").program.stopped_at_step == 20
