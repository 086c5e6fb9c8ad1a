#!/usr/bin/env bash
# Usage:
#   go build -o ctxlab ./cmd/ctxlab && CTX=./ctxlab bash scripts/pyprobe-acceptance.sh
# The CPython probe's acceptance comparisons (issue 29), for real, on this
# machine, with the programs in internal/pyprobe/testdata:
#  1. a loop serving requests beside a pure-Python busy thread: the probe's
#     loop-lag p99 beside the lag the program measures of itself (a 1 ms
#     timer's lateness), at the default 5 ms switch interval and at 0.5 ms,
#     and the readings with and without the busy thread;
#  2. sqlite3 lookups through asyncio.to_thread: the probe's hop overhead per
#     call beside its work per call, and ctxlab's own hop arms
#     (hop/pytask/direct, executor, two-hop, aiosqlite) on the same machine;
#  3. aiosqlite lookups: thread-to-loop hops per query;
#  4. the probe's overhead: each program with --python-probe off and on,
#     interleaved ROUNDS times, its own throughput compared, beside the
#     probe's own estimate of its cost.
# PY is the interpreter (default python3), AIOPY the one with aiosqlite
# (default /usr/bin/python3); ROUNDS (default 5) and RUN_S, seconds a run (default 4; not SECONDS, which bash counts itself).
set -euo pipefail
CTX=${CTX:-ctxlab}; PY=${PY:-python3}; AIOPY=${AIOPY:-/usr/bin/python3}
ROUNDS=${ROUNDS:-5}; SECONDS_=${RUN_S:-4}
here=$(cd "$(dirname "$0")/.." && pwd)
td="$here/internal/pyprobe/testdata"
OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT

# diag MODE ARGS...: runs diagnose, leaves the program's stdout in $OUT/o
# and diagnose's records in $OUT/e.
diag() {
  local mode=$1; shift
  "$CTX" diagnose --no-store --python-probe "$mode" --price=false --format json -- "$@" >"$OUT/o" 2>"$OUT/e" ||
    { echo "diagnose $* failed:"; tail -5 "$OUT/e"; exit 1; }
}
# field: a small python over the program's line (o) and the records (e).
field() { "$PY" - "$OUT/o" "$OUT/e" "$1" <<'EOF'
import json, sys
prog = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
recs = [json.loads(l) for l in open(sys.argv[2]) if l.startswith("{")]
by = {}
for r in recs:
    by.setdefault(r.get("kind"), []).append(r)
loop = (by.get("py-loop") or [{}])[0]
cost = (by.get("py-probe-cost") or [{}])[0]
readings = ",".join(r["reading"] for r in by.get("py-reading", [])) or "none"
sites = by.get("py-call-site", [])
print(eval(sys.argv[3]))
EOF
}

echo "## 1. Loop lag beside a busy thread ($PY, ${SECONDS_} s a run)"
echo
echo "| switch interval | round | program's own 1 ms timer p50 / p99 | probe lag p50 / p99 (corrected) | probe ticks as fired p50 / p99 | corrected p99 ÷ own p99 | as fired p99 ÷ own p99 | readings |"
echo "|---|---|---|---|---|---|---|---|"
for si in 0 0.0005; do
  label=5ms; [ "$si" = 0 ] || label=0.5ms
  for r in $(seq 1 "$ROUNDS"); do
    diag on "$PY" "$td/gil.py" --busy --seconds "$SECONDS_" --si "$si"
    field "'| $label | $r | %.2f / %.2f ms | %.2f / %.2f ms | %.2f / %.2f ms | %.2f | %.2f | %s |' % (prog['self_lag_p50_us']/1e3, prog['self_lag_p99_us']/1e3, loop['lag']['p50_ns']/1e6, loop['lag']['p99_ns']/1e6, loop['lag_as_fired']['p50_ns']/1e6, loop['lag_as_fired']['p99_ns']/1e6, loop['lag']['p99_ns']/1e3/prog['self_lag_p99_us'], loop['lag_as_fired']['p99_ns']/1e3/prog['self_lag_p99_us'], readings)"
  done
done
echo
echo "Without the busy thread (negative control):"
echo
for si in 0 0.0005; do
  diag on "$PY" "$td/gil.py" --seconds "$SECONDS_" --si "$si"
  field "'- switch interval %s: probe lag p50 %.2f ms, p99 %.2f ms; readings: %s' % ('$si' if '$si' != '0' else 'default', loop['lag']['p50_ns']/1e6, loop['lag']['p99_ns']/1e6, readings)"
done

echo
echo "## 2. sqlite3 through asyncio.to_thread ($PY) beside ctxlab's hop arms"
echo
echo "| round | work per call | hops per call (wait + back) | to_thread per call (wait + work + back) | call_soon_threadsafe hop p50 | reading |"
echo "|---|---|---|---|---|---|"
for r in $(seq 1 "$ROUNDS"); do
  diag on "$PY" "$td/tothread.py" --calls 5000
  field "'| $r | %.1f µs | %.1f µs (%.1f + %.1f) | %.1f µs | %.1f µs | %s |' % ([s for s in sites if s['of']=='to_thread'][0]['work_mean_ns']/1e3, ([s for s in sites if s['of']=='to_thread'][0]['wait_mean_ns']+[s for s in sites if s['of']=='to_thread'][0]['back_mean_ns'])/1e3, [s for s in sites if s['of']=='to_thread'][0]['wait_mean_ns']/1e3, [s for s in sites if s['of']=='to_thread'][0]['back_mean_ns']/1e3, ([s for s in sites if s['of']=='to_thread'][0]['wait_mean_ns']+[s for s in sites if s['of']=='to_thread'][0]['work_mean_ns']+[s for s in sites if s['of']=='to_thread'][0]['back_mean_ns'])/1e3, [h for h in by['py-hops'] if h['of']=='call_soon_threadsafe'][0]['hop']['p50_ns']/1e3, readings)"
done
echo
echo "ctxlab's own hop arms (ctxlab run 'hop/pytask/*' --python $AIOPY, median of 3 repetitions):"
echo
"$CTX" run 'hop/pytask/*' --python "$AIOPY" --reps 3 --no-store --format json -o "$OUT/hop.json" >/dev/null 2>"$OUT/hop.err" ||
  { echo "ctxlab run hop failed:"; tail -5 "$OUT/hop.err"; exit 1; }
"$PY" - "$OUT/hop.json" <<'EOF'
import json, sys
arms = {a["name"]: a for a in json.load(open(sys.argv[1]))["arms"]}
d = arms.get("hop/pytask/direct", {}).get("median", 0)
for n in ("hop/pytask/direct", "hop/pytask/executor", "hop/pytask/two-hop", "hop/pytask/aiosqlite"):
    a = arms.get(n)
    if not a or not a.get("median"):
        print("- %s: %s" % (n, a.get("status") if a else "not run"))
        continue
    m = a["median"]
    print("- %s: %.1f µs per lookup%s" % (n, m / 1e3, "" if n.endswith("direct") else "; hops %.1f µs beyond direct" % ((m - d) / 1e3)))
EOF

echo
echo "## 3. aiosqlite ($AIOPY)"
echo
for r in $(seq 1 "$ROUNDS"); do
  diag on "$AIOPY" "$td/aiosqlite_lookup.py" --queries 3000
  field "'- round $r: %.1f µs per query (the program), %s' % (prog['us_per_query'], [x['text'] for x in by.get('py-reading', []) if x['reading']=='hops-over-work'][0])"
done

echo
echo "## 4. The probe's overhead: each program with the probe off and on, interleaved"
echo
echo "| program | round | off | on | on ÷ off (throughput) | the probe's own estimate (share of the process's CPU) |"
echo "|---|---|---|---|---|---|"
for prog in gil tothread; do
  for r in $(seq 1 "$ROUNDS"); do
    if [ "$prog" = gil ]; then
      args=("$PY" "$td/gil.py" --busy --seconds "$SECONDS_"); expr="prog['requests_per_s']"
    else
      args=("$PY" "$td/tothread.py" --calls 5000); expr="1e6/prog['us_per_call']"
    fi
    if [ $((r % 2)) -eq 1 ]; then order="off on"; else order="on off"; fi
    for m in $order; do
      diag "$m" "${args[@]}"
      v=$(field "$expr")
      if [ "$m" = on ]; then on=$v; est=$(field "'%.2f%%' % (100*cost['share_of_cpu'])"); else off=$v; fi
    done
    "$PY" -c "print('| $prog | $r | %.1f/s | %.1f/s | %.3f | %s |' % ($off, $on, $on/$off, '$est'))"
  done
done
