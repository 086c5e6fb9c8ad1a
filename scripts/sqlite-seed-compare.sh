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
# (QUERY goes to both as one argument.)
set -euo pipefail
CTX=${CTX:-ctxlab}; PY=${PY:-python3}; ROUNDS=${ROUNDS:-3}
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
echo "| round | ctxlab $ARM ns/op | plain loop ns/op | ratio |"
echo "|---|---|---|---|"
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then c=$(ctx); l=$(loop); else l=$(loop); c=$(ctx); fi
  echo "| $r | $c | $l | $("$PY" -c "print('%.3f' % ($c / $l))") |"
done
