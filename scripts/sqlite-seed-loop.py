#!/usr/bin/env python3
"""The seed's sqlite3 lookup in a plain perf_counter loop: the reference that
ctxlab's CPython direct lookup (hop/pytask/direct) is held to.

    python3 scripts/sqlite-seed-loop.py [-n 200000] [-reps 5]
    python3 scripts/sqlite-seed-loop.py -db FILE -query 'select ... ?' -keys 1..1000

Without -db it builds the seed's table in a temp file (1 000 rows, keyed by
the integer primary key) and times a fresh conn.execute(...).fetchone() per
lookup, ids 1..1000 in turn. With -db it opens FILE read-only (an immutable
URI, as ctxlab does) and runs -query with each key of -keys (a range a..b or
a file of values, one per line); -all reads every row (fetchall), as ctxlab
does for a user's query. It prints the median over -reps of the
mean ns per lookup, nothing else. scripts/sqlite-seed-compare.sh runs it
beside ctxlab.
"""
import argparse
import os
import shutil
import sqlite3
import statistics
import tempfile
import time
import urllib.parse


def keys_from(spec):
    if spec.startswith("file:"):
        with open(spec[5:]) as f:
            return [int(l) if l.strip().lstrip("-").isdigit() else l.rstrip("\n") for l in f if l.strip()]
    a, b = spec.removeprefix("range:").split("..")
    return list(range(int(a), int(b) + 1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=200000)
    ap.add_argument("-reps", type=int, default=5)
    ap.add_argument("-db")
    ap.add_argument("-query", default="select v from t where id = ?")
    ap.add_argument("-keys", default="1..1000")
    ap.add_argument("-all", action="store_true", help="fetchall() instead of fetchone(), as ctxlab reads a user's query")
    a = ap.parse_args()
    tmp = None
    if a.db:
        conn = sqlite3.connect("file:%s?mode=ro&immutable=1" % urllib.parse.quote(os.path.abspath(a.db)), uri=True)
    else:
        tmp = tempfile.mkdtemp(prefix="sqlite-seed-loop-")
        path = os.path.join(tmp, "seed.db")
        conn = sqlite3.connect(path)
        conn.execute("create table t (id integer primary key, v text)")
        conn.executemany("insert into t (id, v) values (?, ?)", [(i, "value %d" % i) for i in range(1, 1001)])
        conn.commit()
        conn.close()
        conn = sqlite3.connect(path)
    try:
        keys = keys_from(a.keys)
        q, n = a.query, a.n
        ks = [keys[i % len(keys)] for i in range(n)]
        for k in ks[:1000]:  # warm-up
            conn.execute(q, (k,)).fetchall()
        means = []
        for _ in range(a.reps):
            t0 = time.perf_counter()
            if a.all:
                for k in ks:
                    conn.execute(q, (k,)).fetchall()
            else:
                for k in ks:
                    conn.execute(q, (k,)).fetchone()
            means.append((time.perf_counter() - t0) / n * 1e9)
        print("%.1f" % statistics.median(means))
    finally:
        conn.close()
        if tmp:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
