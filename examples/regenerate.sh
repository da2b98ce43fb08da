#!/usr/bin/env bash
# Regenerate the committed example results on a GPU machine:
#   examples/regenerate.sh h100        (or h200; the tag names the files)
# Calibrates this GPU, then runs every bundled family with counters, writing
#   examples/<tag>-calibration.json, <tag>-bundled.json, .txt (the terminal output at 100
#   columns), .svg, and <tag>-bundled.timeline.txt: the same output with the seconds since
#   the start in front of each line, which shows each family's table arriving as soon as
#   that family is done.
set -euo pipefail
tag=${1:?usage: examples/regenerate.sh TAG (h100, h200, ...)}
cd "$(dirname "$0")/.."
out=examples/$tag
export COLUMNS=${COLUMNS:-100}
python3 -m rooflint calibrate -o "$out-calibration.json" > "$out-calibration.txt"
SECONDS=0
python3 -m rooflint run --json "$out-bundled.json" --svg "$out-bundled.svg" 2>&1 \
  | while IFS= read -r line; do printf '%4ds %s\n' "$SECONDS" "$line"; done \
  > "$out-bundled.timeline.txt" || true
sed -E 's/^ *[0-9]+s //' "$out-bundled.timeline.txt" > "$out-bundled.txt"
echo "$tag: $(grep -c . "$out-bundled.txt") lines in ${SECONDS}s; longest line $(awk '{ if (length > n) n = length } END { print n }' "$out-bundled.txt")"
