#!/usr/bin/env bash
# Regenerate the committed example results on a GPU machine:
#   examples/regenerate.sh h100        (or h200; the tag names the files)
# Calibrates this GPU, then runs every bundled family with counters, writing
#   examples/<tag>-calibration.json, <tag>-bundled.json, .txt (the terminal output at 100
#   columns), .svg, and <tag>-bundled.timeline.txt: the same output with the seconds since
#   the start in front of each line, which shows each family's table arriving as soon as
#   that family is done; and <tag>-source-stream.json and .txt, the stream family with
#   --source (the lines of stream.cu under each move); <tag>-report.html, the HTML report of
#   the bundled run, and, where headless Chromium is installed, <tag>-report.png, its top.
set -euo pipefail
tag=${1:?usage: examples/regenerate.sh TAG (h100, h200, ...)}
cd "$(dirname "$0")/.."
out=examples/$tag
export COLUMNS=${COLUMNS:-100}
python3 -m rooflint calibrate --json "$out-calibration.json" > "$out-calibration.txt"
SECONDS=0
python3 -m rooflint run --json "$out-bundled.json" --svg "$out-bundled.svg" 2>&1 \
  | while IFS= read -r line; do printf '%4ds %s\n' "$SECONDS" "$line"; done \
  > "$out-bundled.timeline.txt" || true
sed -E 's/^ *[0-9]+s //' "$out-bundled.timeline.txt" > "$out-bundled.txt"
bundled_seconds=$SECONDS
python3 -m rooflint run stream --source --json "$out-source-stream.json" \
  > "$out-source-stream.txt" 2>&1 || true
python3 -m rooflint report "$out-bundled.json" -o "$out-report.html"
if command -v chromium >/dev/null; then
  chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
    --user-data-dir="$(mktemp -d)" --hide-scrollbars --window-size=1400,1500 \
    --screenshot="$PWD/$out-report.png" "file://$PWD/$out-report.html" 2>/dev/null
fi
longest=$(python3 -c "import sys; print(max(map(len, open(sys.argv[1], encoding='utf-8').read().splitlines())))" "$out-bundled.txt")
echo "$tag: $(grep -c . "$out-bundled.txt") lines in ${bundled_seconds}s; longest line $longest characters"
