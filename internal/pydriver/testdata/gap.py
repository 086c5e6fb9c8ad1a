# The driver's timed loop against a hand-written perf_counter loop
# (TestDriverLoopGap). Usage: python3 gap.py DRIVER.py ROUNDS BENCH_MS
#
# For each call-chain arm, each round runs, interleaved in this one process
# and in alternating order: the driver's own arm (set up, one warm-up batch,
# then its timed repetitions, unsampled, as the runner asks for them), then a
# plain loop calling the same function with the same argument for the same
# number of ops, and the plain loop once more as a control. The ops per
# repetition are what fills BENCH_MS by a first plain loop (the runner's
# sizing is the runner's; this compares loops). It prints one JSON line per
# arm: the medians of each round's repetition means, in ns per op.
import asyncio
import json
import statistics
import sys
import time

driver = {"__name__": "ctxlab_driver"}
with open(sys.argv[1]) as f:
    exec(compile(f.read(), "driver.py", "exec"), driver)
rounds, bench_ms = int(sys.argv[2]), float(sys.argv[3])
pc = time.perf_counter_ns
REPS = 3


def plain(n):
    f = driver["l1"]
    t0 = pc()
    for _ in range(n):
        f(1)
    return pc() - t0


async def coro(n):
    f = driver["a1"]
    t0 = pc()
    for _ in range(n):
        await f(1)
    return pc() - t0


loop = asyncio.new_event_loop()
loops = {
    "callchain.plain": plain,
    "callchain.coroutine": lambda n: loop.run_until_complete(coro(n)),
}


def by_hand(run, n):
    run(n)  # the same warm-up share as one repetition
    return statistics.median(run(n) / n for _ in range(REPS))


def ops_for(run, ms):
    """The ops of run that take about ms milliseconds."""
    n = 1000
    while True:
        took = run(n)
        if took >= 1e6 or n >= 1 << 30:
            return max(1, int(n * ms * 1e6 / max(took, 1)))
        n *= 10


def by_driver(bench, n):
    arm = driver["Arm"]({"bench": bench})
    try:
        arm.batch(n)  # the same warm-up share as one repetition
        res = arm.timed(REPS, n, 0, 0)
    finally:
        arm.close()
    return statistics.median(ns / ops for ns, ops in zip(res["rep_ns"], res["ops"]))


for bench, run in loops.items():
    out = {"bench": bench, "driver": [], "plain": [], "control": []}
    n = ops_for(run, bench_ms)
    for r in range(rounds):
        if r % 2 == 0:
            d = by_driver(bench, n)
            p = by_hand(run, n)
        else:
            p = by_hand(run, n)
            d = by_driver(bench, n)
        c = by_hand(run, n)
        out["driver"].append(d)
        out["plain"].append(p)
        out["control"].append(c)
    print(json.dumps(out), flush=True)
