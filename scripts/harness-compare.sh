#!/usr/bin/env bash
# Usage:
#   CGO_ENABLED=0 go build -o ctxlab ./cmd/ctxlab && go build -o ctxlab-cgo ./cmd/ctxlab &&
#   CGO_ENABLED=0 go test -c -o mech.test ./internal/mech && go build -o rawloop ./scripts/rawloop &&
#   CTX=./ctxlab CTXCGO=./ctxlab-cgo MECH=./mech.test RAW=./rawloop bash scripts/harness-compare.sh
# Needs perf (linux-perf), taskset, shuf and python3; prints markdown tables of ratios.
# CTXCGO (a cgo build of ctxlab) is optional: it adds the cgo build's step.
#
# Every figure runs with its workers on CPU 0, the reference's too (CPU 0
# of a VM can run a loop ~40% slower than CPU 1, so an unpinned reference
# is not comparable); the goroutine arm and its reference run whole on CPU
# 0; ctxlab keeps its harness threads off it, rawloop and perf bench leave
# theirs unpinned. Each arm is run right beside its references, ROUNDS
# times, in a new random order each round (so no one command always runs
# first, just after another arm), and drift of the machine between rounds
# cancels in the ratio. The thread arms' Go reference is rawloop, a plain
# program, not a loop in a test binary (those read 5-8% slower here).
set -euo pipefail
CTX=${CTX:-ctxlab}; MECH=${MECH:-./mech.test}; RAW=${RAW:-./rawloop}; CTXCGO=${CTXCGO:-}
ROUNDS=${ROUNDS:-5}; OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
ctxwith() { # binary, arm, file
  "$1" run "$2" --cpus 0 --reps 5 --no-store --format json -o "$3" >/dev/null 2>"$3.err" ||
    { echo "$1 run $2 failed:"; cat "$3.err"; exit 1; }
}
ctx() { # arm, key, round: the CGO_ENABLED=0 build
  ctxwith "$CTX" "$1" "$OUT/$2$3.json"
}
ctxcgo() { # arm, key, round: the cgo build, when there is one
  if [ -n "$CTXCGO" ]; then ctxwith "$CTXCGO" "$1" "$OUT/$2$3.cgo"; fi
}
command -v perf >/dev/null && command -v taskset >/dev/null && command -v shuf >/dev/null && command -v python3 >/dev/null ||
  { echo "harness-compare.sh needs perf, taskset, shuf and python3"; exit 1; }
raw() { # mech, file, [flags: -runtime, -proc]
  "$RAW" -mech "$1" -n 150000 ${3:-} >"$2" 2>&1 || { echo "$RAW -mech $1 ${3:-} failed:"; cat "$2"; exit 1; }
}
perfpipe() { # file, perf bench flags
  local f=$1; shift
  taskset -c 0 perf bench sched pipe "$@" -l 200000 >"$f" 2>&1 || { echo "perf bench sched pipe $* failed:"; cat "$f"; exit 1; }
}
gochan() { # file
  taskset -c 0 "$MECH" -test.run XXX -test.bench PlainChan -test.count 1 -test.cpu 1 >"$1" 2>&1 ||
    { echo "PlainChan failed:"; cat "$1"; exit 1; }
}
group() { # commands: an arm and its references, in a new random order each round
  local _cmds=("$@") _order _i
  _order=$(shuf -e "${!_cmds[@]}") || { echo "shuf failed"; exit 1; }
  # Every command starts after the same 1.5 s pause: ctxlab probes perf
  # counters as it ends, and a probe just before a loop slowed it by
  # 0.7-1.6% (a 1.5 s pause removed that), so no command runs in another's
  # wake. (docs/harness.md's sets 10 and 11 paused 1.1 s after each ctxlab run only.)
  for _i in $_order; do sleep 1.5; eval "${_cmds[$_i]}"; done
}
for r in $(seq 1 "$ROUNDS"); do # the commands are evaluated in group, with this r and m
  group 'ctx pingpong/goroutine/chan/gomaxprocs=1 chan $r' 'ctxcgo pingpong/goroutine/chan/gomaxprocs=1 chan $r' \
    'gochan "$OUT/chan$r.txt"'
  for m in futex eventfd; do
    group 'ctx pingpong/thread/$m/unpinned $m $r' 'ctxcgo pingpong/thread/$m/unpinned $m $r' \
      'raw $m "$OUT/$m$r.txt"' 'raw $m "$OUT/$m$r.rt" -runtime'
  done
  group 'ctx pingpong/thread/pipe/unpinned tpipe $r' 'ctxcgo pingpong/thread/pipe/unpinned tpipe $r' \
    'perfpipe "$OUT/tpipe$r.txt" -T' 'raw pipe "$OUT/tpipe$r.raw"' 'raw pipe "$OUT/tpipe$r.rt" -runtime'
  # With one worker thread and an idle P, a plain runtime-aware loop gets
  # ~5 000 sysmon preemption signals a second, which ctxlab's arm does not:
  # the -runtime reference runs without async preemption.
  group 'ctx pingpong/process/pipe/unpinned ppipe $r' 'ctxcgo pingpong/process/pipe/unpinned ppipe $r' \
    'perfpipe "$OUT/ppipe$r.txt"' 'raw pipe "$OUT/ppipe$r.raw" -proc' \
    'GODEBUG=asyncpreemptoff=1 raw pipe "$OUT/ppipe$r.rt" "-proc -runtime"'
done
python3 - "$OUT" "$ROUNDS" "${CTXCGO:+cgo}" <<'PY'
import json, re, sys, statistics as st
out, R, cgo = sys.argv[1], int(sys.argv[2]), sys.argv[3] == 'cgo'
def ctx(f):
    run = json.load(open(f))
    # A build that is not what the tables say would compare the wrong
    # thing: CTX must be CGO_ENABLED=0, CTXCGO a cgo build (go build makes
    # a CGO_ENABLED=0 binary where no C compiler is found).
    want = '1' if f.endswith('.cgo') else '0'
    if run['env'].get('cgo_enabled') != want:
        raise SystemExit(f"{f}: ctxlab's build has CGO_ENABLED={run['env'].get('cgo_enabled')!r}, want {want!r}")
    a = run['arms'][0]
    if a['status'] != 'ok':
        raise SystemExit(f"{f}: {a['name']} {a['status']}: {a.get('reason', '')}")
    return a['median']
def gobench(f):
    for line in open(f):
        m = re.match(r'Benchmark\S+\s+\d+\s+([\d.]+) ns/op', line)
        if m: return float(m.group(1))
    raise SystemExit(f"no benchmark line in {f}")
def rawloop(f): return float(re.match(r'([\d.]+) ns/op', open(f).read()).group(1))
def perf(f): return float(re.search(r'([\d.]+) usecs/op', open(f).read()).group(1)) * 1000
rows = [  # key, arm, reference, parser
    ('chan', 'pingpong/goroutine/chan/gomaxprocs=1', 'plain `testing.B` loop (`BenchmarkPlainChanRoundTrip -cpu 1`)', gobench),
    ('futex', 'pingpong/thread/futex/unpinned', 'raw-syscall futex loop (`rawloop -mech futex`)', rawloop),
    ('eventfd', 'pingpong/thread/eventfd/unpinned', 'raw-syscall eventfd loop (`rawloop -mech eventfd`)', rawloop),
    ('tpipe', 'pingpong/thread/pipe/unpinned', '`perf bench sched pipe -T`', perf),
    ('ppipe', 'pingpong/process/pipe/unpinned', '`perf bench sched pipe`', perf),
]
fmt = lambda xs: ", ".join("%.0f" % x for x in xs)
rat = lambda xs: ", ".join("%.2f" % x for x in xs)
series = lambda key, ext, parse: [parse(f"{out}/{key}{r}.{ext}") for r in range(1, R + 1)]
div = lambda a, b: [x / y for x, y in zip(a, b)]
print("ctxlab built with CGO_ENABLED=0 (checked in every result).")
print()
print("| arm (`--cpus 0`) | ctxlab median per round (ns) | reference | reference per round (ns) | ratio per round | median ratio |")
print("|---|---|---|---|---|---|")
split = []
for key, arm, refname, parse in rows:
    c = series(key, 'json', ctx)
    ref = series(key, 'txt', parse)
    print(f"| `{arm}` | {fmt(c)} | {refname} | {fmt(ref)} | {rat(div(c, ref))} | **{st.median(div(c, ref)):.2f}** |")
    steps = []
    if key != 'chan':
        # The gap, step by step: C → the raw Go loop → ctxlab's runner.
        # ctxlab's workers wait raw, in system-call sections (mech), as
        # rawloop's do; the loop waiting through the runtime (-runtime) is
        # shown beside them for what a Go program that waits so pays.
        raw = series(key, 'raw', rawloop) if key in ('tpipe', 'ppipe') else ref
        rt = series(key, 'rt', rawloop)
        flag = ' -proc' if key == 'ppipe' else ''
        rtflag = flag + (' -runtime, asyncpreemptoff' if key == 'ppipe' else ' -runtime')
        if key == 'tpipe':
            steps.append(("Go threads (rawloop ÷ C)", div(raw, ref)))
        if key == 'ppipe':
            steps.append(("Go processes (rawloop -proc ÷ C)", div(raw, ref)))
        steps += [(f"runner (ctxlab ÷ rawloop{flag})", div(c, raw)),
                  (f"not paid by ctxlab: Go's system-call path (rawloop{rtflag} ÷ rawloop{flag})", div(rt, raw))]
    if cgo:
        steps.append(("a cgo build (cgo ctxlab ÷ CGO_ENABLED=0 ctxlab)", div(series(key, 'cgo', ctx), c)))
    if steps:
        split.append((arm, steps))
print()
print("Where each arm's gap goes (median ratio, per-round ratios):")
print()
print("| arm | step | median | per round |")
print("|---|---|---|---|")
for arm, steps in split:
    for name, r in steps:
        print(f"| `{arm}` | {name} | {st.median(r):.2f} | {rat(r)} |")
PY
