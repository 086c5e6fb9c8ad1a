#!/usr/bin/env bash
# Usage:
#   LAYOUTS=4 ROUNDS=8 MECH=futex bash scripts/layout-compare.sh
# Compares ctxlab's thread arm pingpong/thread/$MECH/unpinned (--cpus 0)
# with `rawloop -mech $MECH -runtime` over random code layouts: Go's linker
# lays a binary's functions out in a random order with
# -ldflags=-randlayout=SEED, and one build of these loops can read 3-7%
# above or below another for that alone. Builds LAYOUTS layouts of each
# (CGO_ENABLED=0, seeds 1..LAYOUTS), then runs every build once a round in
# a new shuffled order, a 1.5 s pause before each; a round's ratio is the
# mean over ctxlab's layouts ÷ the mean over rawloop's. Prints each
# layout's median and the median ratio (with its range) over the rounds.
# Needs taskset, shuf and python3; about LAYOUTS × ROUNDS × 8 s.
set -euo pipefail
LAYOUTS=${LAYOUTS:-4}; ROUNDS=${ROUNDS:-8}; MECH=${MECH:-futex}
case $MECH in futex | eventfd | pipe) ;; *) echo "MECH=$MECH: want futex, eventfd or pipe"; exit 2 ;; esac
[[ $LAYOUTS =~ ^[1-9][0-9]?$ && $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "LAYOUTS=$LAYOUTS ROUNDS=$ROUNDS: want LAYOUTS 1..99, ROUNDS ≥ 1"; exit 2; }
command -v shuf >/dev/null && command -v python3 >/dev/null || { echo "layout-compare.sh needs shuf and python3"; exit 1; }
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
  for c in $(shuf -e $(for s in $(seq 1 "$LAYOUTS"); do echo "ctxlab$s rawloop$s"; done)); do
    sleep 1.5 # ctxlab probes perf counters as it ends: nothing runs in that wake
    case $c in
      ctxlab*) "$OUT/$c" run "$ARM" --cpus 0 --reps 5 --no-store --format json -o "$OUT/$c.r$r.json" >/dev/null 2>"$OUT/$c.err" ||
        { echo "$c run $ARM failed:"; cat "$OUT/$c.err"; exit 1; } ;;
      rawloop*) "$OUT/$c" -mech "$MECH" -runtime -n 150000 >"$OUT/$c.r$r.txt" 2>&1 ||
        { echo "$c failed:"; cat "$OUT/$c.r$r.txt"; exit 1; } ;;
    esac
  done
done
python3 - "$OUT" "$LAYOUTS" "$ROUNDS" "$ARM" "$MECH" <<'PY'
import json, re, sys, statistics as st
out, L, R, arm, mech = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
def ctx(f):
    a = json.load(open(f))['arms'][0]
    if a['status'] != 'ok':
        raise SystemExit(f"{f}: {a['name']} {a['status']}: {a.get('reason', '')}")
    return a['median']
def raw(f): return float(re.match(r'([\d.]+) ns/op', open(f).read()).group(1))
c = [[ctx(f"{out}/ctxlab{s}.r{r}.json") for s in range(1, L + 1)] for r in range(1, R + 1)]
w = [[raw(f"{out}/rawloop{s}.r{r}.txt") for s in range(1, L + 1)] for r in range(1, R + 1)]
print(f"`{arm}` (--cpus 0) against `rawloop -mech {mech} -runtime`, {L} random layouts each, {R} rounds")
print()
print("| layout (seed) | ctxlab median (ns) | rawloop median (ns) |")
print("|---|---|---|")
for s in range(L):
    print(f"| {s + 1} | {st.median(x[s] for x in c):.0f} | {st.median(x[s] for x in w):.0f} |")
ratios = sorted(st.mean(x) / st.mean(y) for x, y in zip(c, w))
print()
print(f"ctxlab ÷ rawloop -runtime, mean over layouts: median {st.median(ratios):.3f} (range {ratios[0]:.3f}–{ratios[-1]:.3f})")
PY
