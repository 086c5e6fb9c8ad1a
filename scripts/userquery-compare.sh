#!/usr/bin/env bash
# Usage:
#   go build -o ctxlab ./cmd/ctxlab && CTX=./ctxlab bash scripts/userquery-compare.sh
# The user's query as ctxlab measures it, beside the application's own loop:
# on a 5 000-row table made here (items: id, name, price; DB=FILE to use
# yours, read by the loops as an application reads it, so a copy), ctxlab's
# hop/pytask/user/direct (the application's connection, read-only) against
# a plain perf_counter loop of conn = sqlite3.connect(path);
# conn.execute(q, (k,)).fetchall() (internal/selfcheck/pyref.py -db), and
# hop/pytask/user-immutable/direct against the same loop on an immutable
# URI (-immutable). ROUNDS rounds, the three runs in a new order each round;
# one markdown row per round with both ratios. Exits 1 when the median
# ratio of either row is over LIMIT (default 1.10).
set -euo pipefail
CTX=${CTX:-ctxlab}; PY=${PY:-python3}; ROUNDS=${ROUNDS:-3}; LIMIT=${LIMIT:-1.10}
QUERY=${QUERY:-select name, price from items where id = ?}; KEYS=${KEYS:-1..5000}
OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT
here=$(cd "$(dirname "$0")" && pwd)
DB=${DB:-}
if [ -z "$DB" ]; then
  DB=$OUT/shop.db
  "$PY" -c 'import sqlite3,sys
c = sqlite3.connect(sys.argv[1])
c.execute("create table items (id integer primary key, name text, price real)")
c.executemany("insert into items values (?, ?, ?)", [(i, "item %d" % i, i * 1.5) for i in range(1, 5001)])
c.commit(); c.close()' "$DB"
fi
ctx() {
  "$CTX" run hop/pytask/user/direct hop/pytask/user-immutable/direct --set db="$DB" --set "query=$QUERY" \
    --set args="range:$KEYS" --python "$PY" --reps 5 --no-store --format json -o "$OUT/c.json" >/dev/null 2>"$OUT/c.err" ||
    { echo "ctxlab run failed:"; cat "$OUT/c.err"; exit 1; }
  "$PY" -c 'import json,sys
arms = {a["name"]: a for a in json.load(open(sys.argv[1]))["arms"]}
for n in ("hop/pytask/user/direct", "hop/pytask/user-immutable/direct"):
    assert arms[n]["status"] == "ok", (n, arms[n]["status"], arms[n].get("reason"))
    print("%.1f" % arms[n]["median"], end=" ")' "$OUT/c.json"
}
loop() { "$PY" "$here/../internal/selfcheck/pyref.py" -db "$DB" -query "$QUERY" -keys "$KEYS" -all "$@"; }
echo "| round | ctxlab user/direct ns | app loop ns | ratio | ctxlab user-immutable/direct ns | immutable loop ns | ratio |"
echo "|---|---|---|---|---|---|---|"
: >"$OUT/ratios"
for r in $(seq 1 "$ROUNDS"); do
  c="" ; l="" ; i=""
  for step in $(printf 'c\nl\ni\n' | shuf); do
    case $step in
      c) c=$(ctx) ;;
      l) l=$(loop) ;;
      i) i=$(loop -immutable) ;;
    esac
  done
  read -r ca ci <<<"$c"
  ra=$("$PY" -c "print('%.3f' % ($ca / $l))"); ri=$("$PY" -c "print('%.3f' % ($ci / $i))")
  echo "$ra $ri" >>"$OUT/ratios"
  echo "| $r | $ca | $l | $ra | $ci | $i | $ri |"
done
"$PY" - "$OUT/ratios" "$LIMIT" <<'PY'
import statistics, sys
rows = [tuple(map(float, l.split())) for l in open(sys.argv[1])]
app, imm = statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)
print("median ratio: application's connection %.3f, immutable %.3f (limit %s)" % (app, imm, sys.argv[2]))
sys.exit(1 if max(app, imm) > float(sys.argv[2]) else 0)
PY
