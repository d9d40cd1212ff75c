#!/usr/bin/env bash
# Makes a bench run the committed reference: copies RUN's result files (each
# *.json and the charts it names) into bench/results/, replacing those of the
# same name, then re-renders RESULTS.md's generated section from
# bench/results/. For a maintainer who means to replace a reference; review
# and commit what it changed (git status bench/results RESULTS.md).
#
#   bash bench/promote.sh RUN [FILE.json...]   e.g. bench/runs/2026-12-05-101500 (FILE: only these)
#   make bench PROMOTE=1                       a new run, then this on it
#
# RUN's verdicts are printed first, so that a run judged on a loaded machine
# is promoted knowingly. A quick-mode result never replaces a full-mode one
# of the same name (a shorter, smaller run is a different experiment):
# FORCE=1 overrides.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 RUN [FILE.json...]" >&2; exit 2; }
RUN=${1%/}
shift
[ -d "$RUN" ] || { echo "$RUN: no such run folder" >&2; exit 2; }
if [ "$(cd "$RUN" && pwd -P)" = "$(cd bench/results && pwd -P)" ]; then
  echo "$RUN is bench/results/ itself: name a run's folder (bench/runs/<date>/)" >&2
  exit 2
fi
make -s -j2 build/bench/render
build/bench/render --results "$RUN" --verdicts "$@"
echo
/usr/bin/python3 - "$RUN" "${FORCE:-}" "$@" <<'PY'
import json, os, shutil, sys
run, force, named = sys.argv[1], sys.argv[2] == "1", sys.argv[3:]
files = named or sorted(f for f in os.listdir(run) if f.endswith(".json"))
def mode(path):
    try:
        return json.load(open(path)).get("mode", "")
    except (OSError, ValueError):
        return ""
copied, kept = [], []
for f in files:
    src, dst = os.path.join(run, f), os.path.join("bench/results", f)
    if os.path.exists(dst) and mode(dst) == "full" and mode(src) == "quick" and not force:
        kept.append(f)
        continue
    doc = json.load(open(src))
    charts = [c["file"] for c in doc.get("charts", []) if isinstance(c, dict) and "file" in c]
    for name in [f] + charts:
        if os.path.exists(os.path.join(run, name)):
            shutil.copyfile(os.path.join(run, name), os.path.join("bench/results", name))
            copied.append(name)
print("promoted into bench/results/: " + (", ".join(copied) if copied else "nothing"))
if kept:
    print("kept (a full-mode reference is not replaced by a quick run; FORCE=1 to replace): " + ", ".join(kept))
PY
build/bench/render --results bench/results --out RESULTS.md
