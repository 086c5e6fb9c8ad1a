# The counter in C (csrc/counter.c), loaded as the probe loads it, put
# through its cases; TestCounterInC runs it with the built file's path.
# Prints "ok" when every check held; an AssertionError names the one that
# did not.
import contextvars
import functools
import sys
import threading

path = sys.argv[1]
imp = sys.modules["_imp"]
cc = imp.create_dynamic(sys.modules["_frozen_importlib"].ModuleSpec("_ctxlab_ccount", None, origin=path))
imp.exec_dynamic(cc)
assert "_ctxlab_ccount" not in sys.modules, "the counter is in sys.modules"
cc.set_types(functools.partial, contextvars.Context)

CST, RIE, SQL = 0, 1, 2
asked = []  # the resolve calls
sites = {}


def resolve(*args):
    """A site id by the callable's name, as the probe's _site would."""
    asked.append(args)
    f = args[-1]
    while isinstance(f, functools.partial):
        f = f.args[0] if f.args and isinstance(getattr(f.func, "__self__", None), contextvars.Context) else f.func
    return sites.setdefault(getattr(f, "__qualname__", type(f).__name__), len(sites) + 1)


timed_calls = []


class Loop:
    _thread_id = None
    _default_executor = None

    def call_soon_threadsafe(self, callback, *args, context=None):
        """the original's doc"""
        if callback is boom:
            raise ValueError("boom")
        return ("cst", callback, args, context)

    def run_in_executor(self, executor, func, *args):
        return ("rie", func, args)


orig_cst, orig_rie = Loop.call_soon_threadsafe, Loop.run_in_executor


def timed(self, *args, **kwargs):
    timed_calls.append(args)
    return "timed"


Loop.call_soon_threadsafe = cc.Counter(orig_cst, timed, CST, resolve)
Loop.run_in_executor = cc.Counter(orig_rie, timed, RIE, resolve)
cst, rie = Loop.__dict__["call_soon_threadsafe"], Loop.__dict__["run_in_executor"]


def f():
    pass


def g():
    pass


def boom():
    pass


def counts(c):
    return sorted(c.counts())


loop = Loop()
# a function's calls: the result and the keyword pass through; one resolve a key
assert loop.call_soon_threadsafe(f, 1, 2, context="ctx") == ("cst", f, (1, 2), "ctx")
loop.call_soon_threadsafe(f)
loop.call_soon_threadsafe(f)
me = threading.get_ident()
assert counts(cst) == [(1, me, 3)], counts(cst)
assert len(asked) == 1 and asked[0] == (loop, f), asked
# from the loop's own thread: key 0
loop._thread_id = me
loop.call_soon_threadsafe(f)
assert counts(cst) == [(1, 0, 1), (1, me, 3)], counts(cst)
# from another thread: that thread's key
other = []
t = threading.Thread(target=lambda: (loop.call_soon_threadsafe(f), other.append(threading.get_ident())))
t.start()
t.join()
assert (1, other[0], 1) in counts(cst), counts(cst)
# a call that raises is not counted and raises as it would
before = counts(cst)
try:
    loop.call_soon_threadsafe(boom)
    raise AssertionError("no exception")
except ValueError:
    pass
assert counts(cst) == before, counts(cst)
# a builtin's bound methods: one key for every object of the type
asked.clear()
a, b = [], []
loop.call_soon_threadsafe(a.append, 1)
loop.call_soon_threadsafe(b.append, 2)
assert len(asked) == 1, asked
# a callable the table cannot key: resolved every call, counted by site
asked.clear()
p = functools.partial(g)
loop.call_soon_threadsafe(p)
loop.call_soon_threadsafe(p)
assert len(asked) == 2, asked
sid_g = sites["g"]
assert (sid_g, 0, 2) in counts(cst), counts(cst)
# the callback by keyword: the Python wrapper's, which counts it in Python
before = counts(cst)
assert loop.call_soon_threadsafe(callback=f) == "timed" and counts(cst) == before
# in a window: the call is the Python wrapper's, the table untouched
before = counts(cst)
cst.timing = True
assert loop.call_soon_threadsafe(f, 5) == "timed" and timed_calls[-1] == (f, 5), timed_calls
cst.timing = False
assert counts(cst) == before
# run_in_executor: to_thread's shape, partial(Context.run, f), is f's
asked.clear()
ctx = contextvars.copy_context()
loop.run_in_executor(None, functools.partial(ctx.run, f))
loop.run_in_executor(None, functools.partial(ctx.run, f))
loop.run_in_executor(None, g)
assert len(asked) == 2, asked
sid_f = sites["f"]
assert counts(rie) == sorted([(sid_f, -1, 2), (sid_g, -1, 1)]), counts(rie)
# a resolve that raises: the call returns, uncounted
bad = cc.Counter(orig_cst, timed, CST, lambda *a: 1 / 0)
assert bad(loop, f) == ("cst", f, (), None) and bad.counts() == []
# as a method: bound from an instance, itself from the class, the original's names
assert Loop.call_soon_threadsafe is cst
assert cst.__wrapped__ is orig_cst
assert cst.__name__ == "call_soon_threadsafe" and cst.__qualname__ == "Loop.call_soon_threadsafe", cst.__qualname__
assert cst.__doc__ == "the original's doc"
assert loop.call_soon_threadsafe.__self__ is loop
print("ok")
