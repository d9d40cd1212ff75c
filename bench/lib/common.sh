# Shell functions the bench scripts share (sourced from the repository root):
#
#   source bench/lib/common.sh
#   OUT=$(bench_run_dir "$OUT_FLAG")   # where a run writes its results
#   bench_settle                        # before a bench that follows another
#
# bench_run_dir [DIR]: DIR (a script's --out), else $BENCH_OUT, else a new
# bench/runs/<UTC YYYY-MM-DD-HHMMSS>/ (ignored by git); created if missing.
# It is never bench/results/, the committed reference results that RESULTS.md
# is rendered from: bash bench/promote.sh RUN copies a run there.
#
# bench_settle: a bench's timing targets are not judged when the 1-minute
# load average is at least the core count as it starts (bench/lib/verdict.h),
# and the previous bench's own load lingers in that average for a minute. So
# while the average is at or above the core count and still falling, this
# waits, 6 s at a time (the kernel updates the average every 5 s, so each
# look sees a new value), at most BENCH_SETTLE_S seconds (default 60); load
# that is not falling is other work, and waiting would not help.

bench_run_dir() {
  local dir=${1:-${BENCH_OUT:-}}
  if [ -z "$dir" ]; then
    dir=bench/runs/$(date -u +%Y-%m-%d-%H%M%S)
    local n=2 base=$dir
    while [ -e "$dir" ]; do dir=$base-$n; n=$((n + 1)); done
  fi
  mkdir -p "$dir" || return 1
  if [ "$(cd "$dir" && pwd -P)" = "$(cd bench/results && pwd -P)" ]; then
    echo "refusing to write into $dir: it holds the committed reference results; a run goes to its own" \
      "folder (BENCH_OUT=DIR or --out DIR), and bash bench/promote.sh RUN copies a run into bench/results/" >&2
    return 1
  fi
  echo "$dir"
}

bench_settle() {
  local cores limit=${BENCH_SETTLE_S:-60} waited=0 load last=""
  cores=$(nproc)
  while :; do
    load=$(cut -d' ' -f1 /proc/loadavg)
    awk -v l="$load" -v c="$cores" 'BEGIN { exit !(l >= c) }' || return 0
    if [ -n "$last" ] && awk -v l="$load" -v p="$last" 'BEGIN { exit !(l >= p) }'; then
      echo "load average $load on $cores cores, not falling: other work; going on" >&2
      return 0
    fi
    if [ "$waited" -ge "$limit" ]; then
      echo "load average $load on $cores cores after ${waited} s: going on" >&2
      return 0
    fi
    [ -z "$last" ] && echo "load average $load on $cores cores: waiting up to ${limit} s for the last bench's own load to fade" >&2
    last=$load
    sleep 6
    waited=$((waited + 6))
  done
}
