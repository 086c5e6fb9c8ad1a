"""An asyncio service whose handlers do CPU work inline (--work-ms every
--every-th request; 0: none) while 4 clients send requests, each waiting
--pace-ms between them. Prints, on
stdout, one JSON line with its own 1 ms timer's lateness and its throughput.
"""
import argparse
import asyncio
import json
import time

ap = argparse.ArgumentParser()
ap.add_argument("--work-ms", type=float, default=5.0)
ap.add_argument("--every", type=int, default=10)
ap.add_argument("--seconds", type=float, default=2.0)
ap.add_argument("--pace-ms", type=float, default=1.0, help="each client waits this long between requests")
a = ap.parse_args()


def cpu(ms):
    end = time.thread_time() + ms / 1e3
    n = 0
    while time.thread_time() < end:
        for _ in range(200):
            n += 1
    return n


async def handle(reader, writer):
    i = 0
    while True:
        line = await reader.readline()
        if not line:
            break
        i += 1
        if a.work_ms > 0 and i % a.every == 0:
            cpu(a.work_ms)  # inline: the loop runs nothing else meanwhile
        writer.write(line)
        await writer.drain()
    writer.close()


async def client(port, deadline, counts):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    while time.monotonic() < deadline:
        writer.write(b"req\n")
        await writer.drain()
        await reader.readline()
        counts[0] += 1
        await asyncio.sleep(a.pace_ms / 1e3)
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
    t0 = time.perf_counter()
    await asyncio.gather(self_lag(deadline, lags), *[client(port, deadline, counts) for _ in range(4)])
    el = time.perf_counter() - t0
    server.close()
    await server.wait_closed()
    lags.sort()
    q = lambda f: lags[min(len(lags) - 1, int(f * len(lags)))] / 1e3
    print(json.dumps({"requests": counts[0], "requests_per_s": counts[0] / el, "self_lag_p50_us": q(0.5), "self_lag_p99_us": q(0.99)}))


asyncio.run(main())
