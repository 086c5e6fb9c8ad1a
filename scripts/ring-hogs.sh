#!/usr/bin/env bash
# Usage: CGO_ENABLED=0 go build -o ctxlab ./cmd/ctxlab && CTX=./ctxlab bash scripts/ring-hogs.sh
# The process ring (10 processes passing a token through pipes) quiet and
# under two spinning CPU hogs, side by side with an independent instrument:
# the same ring as a plain Python program (os.fork, os.pipe, perf_counter
# around whole laps). Prints a markdown table; RUNS hogged runs of each.
# The hogs are stress-ng --cpu 2 where installed, else two shell spin loops;
# they are killed by PID on every exit.
set -euo pipefail
CTX=${CTX:-ctxlab}; RUNS=${RUNS:-5}; OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
ARM='ring/process/pipe/n=10/unpinned'
command -v python3 >/dev/null || { echo "ring-hogs.sh needs python3"; exit 1; }
HOGS=() # the hogs' PIDs, and the running Python ring's
stop_hogs() {
  for p in ${HOGS[@]+"${HOGS[@]}"}; do kill "$p" 2>/dev/null || true; done
  for p in ${HOGS[@]+"${HOGS[@]}"}; do wait "$p" 2>/dev/null || true; done
  HOGS=()
}
trap stop_hogs EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
cat >"$OUT/pyring.py" <<'PY'
# A ring of n processes: the parent is node 0 and times whole laps. Each
# process keeps only its own two pipe ends, so the death of any one of
# them is EOF all round the ring and nobody is left blocked.
import os, signal, sys, time
n, hops, reps = 10, int(sys.argv[1]), 5
pipes = [os.pipe() for _ in range(n)]  # pipe i carries node i -> node i+1
def keep(rd, wr):
    for r, w in pipes:
        for fd in (r, w):
            if fd not in (rd, wr):
                os.close(fd)
kids = []
try:
    for i in range(1, n):
        pid = os.fork()
        if pid == 0:
            rd, wr = pipes[i - 1][0], pipes[i][1]
            keep(rd, wr)
            try:
                while True:
                    b = os.read(rd, 8)
                    if b != b"tokentok":
                        break
                    os.write(wr, b)
            finally:
                os._exit(0)  # closing wr passes the end on
        kids.append(pid)
    rd, wr = pipes[n - 1][0], pipes[0][1]
    keep(rd, wr)
    def laps(k):
        for _ in range(k):
            os.write(wr, b"tokentok"); os.read(rd, 8)
    laps(200)  # warm-up
    res = []
    for _ in range(reps):
        k = hops // n
        t = time.perf_counter(); laps(k); res.append((time.perf_counter() - t) / (k * n) * 1e9)
    res.sort()
    print(res[reps // 2], " ".join("%.0f" % x for x in res))
finally:
    for p in kids:
        try:
            os.kill(p, signal.SIGKILL)
            os.waitpid(p, 0)
        except OSError:
            pass
PY
# ctxlab probes perf counters as it ends; let that pass before the Python
# ring runs (as harness-compare.sh does).
ctx() { $CTX run "$ARM" --no-store --format json -o "$1" >/dev/null 2>"$1.err" || { cat "$1.err"; exit 1; }; sleep 1.5; }
py() { # in the background, so a signal to this script is not held up by it
  python3 "$OUT/pyring.py" 20000 >"$1" & local pid=$!
  HOGS+=("$pid"); wait "$pid" || { echo "the Python ring failed"; exit 1; }
  local keep=(); for p in "${HOGS[@]}"; do [ "$p" = "$pid" ] || keep+=("$p"); done; HOGS=(${keep[@]+"${keep[@]}"})
}
for i in 1 2; do ctx "$OUT/quiet-ctx$i.json"; py "$OUT/quiet-py$i.txt"; done
if command -v stress-ng >/dev/null; then
  stress-ng --cpu 2 --timeout 1h >/dev/null 2>&1 & HOGS+=($!)
else
  for _ in 1 2; do sh -c 'while :; do :; done' & HOGS+=($!); done
fi
sleep 1
for i in $(seq 1 "$RUNS"); do ctx "$OUT/hog-ctx$i.json"; py "$OUT/hog-py$i.txt"; done
stop_hogs
python3 - "$OUT" "$RUNS" <<'PY'
import json, sys, statistics as st
out, R = sys.argv[1], int(sys.argv[2])
def ctx(f):
    a = json.load(open(f))['arms'][0]
    if a['status'] != 'ok':
        raise SystemExit(f"{f}: {a['name']} {a['status']}: {a.get('reason', '')}")
    return a['median'], a.get('ops_per_rep', 0), a['rep_means']
def py(f):
    t = open(f).read().split()
    return float(t[0]), [float(x) for x in t[1:]]
qc = st.median([ctx(f"{out}/quiet-ctx{i}.json")[0] for i in (1, 2)])
qp = st.median([py(f"{out}/quiet-py{i}.txt")[0] for i in (1, 2)])
us = lambda x: "%.1f" % (x / 1000)
print(f"quiet: ctxlab {us(qc)} µs per hop, Python ring {us(qp)} µs (median of 2 runs each)\n")
print("| hogged run | ctxlab median (µs) | ops per repetition | × quiet | repetitions (µs) | Python ring median (µs) | × quiet | repetitions (µs) |")
print("|---|---|---|---|---|---|---|---|")
for i in range(1, R + 1):
    m, ops, reps = ctx(f"{out}/hog-ctx{i}.json")
    pm, preps = py(f"{out}/hog-py{i}.txt")
    print(f"| {i} | {us(m)} | {ops} | {m / qc:.1f} | {' '.join(us(x) for x in reps)} | {us(pm)} | {pm / qp:.1f} | {' '.join(us(x) for x in preps)} |")
PY
