"""Looks keys up in sqlite3 on a file through aiosqlite (execute, then
fetchone: the query goes to aiosqlite's thread and back twice; --close a
third time), --queries of them. Prints one JSON line: queries, seconds, µs per query.
"""
import argparse
import asyncio
import json
import os
import sqlite3
import tempfile
import time

import aiosqlite

ap = argparse.ArgumentParser()
ap.add_argument("--queries", type=int, default=3000)
ap.add_argument("--close", action="store_true", help="close each cursor (async with: a third trip to its thread)")
a = ap.parse_args()

d = tempfile.mkdtemp(prefix="pyprobe-aio-")
path = os.path.join(d, "t.db")
c = sqlite3.connect(path)
c.execute("create table t (id integer primary key, v text)")
c.executemany("insert into t values (?, ?)", ((i, "v%d" % i) for i in range(1000)))
c.commit()
c.close()


async def main():
    async with aiosqlite.connect(path) as db:
        t0 = time.perf_counter()
        for i in range(a.queries):
            cur = await db.execute("select v from t where id = ?", (i % 1000,))
            await cur.fetchone()
            if a.close:
                await cur.close()
        return time.perf_counter() - t0


try:
    el = asyncio.run(main())
finally:
    os.remove(path)
    os.rmdir(d)
print(json.dumps({"queries": a.queries, "seconds": el, "us_per_query": el / a.queries * 1e6}))
