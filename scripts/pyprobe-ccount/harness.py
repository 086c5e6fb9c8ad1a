"""What counting every hop costs in Python, and in C (docs/pyprobe.md, tenth
session): a spike, not the probe.

    cc -O2 -shared -fPIC -I"$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" \
        ccount.c -o "ccount$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')"
    PYTHONPATH=. python3 harness.py orig,pass,after,probe,c0,c2 300

One interpreter, asyncio.to_thread hops of a trivial function, one at a
time, in blocks of 300; each round runs every variant's block once, in a
shuffled order, with BaseEventLoop.run_in_executor and call_soon_threadsafe
swapped for the variant's: orig (asyncio's own), pass (Python wrappers that
only pass the call on), after / before (one next() of a counter after or
before the hand-off), probe (the probe's count: the call's site by its
function's code and the calling thread), c0 / c2 (ccount.c's wrapper: a C
pass-through, and the probe's count done in C). Prints each variant's wall
and process CPU time over the first's, summed over the rounds, with a
bootstrap 95% interval over rounds.
"""
import asyncio, asyncio.base_events as be, itertools, random, sys, threading, time, json, statistics
B = be.BaseEventLoop
orig_rie, orig_cst = B.run_in_executor, B.call_soon_threadsafe
def passthru():
    def rie(self, executor, func, *args):
        return orig_rie(self, executor, func, *args)
    def cst(self, callback, *args, context=None):
        return orig_cst(self, callback, *args, context=context)
    return rie, cst
def after():
    c1, c2 = itertools.count(), itertools.count()
    def rie(self, executor, func, *args):
        f = orig_rie(self, executor, func, *args)
        next(c1)
        return f
    def cst(self, callback, *args, context=None):
        h = orig_cst(self, callback, *args, context=context)
        next(c2)
        return h
    return rie, cst
def before():
    c1, c2 = itertools.count(), itertools.count()
    def rie(self, executor, func, *args):
        next(c1)
        return orig_rie(self, executor, func, *args)
    def cst(self, callback, *args, context=None):
        next(c2)
        return orig_cst(self, callback, *args, context=context)
    return rie, cst
def probelike():
    import functools, contextvars
    partial_t, context_t = functools.partial, contextvars.Context
    get_ident = threading.get_ident
    ids_cst, cnt_cst = {}, {}
    ids_tt, cnt_tt = {}, {}
    def cst_site(callback):
        code = getattr(callback, "__code__", None)
        s = ids_cst.setdefault(id(code), len(ids_cst) + 1)
        cnt_cst.setdefault(s, {})
        return s
    def cst(self, callback, *args, context=None):
        h = orig_cst(self, callback, *args, context=context)
        tid = get_ident()
        code = getattr(callback, "__code__", None)
        sid = ids_cst.get(id(code)) or cst_site(callback)
        same = tid == self._thread_id
        c = cnt_cst[sid].get(0 if same else tid)
        if c is None:
            c = cnt_cst[sid][0 if same else tid] = itertools.count()
        next(c)
        return h
    def rie(self, executor, func, *args):
        fut = orig_rie(self, executor, func, *args)
        ex = executor if executor is not None else self._default_executor
        sid = None
        if type(func) is partial_t:
            f = func.func
            if type(getattr(f, "__self__", None)) is context_t and func.args:
                sid = ids_tt.get(id(getattr(func.args[0], "__code__", None)))
                if sid is None:
                    sid = ids_tt[id(getattr(func.args[0], "__code__", None))] = len(ids_tt) + 1
                    cnt_tt[sid] = itertools.count()
        next(cnt_tt[sid])
        return fut
    return rie, cst
V = {"probe": probelike(), "orig": (orig_rie, orig_cst), "pass": passthru(), "after": after(), "before": before()}
extra = {}
import ccount
V["c0"] = (ccount.Counted(orig_rie, 0, 1), ccount.Counted(orig_cst, 0, 0))
V["c2"] = (ccount.Counted(orig_rie, 2, 1), ccount.Counted(orig_cst, 2, 0))
names = sys.argv[1].split(","); blocks = int(sys.argv[2]); calls = 300
def look(k):
    return k
pt = time.process_time_ns
async def main():
    res = {n: [] for n in names}; cpu = {n: [] for n in names}
    for _ in range(50):
        await asyncio.to_thread(look, 1)
    for b in range(blocks):
        order = names[:]; random.shuffle(order)
        for n in order:
            B.run_in_executor, B.call_soon_threadsafe = V[n]
            c0 = pt(); t0 = time.perf_counter_ns()
            for i in range(calls):
                await asyncio.to_thread(look, i)
            res[n].append(time.perf_counter_ns() - t0); cpu[n].append(pt() - c0)
    B.run_in_executor, B.call_soon_threadsafe = orig_rie, orig_cst
    return res, cpu
res, cpu = asyncio.run(main())
def ci(x, base):
    idx = range(len(base)); bs = []
    for _ in range(1000):
        ii = [random.choice(idx) for _ in idx]
        bs.append(sum(x[i] for i in ii) / sum(base[i] for i in ii))
    bs.sort(); return bs[25], bs[975]
out = []
for n in names[1:]:
    w = sum(res[n]) / sum(res[names[0]]); wl, wh = ci(res[n], res[names[0]])
    c = sum(cpu[n]) / sum(cpu[names[0]]); cl, ch = ci(cpu[n], cpu[names[0]])
    out.append("%s wall %.3f [%.3f %.3f] cpu %.3f [%.3f %.3f]" % (n, w, wl, wh, c, cl, ch))
print("base %.1f us/call | " % (sum(res[names[0]]) / len(res[names[0]]) / calls / 1000) + " | ".join(out))
