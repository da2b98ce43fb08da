"""Text from a profile's document (source lines, kernel names) reaches the terminal through
the program's summary, its top-kernel table and compare's per-fix check (issue 47): an
escape sequence in them is shown escaped, never run, on every one of those paths."""

from __future__ import annotations

import json

from edges import REPO, rooflint

PROFILE = REPO / "examples" / "profile" / "h200-profile-train-eager.json"
RAW = "\x1b[31m"


def hostile_profile(path) -> None:
    """The committed profile with an escape sequence in every kernel's first source line
    and in the first kernel's name."""
    document = json.loads(PROFILE.read_text())
    for family in document["families"]:
        for variant in family["variants"]:
            share = variant.get("share") or {}
            for origin in share.get("origins", [])[:1]:
                if origin.get("line"):
                    origin["line"] = f"evil{RAW}.py:1 in f"
    first = document["families"][0]["variants"][0]
    first["name"] = f"kernel{RAW}red"
    path.write_text(json.dumps(document))


def test_summary_table_and_fix_check_escape_what_the_document_says(tmp_path):
    hostile_profile(tmp_path / "evil.json")
    for args in (["show", "evil.json"], ["show", "--detail", "evil.json"],
                 ["compare", str(PROFILE), "evil.json"]):
        outcome = rooflint(*args, cwd=tmp_path)
        assert outcome.code == 0, (args, outcome.stderr)
        assert RAW not in outcome.stdout + outcome.stderr, args
        assert "evil" in outcome.stdout, args    # the line is shown, escaped


def test_compare_refuses_a_hostile_step_in_one_line_and_bears_an_absurd_one(tmp_path):
    """compare's step line reads each profile's steps (fix_comparison.step_times): a
    negative or textual step time is refused in one line naming the field, exit 2; a step
    count of 10**30 against 20 is said to be other work, never a crash."""
    imagenet = REPO / "examples" / "profile" / "h200-profile-imagenet-window.json"
    for field, value, code in (("step_s", -1, 2), ("step_s", "fast", 2), ("count", 10**30, 0)):
        document = json.loads(imagenet.read_text())
        document["program"]["steps"][field] = value
        (tmp_path / "evil.json").write_text(json.dumps(document))
        outcome = rooflint("compare", str(imagenet), "evil.json", cwd=tmp_path)
        assert outcome.code == code, (field, outcome.stderr)
        if code:
            assert len(outcome.stderr.strip().splitlines()) == 1
            assert "evil.json" in outcome.stderr and f"program.steps.{field}" in outcome.stderr
        else:
            assert "not the same work" in outcome.stdout and "a step under" not in outcome.stdout
