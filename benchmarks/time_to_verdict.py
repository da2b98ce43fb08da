"""Issue 13's figures in one GPU call: ``python3 benchmarks/time_to_verdict.py OUT_DIR``.

Each figure is the wall time of a whole `rooflint run` command (after a first run that
fills the build caches), and each family's run with counters stands beside Nsight
Compute's full set on the same launches (benchmarks/full_set.py), as a ratio. With more
than one GPU visible, all bundled families also run on all of them with ``--devices all``
against one. Writes OUT_DIR/<gpu>-time-to-verdict.json (figures, targets, whether each is
met) and .md (the same as a table), plus each run's output and result document.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from rooflint.manifest import bundled_manifests

RUN = [sys.executable, "-m", "rooflint", "run"]
# figure -> (target, "max": at most the target, "min": at least it)
TARGETS = {
    "one variant, counters off (s)": (2.5, "max"),
    "one variant, counters on (s)": (5.0, "max"),
    "stream family, counters on (s)": (12.0, "max"),
    "all bundled families, counters on (s)": (45.0, "max"),
    "each family vs ncu --set full (worst ratio)": (0.5, "max"),
    "all families on 2 GPUs vs 1 (speed-up)": (1.7, "min"),
    "all families on 4 GPUs vs 1 (speed-up)": (3.0, "min"),
}


def timed(out: Path, name: str, command: list[str]) -> float:
    """Wall seconds of the command; its output kept as NAME.txt. A failure stops the run."""
    began = time.perf_counter()
    with open(out / f"{name}.txt", "w") as log:
        code = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, timeout=600).returncode
    seconds = time.perf_counter() - began
    print(f"{name}: {seconds:.2f} s (exit {code})", flush=True)
    if code != 0:
        sys.exit(f"{name} failed with exit code {code}; see {out / name}.txt")
    return seconds


def gpus() -> list[str]:
    listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
    return [line for line in listing.splitlines() if line.startswith("GPU ")]


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    devices = gpus()
    tag = devices[0].split(":")[1].split("(")[0].strip().replace(" ", "-")
    timed(out, "fill-caches", [*RUN, "--counters", "off"])
    figures = {
        "one variant, counters off (s)":
            timed(out, "one-off", [*RUN, "stream", "copy_float4", "--counters", "off"]),
        "one variant, counters on (s)":
            timed(out, "one-on", [*RUN, "stream", "copy_float4", "--counters", "ncu"]),
        "stream family, counters on (s)":
            timed(out, "stream-on", [*RUN, "stream", "--counters", "ncu"]),
        "all bundled families, counters on (s)":
            timed(out, "all-on", [*RUN, "--counters", "ncu", "--timings", "--json",
                                  str(out / f"{tag}-all.json")]),
    }
    families = {}
    for manifest in bundled_manifests():
        name = manifest.parent.name
        ours = timed(out, f"family-{name}", [*RUN, name, "--counters", "ncu", "--timings"])
        theirs = timed(out, f"full-set-{name}",
                       [sys.executable, "benchmarks/full_set.py", name])
        families[name] = {"rooflint_s": round(ours, 2), "ncu_full_set_s": round(theirs, 2),
                          "ratio": round(ours / theirs, 2)}
    figures["each family vs ncu --set full (worst ratio)"] = max(
        f["ratio"] for f in families.values())
    if len(devices) > 1:
        many = timed(out, f"all-on-{len(devices)}-gpus",
                     [*RUN, "--counters", "ncu", "--devices", "all", "--timings", "--json",
                      str(out / f"{tag}-all-{len(devices)}-gpus.json")])
        figures[f"all families on {len(devices)} GPUs vs 1 (speed-up)"] = \
            figures["all bundled families, counters on (s)"] / many
    report = {"gpu": devices[0], "gpus": len(devices),
              "figures": {name: {"value": round(value, 2), "target": TARGETS[name][0],
                                 "met": value <= TARGETS[name][0] if TARGETS[name][1] == "max"
                                 else value >= TARGETS[name][0]}
                          for name, value in figures.items()},
              "families": families}
    (out / f"{tag}-time-to-verdict.json").write_text(json.dumps(report, indent=1) + "\n")
    (out / f"{tag}-time-to-verdict.md").write_text(markdown(report))
    print(markdown(report))


def markdown(report: dict) -> str:
    lines = [f"{report['gpu']} ({report['gpus']} visible)", "",
             "| figure | measured | target | met |", "|---|---|---|---|"]
    lines += [f"| {name} | {f['value']} | {f['target']} | {'yes' if f['met'] else 'NO'} |"
              for name, f in report["figures"].items()]
    lines += ["", "| family | rooflint run, counters on (s) | ncu --set full (s) | ratio |",
              "|---|---|---|---|"]
    lines += [f"| {name} | {f['rooflint_s']} | {f['ncu_full_set_s']} | {f['ratio']} |"
              for name, f in report["families"].items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main(Path(sys.argv[1]))
