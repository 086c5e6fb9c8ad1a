"""Looks keys up in sqlite3 on a file through asyncio.to_thread, one call at
a time (--calls of them), or (--slow-ms) a function that takes that long
in its thread. Prints one JSON line: calls, seconds, calls per second.
"""
import argparse
import asyncio
import json
import os
import sqlite3
import tempfile
import threading
import time

ap = argparse.ArgumentParser()
ap.add_argument("--calls", type=int, default=5000)
ap.add_argument("--slow-ms", type=float, default=0)
ap.add_argument("--executor", action="store_true", help="loop.run_in_executor instead of asyncio.to_thread")
a = ap.parse_args()

d = tempfile.mkdtemp(prefix="pyprobe-hop-")
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


def slow(k):
    time.sleep(a.slow_ms / 1e3)
    return k


async def main():
    f = slow if a.slow_ms else lookup
    loop = asyncio.get_running_loop()
    t0 = time.perf_counter()
    for i in range(a.calls):
        if a.executor:
            await loop.run_in_executor(None, f, i % 1000)
        else:
            await asyncio.to_thread(f, i % 1000)
    return time.perf_counter() - t0


try:
    el = asyncio.run(main())
finally:
    os.remove(path)
    os.rmdir(d)
print(json.dumps({"calls": a.calls, "seconds": el, "us_per_call": el / a.calls * 1e6}))
