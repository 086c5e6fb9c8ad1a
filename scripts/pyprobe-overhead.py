"""The CPython probe's whole cost on a hop-bound program, measured inside one
interpreter (docs/pyprobe.md):

    ctxlab diagnose --python-probe on -- \
        python3 scripts/pyprobe-overhead.py [--blocks 200] [--calls 300] [--workload echo [--busy] | aiosqlite] [--null | --count-only | --passthru]

sqlite3 lookups through asyncio.to_thread, one at a time, exactly as
internal/pyprobe/testdata/tothread.py makes them (its table and lookup,
copied: that program runs as it is imported), in blocks of --calls; each
pair of blocks runs one with the probe switched off (its poll wrapper taken
off the loop's selector, its tick's timer cancelled, its call wrappers —
which count every call, in windows or not — put back to the originals) and
one with it on, in a random order. Between processes this VM's speed swings 2×
from one second to the next, so a whole-run A/B of a few percent needs
hundreds of runs; blocks of a few milliseconds side by side see the same
machine. What this leaves out is the probe's load (timed by the probe
itself, in its report) and its report at exit.

Prints one JSON line: on ÷ off as the ratio of the summed wall times (and
process CPU times) of the blocks, with a bootstrap 95% interval over pairs,
and the median pair's ratio.
With --null both blocks of a pair run off: the method's own bias.
"""
import argparse
import asyncio
import json
import os
import random
import sqlite3
import sys
import tempfile
import threading
import time

ap = argparse.ArgumentParser()
ap.add_argument("--blocks", type=int, default=200, help="pairs of blocks")
ap.add_argument("--calls", type=int, default=300, help="to_thread calls a block")
ap.add_argument("--null", action="store_true", help="both blocks of a pair off")
ap.add_argument("--count-only", action="store_true",
                help="the on block has only the call wrappers in place (counting, no windows, no poll wrapper, no tick): what counting costs")
ap.add_argument("--passthru", action="store_true",
                help="the on block has, in place of the probe's wrappers, ones of this script's that only pass each call on "
                     "(one Python frame a call, no count): the floor any wrapper written in Python pays")
ap.add_argument("--workload", default="to_thread", choices=("to_thread", "echo", "aiosqlite"),
                help="to_thread: sqlite3 lookups as tothread.py makes them; echo: requests a loop answers over loopback TCP, as gil.py's; "
                     "aiosqlite: the same lookups through aiosqlite, as aiosqlite_lookup.py makes them (execute, fetchone)")
ap.add_argument("--busy", action="store_true", help="echo: a pure-Python busy thread beside the loop, as gil.py --busy")
a = ap.parse_args()

import asyncio.base_events


class _Probe:
    """The probe's module, found through one of its wrappers' globals: it is
    not in sys.modules (the program is not to see it)."""

    def __init__(self, g):
        self.__dict__["g"] = g

    def __getattr__(self, name):
        return self.g[name]


_g = getattr(asyncio.base_events.BaseEventLoop.run_forever, "__globals__", {})
P = _Probe(_g) if _g.get("__name__") == "_ctxlab_pyprobe" else None
if P is None or not P._on:
    sys.exit("pyprobe-overhead: the probe is not loaded; run it under ctxlab diagnose --python-probe on")
if a.workload == "aiosqlite":
    import aiosqlite  # before the wrappers are listed (CALLS): the probe hooks it as it is imported

d = tempfile.mkdtemp(prefix="pyprobe-overhead-")
path = os.path.join(d, "t.db")
c = sqlite3.connect(path)
c.execute("create table t (id integer primary key, v text)")
c.executemany("insert into t values (?, ?)", ((i, "v%d" % i) for i in range(1000)))
c.commit()
c.close()
local = threading.local()


def lookup(k):
    conn = getattr(local, "conn", None)
    if conn is None:
        conn = local.conn = sqlite3.connect(path, check_same_thread=False)
    return conn.execute("select v from t where id = ?", (k,)).fetchone()[0]


# The probe's call wrappers (in place all the time: they count every call)
# and the originals they wrap.
CALLS = [(owner, name, owner.__dict__[name], orig) for owner, name, orig in P._patched
         if name in ("call_soon_threadsafe", "run_in_executor", "_execute")]


def passthru(orig):
    def passed(self, *args, **kwargs):
        return orig(self, *args, **kwargs)
    return passed


if a.passthru:
    CALLS = [(owner, name, passthru(orig), orig) for owner, name, _, orig in CALLS]


def calls_on(on):
    for owner, name, wrapper, orig in CALLS:
        setattr(owner, name, wrapper if on else orig)


def pause(t):
    """Switches the probe off, as if it were not loaded; returns what
    resume needs to take up its windows where they were."""
    calls_on(False)
    now = time.perf_counter_ns()
    left = None
    if t.h is not None:  # the tick's timer: put back on resume
        t.h.cancel()
        t.h = None
    if t.resting:  # between windows: the waker is not to wake it while paused
        at, _ = P._waker["rest"].pop(t.lid, (now, t))
        left = max(at - now, 0), t.wake_at - now
    t.sel.__class__ = t.cls
    P._close_calls(now)
    return now, left


def resume(t, paused):
    """Switches the probe back on, in the window or the gap it was in."""
    at, left = paused
    calls_on(True)
    now = time.perf_counter_ns()
    if left is not None:
        P._rest(t, now + left[0], now + left[1])
        return
    t.sel.__class__ = t.sub
    t.due = now + P._tick_ns
    t.h = t.loop.call_later(P._tick_s, t.fire, context=t.ctx)
    t.win0 += now - at
    P._open_calls(now, t.k)


async def handle(reader, writer):
    while line := await reader.readline():
        writer.write(line)
        await writer.drain()
    writer.close()


conn = []
info = {}


async def block(n, i0):
    t0, c0 = time.perf_counter_ns(), time.process_time_ns()
    if a.workload == "echo":
        reader, writer = conn
        for _ in range(n):
            writer.write(b"ping\n")
            await writer.drain()
            await reader.readline()
    elif a.workload == "aiosqlite":
        db = conn[0]
        for i in range(i0, i0 + n):
            cur = await db.execute("select v from t where id = ?", (i % 1000,))
            await cur.fetchone()
    else:
        for i in range(i0, i0 + n):
            await asyncio.to_thread(lookup, i % 1000)
    return time.perf_counter_ns() - t0, time.process_time_ns() - c0


stop = threading.Event()


def busy():
    while not stop.is_set():
        for _ in range(1000):
            pass


async def main():
    ticks = list(P._ticks.values())
    if len(ticks) != 1:
        sys.exit("pyprobe-overhead: the probe does not time this loop's polls")
    t = ticks[0]
    if a.workload == "echo":
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        conn[:] = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
    elif a.workload == "aiosqlite":
        conn[:] = [await aiosqlite.connect(path)]
    await block(a.calls * 5, 0)  # warm: the worker thread and its connection
    rng = random.Random(1)
    pairs = []
    paused = pause(t)
    for b in range(a.blocks):
        first_on = rng.random() < 0.5
        got = {}
        for on in (first_on, not first_on):
            if on and (a.count_only or a.passthru):
                calls_on(True)
            elif on and not a.null:
                resume(t, paused)
            else:
                # the same writes before every block, on or off: each write
                # to a class invalidates what the interpreter specialised on
                # it, so an off block that followed an off block, with no
                # write before it, ran warm where every on block ran after one
                calls_on(False)
                t.sel.__class__ = t.cls
            got[on] = await block(a.calls, b * a.calls)
            if on and (a.count_only or a.passthru):
                calls_on(False)
            elif on and not a.null:
                paused = pause(t)
        pairs.append((got[False], got[True]))
    resume(t, paused)
    if a.workload == "echo":
        conn[1].close()
        await conn[1].wait_closed()
        server.close()
        await server.wait_closed()
    elif a.workload == "aiosqlite":
        await conn[0].close()
    info.update(k=t.k, windows_observed_ns=t.observed, polls=t.np, ticks=t.n, timed=P._nwin[0])
    return pairs


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


th = threading.Thread(target=busy, name="busy") if a.busy else None
if th:
    th.start()
try:
    pairs = asyncio.run(main())
finally:
    stop.set()
    if th:
        th.join()
    os.remove(path)
    os.rmdir(d)
wall = [on[0] / off[0] for off, on in pairs]


def of_sums(ps, i):
    return sum(on[i] for _, on in ps) / max(sum(off[i] for off, _ in ps), 1)


# The probe costs most in its windows, which a block may or may not hold:
# the ratio of the sums is the figure, with a bootstrap interval over pairs.
rng = random.Random(2)
boot = sorted(of_sums(rng.choices(pairs, k=len(pairs)), 0) for _ in range(1000))
out = {
    "pairs": len(pairs), "calls_per_block": a.calls, "null": a.null, "count_only": a.count_only, "passthru": a.passthru,
    "off_us_per_call": sum(off[0] for off, _ in pairs) / len(pairs) / a.calls / 1e3,
    "on_us_per_call": sum(on[0] for _, on in pairs) / len(pairs) / a.calls / 1e3,
    "wall_ratio": of_sums(pairs, 0), "wall_ratio_ci95": [boot[24], boot[974]],
    "cpu_ratio": of_sums(pairs, 1),
    "wall_ratio_median_pair": median(wall),
    "probe": info,
}
print(json.dumps(out))
