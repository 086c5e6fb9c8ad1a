# The driver's timed loop against a hand-written perf_counter loop
# (TestDriverLoopGap). Usage: python3 gap.py DRIVER.py ROUNDS BENCH_MS
#
# For each call-chain arm, each round runs, interleaved in this one process
# and in alternating order: the driver's own measure() (warm-up, sizing and
# repetitions under the default policy), then a plain loop calling the same
# function with the same argument for the same number of ops, and the plain
# loop once more as a control. It prints one JSON line per arm: the medians
# of each round's repetition means, in ns per op.
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


for bench, run in loops.items():
    out = {"bench": bench, "driver": [], "plain": [], "control": [], "ops": []}
    for r in range(rounds):
        req = {"bench": bench, "reps": REPS, "bench_ns": int(bench_ms * 1e6), "warmup_ns": int(bench_ms * 5e5),
               "warmup_ops": 1 << 20, "max_samples": 1000}

        def by_driver():
            res = driver["measure"](req)
            out["ops"].append(res["ops"][0])
            return statistics.median(ns / ops for ns, ops in zip(res["rep_ns"], res["ops"]))

        if r % 2 == 0:
            d = by_driver()
            p = by_hand(run, out["ops"][-1])
        else:
            p = by_hand(run, out["ops"][-1] if out["ops"] else 100000)
            d = by_driver()
        c = by_hand(run, out["ops"][-1])
        out["driver"].append(d)
        out["plain"].append(p)
        out["control"].append(c)
    print(json.dumps(out), flush=True)
