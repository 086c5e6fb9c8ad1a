#!/usr/bin/env bash
# diagnose --vary against perf stat on the same command, per value: CPU
# time (task-clock) must be within 5% of perf's median; context switches
# and migrations must lie within perf's min–max over its runs, widened by
# 10% (they vary with scheduling). Three rounds, interleaved so a drift of
# the machine falls on both: each round runs perf stat once per value (in a
# shuffled order), then ctxlab diagnose --vary once per value (--reps 1);
# ctxlab's figure per value is the median of its three runs, as a --reps 3
# run gives it. Exit 1 when a figure is outside.
#
#   scripts/vary-perf-check.sh                    # T=2,32, 8 MiB per thread
#   VALUES="1 4" ELEMENTS=500000000 scripts/vary-perf-check.sh
#
# CTXLAB names the binary (default: one built from this checkout, with
# CGO_ENABLED=0); ROUNDS, VALUES, WS, ELEMENTS, PATTERN set the workload
# (ctxlab workload: cachecost's sweep, the same total work at any count).
# Needs perf (software events are enough) and python3.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
D=$(mktemp -d /tmp/vary-perf.XXXX)
if [ -z "${CTXLAB:-}" ]; then
  (cd "$ROOT" && CGO_ENABLED=0 go build -o "$D/ctxlab" ./cmd/ctxlab)
  CTXLAB=$D/ctxlab
fi
ROUNDS=${ROUNDS:-3}
VALUES=${VALUES:-"2 32"}
WS=${WS:-8MiB}
ELEMENTS=${ELEMENTS:-2000000000}
PATTERN=${PATTERN:-seq}
work() { echo "$CTXLAB" workload --threads "$1" --ws "$WS" --elements "$ELEMENTS" --pattern "$PATTERN"; }
list=$(echo $VALUES | tr ' ' ',')
for r in $(seq "$ROUNDS"); do
  for v in $(printf '%s\n' $VALUES | shuf); do
    perf stat -x, -e task-clock,context-switches,cpu-migrations -o "$D/perf-$v-$r.csv" -- $(work "$v") > /dev/null
  done
  "$CTXLAB" diagnose --vary "T=$list" --reps 1 --settle 500ms --no-store --price=false --format json -o "$D/ctxlab-$r.json" \
    -- "$CTXLAB" workload --threads '{T}' --ws "$WS" --elements "$ELEMENTS" --pattern "$PATTERN" 2> "$D/ctxlab-$r.txt"
  echo "round $r done"
done
python3 - "$D" "$ROUNDS" $VALUES <<'PY'
import json, statistics, sys
d, rounds, values = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def perf(v, r):
    out = {}
    for line in open(f"{d}/perf-{v}-{r}.csv"):
        f = line.strip().split(",")
        if len(f) > 2 and f[0] and f[0][0].isdigit():
            out[f[2]] = float(f[0]) * (1e6 if f[2] == "task-clock" else 1)  # task-clock in ms → ns
    return out
def ctx(v, r):
    run = json.load(open(f"{d}/ctxlab-{r}.json"))
    a = next(a for a in run["arms"] if a["name"] == f"diagnose/T={v}")
    m = a["rep_metrics"]
    return {"task-clock": m["cpu-ns/op"][0], "context-switches": m["switches/op"][0], "cpu-migrations": m["migrations/op"][0]}
bad = 0
print(f"{'value':6} {'figure':17} {'ctxlab median':>14} {'perf median':>12} {'perf min–max':>20} {'ratio':>6}  rule")
for v in values:
    p = [perf(v, r) for r in range(1, rounds + 1)]
    c = [ctx(v, r) for r in range(1, rounds + 1)]
    for ev in ("task-clock", "context-switches", "cpu-migrations"):
        ps, cs = [x[ev] for x in p], [x[ev] for x in c]
        cm, pm, lo, hi = statistics.median(cs), statistics.median(ps), min(ps), max(ps)
        if ev == "task-clock":
            ok, rule = abs(cm / pm - 1) <= 0.05, "within 5% of perf's median"
            fmt = lambda x: f"{x/1e9:.3f} s"
        else:
            ok, rule = 0.9 * lo <= cm <= 1.1 * hi, "within perf's min–max ±10%"
            fmt = lambda x: f"{x:.0f}"
        bad += not ok
        print(f"T={v:4} {ev:17} {fmt(cm):>14} {fmt(pm):>12} {fmt(lo)+'–'+fmt(hi):>20} {cm/pm:6.3f}  {'ok ' if ok else 'OUT'} {rule}")
        print(f"{'':6} {'':17} ctxlab runs: {', '.join(fmt(x) for x in cs)}; perf runs: {', '.join(fmt(x) for x in ps)}")
print(f"== {bad} figure(s) outside (files in {d})")
sys.exit(1 if bad else 0)
PY
