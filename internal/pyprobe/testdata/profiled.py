"""A program with its own profiler and tracer (sys.setprofile,
threading.setprofile, sys.settrace) around asyncio work that hops threads:
it prints which functions they saw, which must be the same with ctxlab's
probe as without it (the probe steps aside and hides its frames), and what
sys.getprofile and sys.gettrace gave back."""
import asyncio
import sys
import threading

seen = set()


def prof(frame, event, arg):
    if event in ("call", "return"):
        seen.add("%s %s" % (event, frame.f_code.co_name))
    elif event in ("c_call", "c_return"):
        seen.add("%s %s" % (event, getattr(arg, "__name__", "?")))


def trace(frame, event, arg):
    seen.add("trace %s %s" % (event, frame.f_code.co_name))
    return None


def work(i):
    return i * 2


async def main():
    loop = asyncio.get_running_loop()
    total = 0
    for i in range(30):
        total += await asyncio.to_thread(work, i)
    done = asyncio.Event()
    th = threading.Thread(target=lambda: loop.call_soon_threadsafe(done.set))
    th.start()
    await done.wait()
    th.join()
    return total


threading.setprofile(prof)
sys.setprofile(prof)
got_profile = sys.getprofile() is prof
total = asyncio.run(main())
sys.settrace(trace)  # while profiled: the profiler sees the builtins' c_call and c_return
sys.settrace(None)
got_profile = got_profile and sys.getprofile() is prof
sys.setprofile(None)
threading.setprofile(None)
sys.settrace(trace)
got_trace = sys.gettrace() is trace
total += asyncio.run(main())
sys.settrace(None)
print("total", total, "getprofile is prof", got_profile, "gettrace is trace", got_trace)
for s in sorted(seen):
    print(s)
