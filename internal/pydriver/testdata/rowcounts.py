# What the driver's task ring and two-hop wrapper do per op, against plain
# loops of the same code (internal/selfcheck/pyref.py), counted, not timed
# (TestDriverRowsDoWhatPlainLoopsDo). Usage:
#   python3 rowcounts.py DRIVER.py PYREF.py OPS_RING OPS_TWO_HOP
# For each row it runs, in this one process, the driver's arm as the runner
# asks for it (open, one sizing batch, one timed repetition with every unit
# timed on its own) and the reference's loop for the same ops, each after a
# warm-up, and counts over the timed part alone: event-loop iterations,
# polls that waited (a timeout other than 0), Python function calls and C
# calls (sys.setprofile), garbage collections, and the net growth of
# allocated blocks. It prints
# one JSON line per row: {"row", "driver": {...}, "plain": {...}}, per op.
import asyncio
import gc
import importlib.util
import json
import selectors
import sys

driver = {"__name__": "ctxlab_driver"}
with open(sys.argv[1]) as f:
    exec(compile(f.read(), "driver.py", "exec"), driver)
spec = importlib.util.spec_from_file_location("pyref", sys.argv[2])
pyref = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pyref)
ops_ring, ops_hop = int(sys.argv[3]), int(sys.argv[4])

C = {"iterations": 0, "waits": 0, "calls": 0, "c_calls": 0, "collections": 0}
base_once = asyncio.BaseEventLoop._run_once


def run_once(self):
    C["iterations"] += 1
    return base_once(self)


asyncio.BaseEventLoop._run_once = run_once
sel = selectors.DefaultSelector
base_select = sel.select


def select(self, timeout=None):
    if timeout is None or timeout > 0:
        C["waits"] += 1
    return base_select(self, timeout)


sel.select = select


def collected(phase, info):
    if phase == "start":
        C["collections"] += 1


gc.callbacks.append(collected)


def profile(frame, event, arg):
    if event == "call":
        C["calls"] += 1
    elif event == "c_call":
        C["c_calls"] += 1


def counted(run, ops):
    """run() under the counters; the counts per op."""
    for k in C:
        C[k] = 0
    blocks = sys.getallocatedblocks()
    sys.setprofile(profile)
    # threading.setprofile too: the executor's worker runs the lookups.
    driver["threading"].setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
        driver["threading"].setprofile(None)
    out = {k: v / ops for k, v in C.items()}
    out["blocks"] = (sys.getallocatedblocks() - blocks) / ops
    return out


def by_driver(bench, params, ops):
    arm = driver["Arm"]({"bench": bench, "params": params})
    res = {}
    try:
        arm.batch(ops)  # warm-up
        res["counts"] = counted(lambda: res.update(t=arm.timed(1, ops, 1, 1000.0)), ops)
    finally:
        arm.close()
    if res["t"]["ops"] != [ops]:
        raise SystemExit("the driver ran %s ops, asked for %d" % (res["t"]["ops"], ops))
    return res["counts"]


def by_hand(make, ops):
    with pyref.async_bench(make) as bench:
        bench.run(ops)  # warm-up
        return counted(lambda: bench.run(ops), ops)


rows = [
    ("ring/pytask/asyncio-queue/n=100", lambda: by_driver("ring.task", {"n": "100"}, ops_ring), lambda: by_hand("ring", ops_ring)),
    ("hop/pytask/two-hop", lambda: by_driver("hop", {"how": "two-hop", "db": "file"}, ops_hop), lambda: by_hand("two-hop", ops_hop)),
]
for row, d, p in rows:
    print(json.dumps({"row": row, "driver": d(), "plain": p()}))
