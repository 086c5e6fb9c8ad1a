#!/usr/bin/env bash
# Usage:
#   go build -o ctxlab ./cmd/ctxlab && CTX=./ctxlab \
#     PYS='/opt/cpython/3.13.5/bin/python3.13 /opt/cpython/3.13.5t/bin/python3.13t' \
#     bash scripts/pybuilds-compare.sh
# ctxlab's thread and task rings beside plain loops of the same code
# (internal/selfcheck/pyref.py -mode thread-ring / ring) on each interpreter
# of PYS (default: python3), ROUNDS rounds (default 3), interleaved: every
# round runs every row on every interpreter, ctxlab and the loop in turn,
# in an order that alternates from round to round, so that a machine that
# drifts (other people's work) moves both sides alike. Prints one markdown
# row per measurement with the load average, then per row and interpreter
# the median of the rounds: ctxlab ns/op and CPU ns/op (cpu_ns_per_op: all
# the driver's threads), the loop's ns/op, and ctxlab / loop.
# docs/python.md ("The free-threaded build, for real") reads its output.
set -euo pipefail
CTX=${CTX:-ctxlab}; PYS=${PYS:-python3}; ROUNDS=${ROUNDS:-3}; REPS=${REPS:-5}
here=$(cd "$(dirname "$0")" && pwd)
OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT
rows=(
  'ring/pythread/simplequeue/n=2|-mode thread-ring -tasks 2'
  'ring/pythread/simplequeue/n=100|-mode thread-ring -tasks 100'
  'ring/pythread/simplequeue/n=2/same-cpu|-mode thread-ring -tasks 2 -cpu 0'
  'ring/pytask/asyncio-queue/n=2|-mode ring -tasks 2'
  'ring/pytask/asyncio-queue/n=100|-mode ring -tasks 100'
)
ctx() { # arm python → ns/op (the median of REPS repetitions)
  "$CTX" run "$1" --python "$2" --reps "$REPS" --no-store --format json -o "$OUT/c.json" >/dev/null 2>"$OUT/c.err" ||
    { echo "ctxlab run $1 --python $2 failed:" >&2; cat "$OUT/c.err" >&2; exit 1; }
  "$2" -c 'import json,sys; a=json.load(open(sys.argv[1]))["arms"][0]; assert a["status"] in ("ok", ""), a["status"]; print("%.1f | %.1f" % (a["median"], a.get("cpu_ns_per_op") or float("nan")))' "$OUT/c.json"
}
# shellcheck disable=SC2086
loop() { "$2" "$here/../internal/selfcheck/pyref.py" $1 -seconds 0.2 -reps "$REPS"; }
load() { cut -d' ' -f1 /proc/loadavg; }
echo "| round | row | python | ctxlab ns/op | ctxlab CPU ns/op | loop ns/op | load |"
echo "|---|---|---|---|---|---|---|"
read -r -a pys <<<"$PYS"
for r in $(seq 1 "$ROUNDS"); do
  order=("${pys[@]}")
  if [ $((r % 2)) -eq 0 ]; then mapfile -t order < <(printf '%s\n' "${pys[@]}" | tac); fi
  for row in "${rows[@]}"; do
    arm=${row%%|*}; args=${row#*|}
    for py in "${order[@]}"; do
      if [ $((r % 2)) -eq 1 ]; then c=$(ctx "$arm" "$py"); l=$(loop "$args" "$py"); else l=$(loop "$args" "$py"); c=$(ctx "$arm" "$py"); fi
      echo "| $r | $arm | $py | $c | $l | $(load) |" | tee -a "$OUT/rows"
    done
  done
done
echo
python3 - "$OUT/rows" <<'PY'
import collections, statistics, sys
m = collections.defaultdict(lambda: ([], []))
for line in open(sys.argv[1]):
    _, _, row, py, c, cpu, l, _, _ = [f.strip() for f in line.split("|")]
    m[(row, py)][0].append((float(c), float(cpu))); m[(row, py)][1].append(float(l))
print("| row | python | ctxlab ns/op | ctxlab CPU ns/op | loop ns/op | ctxlab / loop |")
print("|---|---|---|---|---|---|")
for (row, py), (c, l) in m.items():
    cpu = statistics.median(x[1] for x in c)
    c, l = statistics.median(x[0] for x in c), statistics.median(l)
    print("| %s | %s | %.0f | %.0f | %.0f | %.2f |" % (row, py, c, cpu, l, c / l))
PY
