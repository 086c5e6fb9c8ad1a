#!/usr/bin/env bash
# Usage: go build -o ctxlab ./cmd/ctxlab && go test -c -o mech.test ./internal/mech &&
#        CTX=./ctxlab MECH=./mech.test bash scripts/harness-compare.sh
# Needs perf (linux-perf) and taskset; prints a markdown table of ratios.
#
# Every figure runs with its workers on CPU 0, the reference's too (CPU 0
# of a VM can run a loop ~40% slower than CPU 1, so an unpinned reference
# is not comparable); the goroutine arm and its reference run whole on
# CPU 0, the others keep their harness threads off it. Each arm is run
# right beside its reference, ROUNDS times, so drift of the machine
# between rounds cancels in the ratio.
set -euo pipefail
CTX=${CTX:-ctxlab}; MECH=${MECH:-./mech.test}; ROUNDS=${ROUNDS:-5}; OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
ctx() { # arm, file
  $CTX run "$1" --cpus 0 --reps 5 --no-store --format json -o "$2" >/dev/null 2>"$2.err" ||
    { echo "ctxlab run $1 failed:"; cat "$2.err"; exit 1; }
}
command -v perf >/dev/null && command -v taskset >/dev/null && command -v python3 >/dev/null ||
  { echo "harness-compare.sh needs perf, taskset and python3"; exit 1; }
bench() { # pattern, -cpu, file: the raw loops pin their two threads to CPU 0
  "$MECH" -test.run XXX -test.bench "$1" -test.count 1 -test.cpu "$2" >"$3" 2>&1 ||
    { echo "$MECH -test.bench $1 failed:"; cat "$3"; exit 1; }
}
perfpipe() { # file, perf bench flags
  local f=$1; shift
  taskset -c 0 perf bench sched pipe "$@" -l 200000 >"$f" 2>&1 || { echo "perf bench sched pipe $* failed:"; cat "$f"; exit 1; }
}
for r in $(seq 1 "$ROUNDS"); do
  ctx 'pingpong/goroutine/chan/gomaxprocs=1' "$OUT/chan$r.json"; taskset -c 0 "$MECH" -test.run XXX -test.bench PlainChan -test.count 1 -test.cpu 1 >"$OUT/chan$r.txt" 2>&1 ||
    { echo "PlainChan failed:"; cat "$OUT/chan$r.txt"; exit 1; }
  ctx 'pingpong/thread/futex/unpinned' "$OUT/futex$r.json"; bench 'RawFutex' 4 "$OUT/futex$r.txt"
  bench 'EndpointFutex' 4 "$OUT/futex$r.ep"
  ctx 'pingpong/thread/eventfd/unpinned' "$OUT/eventfd$r.json"; bench 'RawEventfd' 4 "$OUT/eventfd$r.txt"
  bench 'EndpointEventfd' 4 "$OUT/eventfd$r.ep"
  ctx 'pingpong/thread/pipe/unpinned' "$OUT/tpipe$r.json"; perfpipe "$OUT/tpipe$r.txt" -T
  bench 'RawPipe' 4 "$OUT/tpipe$r.raw"; bench 'ThreadPipe' 4 "$OUT/tpipe$r.ep"
  ctx 'pingpong/process/pipe/unpinned' "$OUT/ppipe$r.json"; perfpipe "$OUT/ppipe$r.txt"
  bench 'RawProcessPipe' 4 "$OUT/ppipe$r.raw"
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, os, re, sys, statistics as st
out, R = sys.argv[1], int(sys.argv[2])
def ctx(f):
    a = json.load(open(f))['arms'][0]
    if a['status'] != 'ok':
        raise SystemExit(f"{f}: {a['name']} {a['status']}: {a.get('reason', '')}")
    return a['median']
def gobench(f):
    for line in open(f):
        m = re.match(r'Benchmark\S+\s+\d+\s+([\d.]+) ns/op', line)
        if m: return float(m.group(1))
    raise SystemExit(f"no benchmark line in {f}")
def perf(f): return float(re.search(r'([\d.]+) usecs/op', open(f).read()).group(1)) * 1000
rows = [  # key, arm, reference, parser
    ('chan', 'pingpong/goroutine/chan/gomaxprocs=1', 'plain `testing.B` loop (`BenchmarkPlainChanRoundTrip -cpu 1`)', gobench),
    ('futex', 'pingpong/thread/futex/unpinned', 'raw-syscall futex loop (`BenchmarkRawFutexRoundTripCPU0`)', gobench),
    ('eventfd', 'pingpong/thread/eventfd/unpinned', 'raw-syscall eventfd loop (`BenchmarkRawEventfdRoundTripCPU0`)', gobench),
    ('tpipe', 'pingpong/thread/pipe/unpinned', '`perf bench sched pipe -T`', perf),
    ('ppipe', 'pingpong/process/pipe/unpinned', '`perf bench sched pipe`', perf),
]
fmt = lambda xs: ", ".join("%.0f" % x for x in xs)
rat = lambda xs: ", ".join("%.2f" % x for x in xs)
series = lambda key, ext, parse: [parse(f"{out}/{key}{r}.{ext}") for r in range(1, R + 1)]
print("| arm (`--cpus 0`) | ctxlab median per round (ns) | reference | reference per round (ns) | ratio per round | median ratio |")
print("|---|---|---|---|---|---|")
split = []
for key, arm, refname, parse in rows:
    c = series(key, 'json', ctx)
    ref = series(key, 'txt', parse)
    r = [a / b for a, b in zip(c, ref)]
    print(f"| `{arm}` | {fmt(c)} | {refname} | {fmt(ref)} | {rat(r)} | **{st.median(r):.2f}** |")
    if os.path.exists(f"{out}/{key}1.ep"):
        # The gap, step by step: raw Go loop → the same loop through the
        # Endpoint and the runtime-aware blocking call → ctxlab's runner.
        raw = series(key, 'raw', gobench) if key == 'tpipe' else ref
        ep = series(key, 'ep', gobench)
        steps = [("Go process (raw Go loop ÷ C)", [a / b for a, b in zip(raw, ref)])] if key == 'tpipe' else []
        steps += [("Go runtime's system-call path (Endpoint loop ÷ raw Go loop)", [a / b for a, b in zip(ep, raw)]),
                  ("runner (ctxlab ÷ Endpoint loop)", [a / b for a, b in zip(c, ep)])]
        split.append((arm, steps))
    elif key == 'ppipe':
        # No Endpoint loop between: the raw Go loop is a locked thread and
        # a child (the test binary again), both raw, both on CPU 0.
        raw = series(key, 'raw', gobench)
        split.append((arm, [("Go processes (raw Go loop ÷ C)", [a / b for a, b in zip(raw, ref)]),
                            ("Go's system-call path and the runner (ctxlab ÷ raw Go loop)", [a / b for a, b in zip(c, raw)])]))
print()
print("Where each arm's gap goes (median ratio, per-round ratios):")
print()
print("| arm | step | median | per round |")
print("|---|---|---|---|")
for arm, steps in split:
    for name, r in steps:
        print(f"| `{arm}` | {name} | {st.median(r):.2f} | {rat(r)} |")
PY
