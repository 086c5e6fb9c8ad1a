"""An asyncio service with (--busy) one pure-Python busy thread beside it.

The loop serves requests over loopback TCP to a few client tasks of its own,
and measures its own lag the plain way: a 1 ms timer's lateness
(await asyncio.sleep(0.001), timed around). At the end it prints, on
stdout, one JSON line with what it measured of itself.
"""
import argparse
import asyncio
import json
import sys
import threading
import time

ap = argparse.ArgumentParser()
ap.add_argument("--busy", action="store_true", help="a pure-Python busy thread beside the loop")
ap.add_argument("--si", type=float, default=0, help="sys.setswitchinterval (0: leave the default)")
ap.add_argument("--seconds", type=float, default=2.0)
ap.add_argument("--clients", type=int, default=1)
a = ap.parse_args()
if a.si:
    sys.setswitchinterval(a.si)

stop = threading.Event()
spins = [0]


def busy():
    n = 0
    while not stop.is_set():
        for _ in range(1000):
            n += 1
    spins[0] = n


async def handle(reader, writer):
    while True:
        line = await reader.readline()
        if not line:
            break
        writer.write(line)
        await writer.drain()
    writer.close()


async def client(port, deadline, counts):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    while time.monotonic() < deadline:
        writer.write(b"ping\n")
        await writer.drain()
        await reader.readline()
        counts[0] += 1
        await asyncio.sleep(0.002)
    writer.close()


async def self_lag(deadline, lags):
    while time.monotonic() < deadline:
        t = time.perf_counter_ns()
        await asyncio.sleep(0.001)
        lags.append(time.perf_counter_ns() - t - 1_000_000)


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    deadline = time.monotonic() + a.seconds
    counts, lags = [0], []
    await asyncio.gather(self_lag(deadline, lags), *[client(port, deadline, counts) for _ in range(a.clients)])
    server.close()
    await server.wait_closed()
    return counts[0], lags


th = None
if a.busy:
    th = threading.Thread(target=busy, name="busy")
    th.start()
try:
    t0 = time.perf_counter()
    requests, lags = asyncio.run(main())
    el = time.perf_counter() - t0
finally:
    stop.set()
    if th is not None:
        th.join()
lags.sort()
q = lambda f: lags[min(len(lags) - 1, int(f * len(lags)))] / 1e3
print(json.dumps({"requests": requests, "requests_per_s": requests / el, "self_lag_p50_us": q(0.5), "self_lag_p99_us": q(0.99),
                  "self_lag_max_us": lags[-1] / 1e3, "fires": len(lags), "switch_interval_s": sys.getswitchinterval(), "busy_spins": spins[0]}))
