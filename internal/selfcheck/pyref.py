#!/usr/bin/env python3
"""Plain perf_counter loops of the seeds' CPython code: the references
ctxlab's CPython arms are held to, by `ctxlab selfcheck` (embedded) and by
scripts/sqlite-seed-compare.sh.

    python3 pyref.py [-mode lookup] [-n 200000] [-reps 5]
    python3 pyref.py -mode chain -seconds 0.1 -reps 3
    python3 pyref.py -db FILE -query 'select ... ?' -keys 1..1000 -all [-immutable]
    python3 pyref.py -mode ring -tasks 100 -seconds 0.2
    python3 pyref.py -mode two-hop -seconds 0.2
    python3 pyref.py -mode thread-ring -tasks 100 -seconds 0.2 [-cpu 0]

-mode lookup (the default), against hop/pytask/direct: without -db it builds
the seed's table in a temp file (1 000 rows, keyed by the integer primary
key) and times a fresh conn.execute(...).fetchone() per lookup, ids 1..1000
in turn. With -db it opens FILE as an application does,
conn = sqlite3.connect(FILE) (read-write: run it on a database of your own
or a copy; on a WAL database the last connection to close checkpoints it),
and runs -query with each key of -keys (a range a..b or a file of values,
one per line): conn.execute(q, (k,)).fetchone(), or fetchall() with -all,
as ctxlab reads a user's query. -immutable opens FILE as
file:FILE?mode=ro&immutable=1 instead: the reference of ctxlab's
user-immutable row.

-mode chain, against callchain/pythread/plain: the seed's three nested
plain calls, l1(1), in a loop.

-mode ring, against ring/pytask/asyncio-queue/n=TASKS: -tasks asyncio
tasks (default 100) in a ring of asyncio.Queue, the main task one of them:
it puts the token into the next task's queue and awaits it back from its
own; every other task awaits its queue and put_nowait()s the token on. One
op is one hop (a lap is -tasks hops); it prints ns per hop.

-mode two-hop, against hop/pytask/two-hop: the seed's thread-backed async
wrapper on the seed's table in a temp file: per lookup, conn.execute(...)
through loop.run_in_executor on one worker thread (started outside
timing), then the cursor's fetchone() through the same worker, ids
1..1000 in turn.

-mode thread-ring, against ring/pythread/simplequeue/n=TASKS (with -cpu 0,
against …/n=2/same-cpu): the seeds' thread ring, -tasks threads in a ring
of queue.SimpleQueue, the main thread one of them: it puts the token into
the next thread's queue and gets it back from its own; every other thread
gets from its queue and puts the token on. One op is one hop.

-seconds S sizes -n so that one repetition takes about S (from a pilot of
2 000 ops); -cpu C pins the process to CPU C first. It prints the median
over -reps of the mean ns per op, nothing else.
"""
import argparse
import asyncio
import concurrent.futures
import contextlib
import itertools
import os
import queue
import shutil
import sqlite3
import statistics
import tempfile
import threading
import time
import urllib.parse


def l3(x):
    return x + 1


def l2(x):
    return l3(x) + 1


def l1(x):
    return l2(x) + 1


def keys_from(spec):
    if spec.startswith("file:"):
        with open(spec[5:]) as f:
            return [int(l) if l.strip().lstrip("-").isdigit() else l.rstrip("\n") for l in f if l.strip()]
    a, b = spec.removeprefix("range:").split("..")
    return list(range(int(a), int(b) + 1))


def chain_loop(n):
    f = l1
    t0 = time.perf_counter()
    for _ in range(n):
        f(1)
    return time.perf_counter() - t0


def lookup_loop(conn, q, ks, all_rows):
    t0 = time.perf_counter()
    if all_rows:
        for k in ks:
            conn.execute(q, (k,)).fetchall()
    else:
        for k in ks:
            conn.execute(q, (k,)).fetchone()
    return time.perf_counter() - t0


async def ring_worker(qin, qout):
    get, put = qin.get, qout.put_nowait
    while True:
        v = await get()
        put(v)
        if v is None:
            return


class Ring:
    """The task ring, set up on loop: tasks-1 workers parked on their queues."""

    def __init__(self, loop, tasks):
        self.loop, self.n = loop, tasks
        self.qs = [asyncio.Queue() for _ in range(tasks)]
        self.ts = [loop.create_task(ring_worker(self.qs[i], self.qs[(i + 1) % tasks])) for i in range(1, tasks)]
        loop.run_until_complete(asyncio.sleep(0))

    async def laps(self, k):
        put, get = self.qs[1 % self.n].put_nowait, self.qs[0].get
        t0 = time.perf_counter()
        for _ in range(k):
            put(1)
            await get()
        return time.perf_counter() - t0

    def run(self, n):
        """About n hops (whole laps): seconds per hop times n."""
        k = max(1, -(-n // self.n))
        return self.loop.run_until_complete(self.laps(k)) / (k * self.n) * n

    def close(self):
        async def stop():
            self.qs[1 % self.n].put_nowait(None)
            await self.qs[0].get()
            for t in self.ts:
                await t

        self.loop.run_until_complete(stop())


def thread_ring_worker(qin, qout):
    get, put = qin.get, qout.put
    while True:
        v = get()
        put(v)
        if v is None:
            return


class ThreadRing:
    """The thread ring: tasks-1 threads parked on their SimpleQueues."""

    def __init__(self, tasks):
        self.n = tasks
        self.qs = [queue.SimpleQueue() for _ in range(tasks)]
        self.ts = [threading.Thread(target=thread_ring_worker, args=(self.qs[i], self.qs[(i + 1) % tasks]), daemon=True)
                   for i in range(1, tasks)]
        for t in self.ts:
            t.start()

    def run(self, n):
        """About n hops (whole laps): seconds per hop times n."""
        k = max(1, -(-n // self.n))
        put, get = self.qs[1 % self.n].put, self.qs[0].get
        t0 = time.perf_counter()
        for _ in range(k):
            put(1)
            get()
        return (time.perf_counter() - t0) / (k * self.n) * n

    def close(self):
        self.qs[1 % self.n].put(None)
        self.qs[0].get()
        for t in self.ts:
            t.join()


class TwoHop:
    """The two-hop wrapper on conn, its one worker thread started."""

    def __init__(self, loop, conn):
        self.loop, self.conn = loop, conn
        self.ex = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        self.ex.submit(int).result()
        self.keys = itertools.cycle(range(1, 1001))

    async def lookups(self, n):
        hop, ex, execute = self.loop.run_in_executor, self.ex, self.conn.execute
        keys = itertools.islice(self.keys, n)
        t0 = time.perf_counter()
        for k in keys:
            cur = await hop(ex, execute, SQL, (k,))
            await hop(ex, cur.fetchone)
        return time.perf_counter() - t0

    def run(self, n):
        return self.loop.run_until_complete(self.lookups(n))

    def close(self):
        self.ex.shutdown(wait=True)


SQL = "select v from t where id = ?"


def seed_db(dir):
    """The seed's table, 1 000 rows keyed by the integer primary key, in a
    file in dir; its path."""
    path = os.path.join(dir, "seed.db")
    conn = sqlite3.connect(path)
    conn.execute("create table t (id integer primary key, v text)")
    conn.executemany("insert into t (id, v) values (?, ?)", [(i, "value %d" % i) for i in range(1, 1001)])
    conn.commit()
    conn.close()
    return path


def timed_loop(a, run):
    """run's warm-up, then the median over -reps of ns per op."""
    n = sized(a, run)
    run(n)  # warm-up
    return statistics.median(run(n) / n * 1e9 for _ in range(a.reps))


@contextlib.contextmanager
def async_bench(mode, tasks=100):
    """The ring of tasks or the two-hop wrapper (over the seed's table in a
    temp file) on a new event loop, closed with all it holds afterwards."""
    loop = asyncio.new_event_loop()
    tmp = conn = None
    try:
        if mode == "ring":
            bench = Ring(loop, tasks)
        else:
            tmp = tempfile.mkdtemp(prefix="ctxlab-sqlop-%d-" % os.getpid())  # swept by ctxlab if left
            conn = sqlite3.connect(seed_db(tmp), check_same_thread=False)
            bench = TwoHop(loop, conn)
        try:
            yield bench
        finally:
            bench.close()
    finally:
        loop.close()
        if conn is not None:
            conn.close()
        if tmp:
            shutil.rmtree(tmp)


def async_mode(a):
    with async_bench(a.mode, a.tasks) as bench:
        return timed_loop(a, bench.run)


def sized(a, pilot):
    """-n, or from -seconds: pilot(2000) times 2 000 ops."""
    if not a.seconds:
        return a.n
    per = pilot(2000) / 2000
    return max(1000, min(int(a.seconds / max(per, 1e-9)), 50_000_000))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-mode", choices=("lookup", "chain", "ring", "two-hop", "thread-ring"), default="lookup")
    ap.add_argument("-tasks", type=int, default=100, help="-mode ring: the ring's size")
    ap.add_argument("-n", type=int, default=200000)
    ap.add_argument("-seconds", type=float, default=0)
    ap.add_argument("-reps", type=int, default=5)
    ap.add_argument("-cpu", type=int, default=-1)
    ap.add_argument("-db")
    ap.add_argument("-query", default="select v from t where id = ?")
    ap.add_argument("-keys", default="1..1000")
    ap.add_argument("-all", action="store_true", help="fetchall() instead of fetchone(), as ctxlab reads a user's query")
    ap.add_argument("-immutable", action="store_true", help="open -db FILE immutable (mode=ro&immutable=1), not as an application does")
    a = ap.parse_args()
    if a.cpu >= 0:
        os.sched_setaffinity(0, {a.cpu})
    if a.mode == "thread-ring":
        if a.tasks < 2:
            ap.error("-tasks: a ring needs at least 2 threads")
        ring = ThreadRing(a.tasks)
        try:
            print("%.1f" % timed_loop(a, ring.run))
        finally:
            ring.close()
        return
    if a.mode in ("ring", "two-hop"):
        if a.tasks < 2:
            ap.error("-tasks: a ring needs at least 2 tasks")
        print("%.1f" % async_mode(a))
        return
    if a.mode == "chain":
        n = sized(a, chain_loop)
        chain_loop(n)  # warm-up
        print("%.1f" % statistics.median(chain_loop(n) / n * 1e9 for _ in range(a.reps)))
        return
    tmp = None
    if a.db and a.immutable:
        conn = sqlite3.connect("file:%s?mode=ro&immutable=1" % urllib.parse.quote(os.path.abspath(a.db)), uri=True)
    elif a.db:
        conn = sqlite3.connect(a.db)  # as an application connects
    else:
        tmp = tempfile.mkdtemp(prefix="ctxlab-sqlop-%d-" % os.getpid())  # swept by ctxlab if left (sqlop.RemoveStale)
        conn = sqlite3.connect(seed_db(tmp))
    try:
        keys = keys_from(a.keys)
        q = a.query
        ks = keys[:1000]
        for k in ks:  # warm-up
            conn.execute(q, (k,)).fetchall()
        n = sized(a, lambda m: lookup_loop(conn, q, [keys[i % len(keys)] for i in range(m)], a.all))
        ks = [keys[i % len(keys)] for i in range(n)]
        print("%.1f" % statistics.median(lookup_loop(conn, q, ks, a.all) / n * 1e9 for _ in range(a.reps)))
    finally:
        conn.close()
        if tmp:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
