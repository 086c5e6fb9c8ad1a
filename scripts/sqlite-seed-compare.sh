#!/usr/bin/env bash
# Usage:
#   go build -o ctxlab ./cmd/ctxlab && CTX=./ctxlab bash scripts/sqlite-seed-compare.sh
# ctxlab's CPython direct lookup (hop/pytask/direct: the seed's query on the
# seed's 1 000-row table in a file) beside a plain perf_counter loop of the
# seed's code (internal/selfcheck/pyref.py, which ctxlab selfcheck runs too) on the same interpreter, ROUNDS
# times interleaved, in a new order each round so that drift of the machine
# cancels in the ratio. Prints one markdown row per round: ctxlab ns/op,
# loop ns/op, their ratio. With ARM, SETS, QUERY and LOOPARGS it compares
# another arm against the loop run with those arguments, e.g. a user's query:
#   ARM=hop/pytask/user/direct QUERY='select … where id = ?' \
#   SETS='--set db=F --set args=range:1..5000' LOOPARGS='-db F -keys 1..5000 -all'
# (QUERY goes to both as one argument.) The last line is the median of the
# rounds' ratios; the script fails (exit 1) when it is above LIMIT (default
# 1.10: within 10% of the plain loop; LIMIT=0 reports only).
# scripts/pyrows-compare.sh runs it for the task ring and the two-hop wrapper.
set -euo pipefail
CTX=${CTX:-ctxlab}; PY=${PY:-python3}; ROUNDS=${ROUNDS:-3}; LIMIT=${LIMIT:-1.10}
ARM=${ARM:-hop/pytask/direct}; SETS=${SETS:-}; LOOPARGS=${LOOPARGS:-}; QUERY=${QUERY:-}
qset=(); qloop=()
if [ -n "$QUERY" ]; then qset=(--set "query=$QUERY"); qloop=(-query "$QUERY"); fi
OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT
here=$(cd "$(dirname "$0")" && pwd)
ctx() {
  # shellcheck disable=SC2086
  "$CTX" run "$ARM" $SETS "${qset[@]}" --python "$PY" --reps 5 --no-store --format json -o "$OUT/c.json" >/dev/null 2>"$OUT/c.err" ||
    { echo "ctxlab run $ARM failed:"; cat "$OUT/c.err"; exit 1; }
  "$PY" -c 'import json,sys; a=json.load(open(sys.argv[1]))["arms"][0]; assert a["status"] in ("ok", ""), a["status"]; print("%.1f" % a["median"])' "$OUT/c.json"
}
# shellcheck disable=SC2086
loop() { "$PY" "$here/../internal/selfcheck/pyref.py" $LOOPARGS "${qloop[@]}"; }
echo "| round | ctxlab $ARM ns/op | plain loop ns/op | ratio | load |"
echo "|---|---|---|---|---|"
ratios=()
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then c=$(ctx); l=$(loop); else l=$(loop); c=$(ctx); fi
  ratios+=("$("$PY" -c "print('%.3f' % ($c / $l))")")
  echo "| $r | $c | $l | ${ratios[-1]} | $(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo ?) |"
done
"$PY" - "$ARM" "$LIMIT" "${ratios[@]}" <<'PY'
import statistics, sys
arm, limit, rs = sys.argv[1], float(sys.argv[2]), [float(r) for r in sys.argv[3:]]
m = statistics.median(rs)
over = limit > 0 and m > limit
print("%s: median ratio %.3f (%.3f-%.3f) over %d rounds%s" % (arm, m, min(rs), max(rs), len(rs),
      (", above the limit %.2f" % limit) if over else ""))
sys.exit(1 if over else 0)
PY
