#!/usr/bin/env bash
# Usage:
#   LAYOUTS=4 ROUNDS=8 MECH=futex bash scripts/layout-compare.sh
# Compares ctxlab's thread arm pingpong/thread/$MECH/unpinned (--cpus 0)
# with `rawloop -mech $MECH`, raw and with -runtime, over random code
# layouts: Go's linker lays a binary's functions out in a random order with
# -ldflags=-randlayout=SEED, and one build of these loops can read 3-7%
# above or below another for that alone. Builds LAYOUTS layouts of each
# (CGO_ENABLED=0, seeds 1..LAYOUTS), then runs every build once a round in
# a new shuffled order (rawloop twice: raw and -runtime), a 1.5 s pause
# before each; with MECH=pipe and perf installed, `perf bench sched pipe -T`
# on CPU 0 runs once a round among them. A round's ratio is the mean over
# one program's layouts ÷ the mean over the other's. Prints each layout's
# median and the median ratios (with their ranges) over the rounds:
# ctxlab ÷ rawloop (the runner and the command around it: both wait raw,
# ctxlab in system-call sections), rawloop -runtime ÷ rawloop (Go's
# system-call path, which those sections do not pay), ctxlab ÷ rawloop
# -runtime, and for pipe rawloop ÷ perf and ctxlab ÷ perf. Needs shuf and python3 (and taskset for
# perf); about LAYOUTS × ROUNDS × 10 s.
set -euo pipefail
LAYOUTS=${LAYOUTS:-4}; ROUNDS=${ROUNDS:-8}; MECH=${MECH:-futex}
case $MECH in futex | eventfd | pipe) ;; *) echo "MECH=$MECH: want futex, eventfd or pipe"; exit 2 ;; esac
[[ $LAYOUTS =~ ^[1-9][0-9]?$ && $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "LAYOUTS=$LAYOUTS ROUNDS=$ROUNDS: want LAYOUTS 1..99, ROUNDS ≥ 1"; exit 2; }
command -v shuf >/dev/null && command -v python3 >/dev/null || { echo "layout-compare.sh needs shuf and python3"; exit 1; }
PERF= # perf bench -T beside the pipe arm, where it runs (checked before the builds)
if [[ $MECH == pipe ]]; then
  if command -v taskset >/dev/null && taskset -c 0 perf bench sched pipe -T -l 1 >/dev/null 2>&1; then
    PERF=perf
  else
    echo "perf bench sched pipe -T does not run here (perf or taskset missing?): no ratios against it" >&2
  fi
fi
OUT=${OUT:-$(mktemp -d)} # made only once the input is good
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) # absolute: the script moves to the repository root
cd "$(dirname "$0")/.." # the repository root, whatever the caller's directory
# The builds are ~35 MB each: keep the results in OUT, not the binaries.
trap 'rm -f "$OUT"/ctxlab[0-9] "$OUT"/ctxlab[0-9][0-9] "$OUT"/rawloop[0-9] "$OUT"/rawloop[0-9][0-9]' EXIT

for s in $(seq 1 "$LAYOUTS"); do
  CGO_ENABLED=0 go build -ldflags=-randlayout=$s -o "$OUT/ctxlab$s" ./cmd/ctxlab
  CGO_ENABLED=0 go build -ldflags=-randlayout=$s -o "$OUT/rawloop$s" ./scripts/rawloop
done
ARM=pingpong/thread/$MECH/unpinned
for r in $(seq 1 "$ROUNDS"); do
  for c in $(shuf -e $PERF $(for s in $(seq 1 "$LAYOUTS"); do echo "ctxlab$s rawloop$s-rt rawloop$s-raw"; done)); do
    sleep 1.5 # ctxlab probes perf counters as it ends: nothing runs in that wake
    case $c in
      ctxlab*) "$OUT/$c" run "$ARM" --cpus 0 --reps 5 --no-store --format json -o "$OUT/$c.r$r.json" >/dev/null 2>"$OUT/$c.err" ||
        { echo "$c run $ARM failed:"; cat "$OUT/$c.err"; exit 1; } ;;
      rawloop*-raw) "$OUT/${c%-raw}" -mech "$MECH" -n 150000 >"$OUT/$c.r$r.txt" 2>&1 ||
        { echo "$c failed:"; cat "$OUT/$c.r$r.txt"; exit 1; } ;;
      rawloop*-rt) "$OUT/${c%-rt}" -mech "$MECH" -runtime -n 150000 >"$OUT/$c.r$r.txt" 2>&1 ||
        { echo "$c failed:"; cat "$OUT/$c.r$r.txt"; exit 1; } ;;
      perf) taskset -c 0 perf bench sched pipe -T -l 150000 >"$OUT/perf.r$r.txt" 2>&1 ||
        { echo "perf bench failed:"; cat "$OUT/perf.r$r.txt"; exit 1; } ;;
    esac
  done
done
python3 - "$OUT" "$LAYOUTS" "$ROUNDS" "$ARM" "$MECH" "$PERF" <<'PY'
import json, re, sys, statistics as st
out, L, R, arm, mech, perf = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
def ctx(f):
    a = json.load(open(f))['arms'][0]
    if a['status'] != 'ok':
        raise SystemExit(f"{f}: {a['name']} {a['status']}: {a.get('reason', '')}")
    return a['median']
def raw(f): return float(re.match(r'([\d.]+) ns/op', open(f).read()).group(1))
def perfbench(f): return 1000 * float(re.search(r'([\d.]+) usecs/op', open(f).read()).group(1))
# Per round, per layout: ctxlab, rawloop -runtime and raw rawloop.
cx = [[ctx(f"{out}/ctxlab{s}.r{r}.json") for s in range(1, L + 1)] for r in range(1, R + 1)]
rt = [[raw(f"{out}/rawloop{s}-rt.r{r}.txt") for s in range(1, L + 1)] for r in range(1, R + 1)]
rw = [[raw(f"{out}/rawloop{s}-raw.r{r}.txt") for s in range(1, L + 1)] for r in range(1, R + 1)]
print(f"`{arm}` (--cpus 0) against `rawloop -mech {mech}`, raw and -runtime, {L} random layouts each, {R} rounds")
print()
print("| layout (seed) | ctxlab median (ns) | rawloop -runtime median (ns) | rawloop median (ns) |")
print("|---|---|---|---|")
for s in range(L):
    print(f"| {s + 1} | {st.median(y[s] for y in cx):.0f} | {st.median(y[s] for y in rt):.0f} | {st.median(y[s] for y in rw):.0f} |")
def ratio(name, a, b):
    rs = sorted(st.mean(p) / st.mean(q) for p, q in zip(a, b))
    print(f"{name}: median {st.median(rs):.3f} (range {rs[0]:.3f}–{rs[-1]:.3f})")
print()
print("means over layouts, per round:")
ratio("ctxlab ÷ rawloop (the runner and the command: both wait raw, ctxlab in system-call sections)", cx, rw)
ratio("rawloop -runtime ÷ rawloop (Go's system-call path, which ctxlab's sections do not pay)", rt, rw)
ratio("ctxlab ÷ rawloop -runtime", cx, rt)
if perf:
    p = [[perfbench(f"{out}/perf.r{r}.txt")] for r in range(1, R + 1)]
    print(f"perf bench sched pipe -T on CPU 0: median {st.median(y[0] for y in p):.0f} ns")
    ratio("rawloop ÷ perf bench -T (Go's threads)", rw, p)
    ratio("ctxlab ÷ perf bench -T", cx, p)
PY
