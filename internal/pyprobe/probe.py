# ctxlab's CPython probe (docs/pyprobe.md): loaded by ctxlab's
# sitecustomize before the program's own code, it times, inside the
# interpreter, every asyncio loop's lag and the hops between threads and
# loops, counts every hop, and sends raw timings and counts to ctxlab over
# an inherited pipe. ctxlab
# builds every histogram, rate and reading from them (internal/pyprobe).
#
# It never prints, never raises into the program and never changes what the
# program computes: its wrappers pass every argument, result and exception
# through. What the program could notice is listed in docs/pyprobe.md.
#
# Frames on the pipe: u32 little-endian length, one type byte, the payload.
# "J": one JSON object with a "kind". "E": int64 events, six to a record:
#   (1, loop, lag_ns, cpu_ns, wall_ns, 0)   a tick of a loop's timer, with
#       its thread's time on a CPU and the wall time since the last tick (in
#       its window: the first tick of a window counts from its opening)
#   (4, loop, runq_ns, wall_ns, 0, 0)   the loop thread's time waiting for a
#       CPU (schedstat) over the wall time since the last such record
#       (about once a second, and when the loop stops)
#   (2, site, hop_ns, caller_ident, same_thread, weight)   a call_soon_threadsafe
#   (3, site, wait_ns, work_ns, back_ns, weight)   an executor / to_thread /
#                                                  aiosqlite call; -1: not known
#   weight: the calls each timed one stands for (the windows, below)
#   (5, site, calls, caller_ident, same_thread, 0)   the site's calls counted
#       since the last such record (every call, timed or not; at each
#       flush): for call_soon_threadsafe, those from one calling thread
#       (caller_ident), or (same_thread 1, caller 0) from the loop's own
#       thread
import os  # os and sys: loaded by every interpreter before site runs
import sys


def _private(name):
    """A module the probe needs, without the import system: the program's
    own when it has imported it, else an instance of the probe's that
    neither sys.modules nor -X importtime shows to the program."""
    m = sys.modules.get(name)
    if m is not None:
        return m
    imp = sys.modules["_imp"]
    if name in sys.builtin_module_names:
        m = imp.create_builtin(sys.modules["_frozen_importlib"].ModuleSpec(name, None, origin="built-in"))
        imp.exec_builtin(m)
    else:
        m = imp.create_dynamic(sys.modules["_frozen_importlib_external"].PathFinder.find_spec(name))
        imp.exec_dynamic(m)
    return m


def _high_fd(fd):
    """fd moved to the first free descriptor from 200 up, closed on exec
    (what fcntl's F_DUPFD_CLOEXEC does, without importing fcntl)."""
    for hi in range(200, 1024):
        try:
            os.fstat(hi)
        except OSError:
            os.dup2(fd, hi, inheritable=False)
            os.close(fd)
            return hi
    os.set_inheritable(fd, False)
    return fd


array = _private("array").array
time = _private("time")

PROTOCOL = 1

T_LAG, T_CST, T_CALL, T_RUNQ, T_COUNT = 1, 2, 3, 4, 5

_pc = time.perf_counter_ns
_tt = time.thread_time_ns
try:
    import _thread

    _get_ident = _thread.get_ident
    _lock = _thread.RLock()
except ImportError:  # pragma: no cover - every CPython 3.8+ has it
    raise

_fd = -1
_on = False
_buf = array("q")
_ext = _buf.extend  # every event is one call of it (on the loop's thread)
_FLUSH_AT = 6 * 8192
_pending = []  # JSON objects to send before the next events
_t0 = 0
_tick_ns = 5_000_000
_tick_s = 0.005
_last_flush = [0]
_self = {"tick": 0, "flush": 0, "load": 0, "report": 0}
_patched = []  # (owner, name, original) to undo in a forked child
_sites = {}  # the last site id given ("n")
# Every wrapped call is counted, in or out of a window: _cnt[site id] is
# the site's counter (itertools.count: one next() a call, which the GIL
# keeps whole), or for call_soon_threadsafe a dict of them by calling
# thread's ident (0: the loop's own thread). _sent: what was last sent of
# each, by (site, key).
_cnt = [None]
_sent = {}
_tally = next  # counts one call; locked in a build without the GIL
# The counter in C (csrc/counter.c), when ctxlab built one for this interpreter:
# its Counters stand in for the wrapped methods and count every call out
# of a window in a table of their own, handing the calls in a window to
# the Python wrappers (which count those in _cnt). _counted adds the two.
_cc = None
_ccs = []  # the Counters in place
_counting = {"in": "python", "why": ""}  # how calls are counted, for the final report
_loops = {}  # id(loop) -> loop id
_ticks = {}  # loop id -> its _Tick while it runs
_free_threaded = False

# The probe observes in windows: while one is open, each running loop's
# lag is timed (its tick, _Tick) and its polls counted, and the calls it
# wraps are timed; between windows the loops run as without the probe, its
# call wrappers only count each call (one next() on a counter: the counts
# are exact), and the probe's waker thread opens the next (_rest). A loop
# that polls fewer than POLLS_PER_S times a second and a program that makes
# fewer wrapped calls a second than the budget are observed all the time.
# Above either, a window stays open for ON_NS (until its next tick) and the
# gap after it is k - 1 times as long on average, at random, k being what
# brings both rates within their budgets; a call timed in a window stands
# for `_weight` (k) calls in the timings' distributions (its count is its
# own). Observing every poll and call cost a hop-bound program 13-16% on
# the VMs measured, the windows 0-2%; counting every call in Python adds
# 2-4% to a program that does nothing but hop, in C nothing measurable
# (docs/pyprobe.md).
_win = False  # the call wrappers time calls (a window is open)
_weight = 1
_budget = 250  # wrapped calls timed a second at most; 0: observe everything
POLLS_PER_S = 2000
ON_NS = 2_000_000
_nwin = [0]  # wrapped calls timed so far
# The call windows, opened and closed by the first running loop's tick.
_W = {"open": True, "start": 0, "n0": 0, "on_ns": 0, "opened": 0, "rng": 1}


_ESC = {i: "\\u%04x" % i for i in range(32)}
_ESC.update({ord('"'): '\\"', ord("\\"): "\\\\"})


def _js(o):
    """JSON for the probe's own records (str, int, float, bool, None, list,
    tuple, dict): the json module is not imported into the program."""
    if o is None:
        return "null"
    if o is True:
        return "true"
    if o is False:
        return "false"
    if isinstance(o, int):
        return str(int(o))
    if isinstance(o, float):
        return repr(o) if o == o and o not in (float("inf"), float("-inf")) else "null"
    if isinstance(o, dict):
        return "{" + ",".join(_js(str(k)) + ":" + _js(v) for k, v in o.items()) + "}"
    if isinstance(o, (list, tuple)):
        return "[" + ",".join(_js(v) for v in o) + "]"
    return '"' + str(o).translate(_ESC) + '"'


def _dumps(obj):
    return _js(obj).encode("utf-8", "backslashreplace")


def _write(data):
    global _fd, _on
    if _fd < 0:
        return
    try:
        mv = memoryview(data)
        while mv:
            n = os.write(_fd, mv)
            mv = mv[n:]
    except OSError:  # ctxlab went away: stop quietly
        _fd, _on = -1, False


def _frame(kind, payload):
    return len(payload).to_bytes(4, "little") + kind + payload


def _flush():
    """Sends the pending JSON objects, then the events taken so far and
    the calls counted since the last flush (read after the events: a
    timed call was counted before its event was made)."""
    t = _tt()
    with _lock:
        n = len(_buf)
        data = _buf[:n].tobytes() if n else b""
        if n:
            del _buf[:n]  # appends made meanwhile stay for the next flush
        counts = _counted()
        if counts:
            data += counts.tobytes()
        pend = _pending[:]
        del _pending[: len(pend)]
        out = b"".join(_frame(b"J", _dumps(o)) for o in pend)
        if data:
            out += _frame(b"E", data)
        if out:
            _write(out)
    _last_flush[0] = _pc()
    _self["flush"] += _tt() - t


def _ext_locked(rec):
    with _lock:
        _buf.extend(rec)


def _tally_locked(c):
    with _lock:
        next(c)


def _counted():
    """The count records (T_COUNT) of the calls counted since the last
    ones were taken (under _lock, which guards the counters' dicts): those
    counted in Python and in C, added by site and calling thread."""
    tot = {}
    for sid in range(1, len(_cnt)):
        e = _cnt[sid]
        for key, c in (e.items() if type(e) is dict else ((-1, e),)):
            tot[sid, key] = int(repr(c)[6:-1])  # "count(N)": read without counting
    for c in _ccs:
        for sid, key, n in c.counts():
            tot[sid, key] = tot.get((sid, key), 0) + n
    out = array("q")
    for (sid, key), n in sorted(tot.items()):
        d = n - _sent.get((sid, key), 0)
        if d > 0:
            _sent[sid, key] = n
            out.extend((T_COUNT, sid, d, max(key, 0), 1 if key == 0 else 0, 0))
    return out


def _counter(sid, key):
    """The counter of call_soon_threadsafe site sid's calls from key (a
    thread's ident; 0: the loop's own thread), made on first use."""
    with _lock:
        d = _cnt[sid]
        c = d.get(key)
        if c is None:
            c = d[key] = _itertools().count()
    return c


def _itertools():
    return _private("itertools")  # asyncio has imported it


# --- names of call sites -------------------------------------------------

_partial_t = None  # functools.partial, once asyncio has imported functools
_context_t = None  # contextvars.Context


def _types():
    global _partial_t, _context_t
    ft, cv = sys.modules.get("functools"), sys.modules.get("contextvars")
    if ft is not None and cv is not None:
        _partial_t, _context_t = ft.partial, cv.Context


def _unwrap(f):
    """The function a callable stands for: partials unwrapped, and
    to_thread's partial(Context.run, func, ...) told apart. Returns
    (function, via_to_thread)."""
    if _partial_t is None:
        _types()
    via = False
    for _ in range(8):
        if _partial_t is None or type(f) is not _partial_t:
            break
        func = f.func
        if type(getattr(func, "__self__", None)) is _context_t and f.args:
            via = True
            f = f.args[0]
        else:
            f = func
    return f, via


def _key(f):
    """What identifies a call site across calls: the function's code (one
    per def or lambda, shared by its closures), else its type and name."""
    c = getattr(f, "__code__", None)
    if c is not None:
        return c
    fn = getattr(f, "__func__", None)
    if fn is not None and getattr(fn, "__code__", None) is not None:
        return fn.__code__
    s = getattr(f, "__self__", None)
    if s is not None and getattr(f, "__name__", None):
        return (type(s), f.__name__)
    return type(f)


def _name(f):
    fn = getattr(f, "__func__", f)
    mod = getattr(fn, "__module__", None)
    if mod is None:
        s = getattr(f, "__self__", None)
        if s is not None:
            mod = type(s).__module__
    qn = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(f).__qualname__
    name = "%s.%s" % (mod, qn) if mod and mod != "builtins" else str(qn)
    code = getattr(fn, "__code__", None)
    where = ""
    if code is not None:
        where = "%s:%d" % (code.co_filename, code.co_firstlineno)
    return name, where


# Call sites by kind, then by _key: the id the events carry.
_by_kind = {k: {} for k in ("call_soon_threadsafe", "to_thread", "run_in_executor", "executor", "aiosqlite")}
# The same sites of a function's code by id(code), the wrappers' look-up:
# hashing a code object hashes its contents (~0.3 µs a call on the VMs
# measured, more when the hop has left it cold), an id is an int. The code
# objects are keys of _by_kind, held there, so their ids are not reused.
_by_id = {k: {} for k in _by_kind}
_code_t = type(_dumps.__code__)


def _builtin_key(f):
    """_key of a builtin's bound method (sqlite3's Connection.execute, a C
    future's set_result), the quick way; a key no site has for anything
    else, which _site then finds the slow way."""
    return type(getattr(f, "__self__", None)), getattr(f, "__name__", None)


def _site(kind, f):
    """The site id of f for kind, registered (and announced) on first sight."""
    cache = _by_kind[kind]
    code = getattr(f, "__code__", None)
    if code is not None:
        s = cache.get(code)
        if s is not None:
            return s
    k = _key(f)
    s = cache.get(k)
    if s is None:
        with _lock:
            s = cache.get(k)
            if s is None:
                s = _next_site(kind)
                name, where = _name(f)
                _pending.append({"kind": "site", "site": s, "site_kind": kind, "name": name, "where": where})
                cache[k] = s
                if type(k) is _code_t:
                    _by_id[kind][id(k)] = s
    return s


def _next_site(kind):
    """A new site id, with its counter (under _lock)."""
    _sites["n"] = n = _sites.get("n", 0) + 1
    _cnt.append({} if kind == "call_soon_threadsafe" else _itertools().count())
    return n


# --- call_soon_threadsafe -----------------------------------------------
#
# The wrappers are in place from the moment the probe hooks asyncio (and
# aiosqlite) until the interpreter exits. Out of a window each only finds
# its call's site (a dict lookup by the function's code) and counts the
# call; in a window it also times it. With the counter in C loaded, a
# Counter in front of each counts the calls out of a window itself and
# hands it only those in one (_in_c). Out of a window the thread-hopping
# ones hand the call on first and count it after, so that the count might
# overlap the woken thread's wake-up instead of preceding it; measured,
# counting cost the same either way (docs/pyprobe.md, eighth session). A
# call that raises is not counted: it made no hop.

def _hopped(t0, tid, sid, same, w, callback, args):
    _ext((T_CST, sid, _pc() - t0, tid, same, w))
    return callback(*args)


def _make_cst(orig):
    sites, ids, cnt, tally, get_ident = _by_kind["call_soon_threadsafe"], _by_id["call_soon_threadsafe"], _cnt, _tally, _get_ident

    def count(self, callback):
        tid = get_ident()
        code = getattr(callback, "__code__", None)
        sid = (ids.get(id(code)) if code is not None else sites.get(_builtin_key(callback))) or _site("call_soon_threadsafe", callback)
        same = tid == self._thread_id
        c = cnt[sid].get(0 if same else tid)
        tally(c if c is not None else _counter(sid, 0 if same else tid))
        return sid, tid, same

    def call_soon_threadsafe(self, callback, *args, context=None):
        if not _win:
            # handed on first, counted after (above)
            if context is None:  # no keyword to pass: the call costs less
                h = orig(self, callback, *args)
            else:
                h = orig(self, callback, *args, context=context)
            count(self, callback)
            return h
        sid, tid, same = count(self, callback)
        if self._debug:
            self._check_callback(callback, "call_soon_threadsafe")
        _nwin[0] += 1
        return orig(self, _hopped, _pc(), tid, sid, same, _weight, callback, args, context=context)

    call_soon_threadsafe.__wrapped__ = orig
    call_soon_threadsafe.__doc__ = orig.__doc__
    return call_soon_threadsafe


# --- run_in_executor, to_thread, aiosqlite -------------------------------

class _Call:
    """One call handed to a thread: when it was made (t0), when the thread
    started (ts) and ended (te) the function; 0 until then."""

    __slots__ = ("t0", "ts", "te", "sid", "w")

    def resumed(self, fut):
        t = _pc()
        ts, te = self.ts, self.te
        if ts == 0:
            _ext((T_CALL, self.sid, -1, -1, -1, self.w))  # cancelled before it started
        elif te == 0:
            _ext((T_CALL, self.sid, ts - self.t0, -1, -1, self.w))  # cancelled while it ran
        else:
            _ext((T_CALL, self.sid, ts - self.t0, te - ts, t - te, self.w))


class _Total:
    __slots__ = ("t0", "sid", "w")

    def resumed(self, fut):
        _ext((T_CALL, self.sid, -1, -1, _pc() - self.t0, self.w))


def _in_worker(c, func, *args, **kwargs):
    c.ts = _pc()
    try:
        return func(*args, **kwargs)
    finally:
        c.te = _pc()


_tpe = [None]  # concurrent.futures.ThreadPoolExecutor, once imported


def _thread_pool(ex):
    """ex is a thread pool (a ThreadPoolExecutor or a subclass)."""
    tpe = _tpe[0]
    if tpe is None:
        m = sys.modules.get("concurrent.futures.thread")
        tpe = _tpe[0] = getattr(m, "ThreadPoolExecutor", None) if m is not None else None
    return tpe is not None and isinstance(ex, tpe)


def _pool_site(func):
    """The site of a function handed to a thread pool, the slow way: to_thread's
    partial(Context.run, f) is f's to_thread site, a partial its function's."""
    inner, via = _unwrap(func)
    return _site("to_thread" if via else "run_in_executor", inner)


def _rie_site(loop, executor, func, to_thread=_by_id["to_thread"], in_executor=_by_id["run_in_executor"]):
    """func's site in a thread pool (None makes asyncio's default one), by
    the code of the function the thread runs (to_thread's shape first);
    None for another executor."""
    ex = executor if executor is not None else loop._default_executor
    if ex is not None and type(ex) is not _tpe[0] and not _thread_pool(ex):
        return None
    if type(func) is _partial_t:
        f = func.func
        if type(getattr(f, "__self__", None)) is _context_t and func.args:
            return to_thread.get(id(getattr(func.args[0], "__code__", None))) or _pool_site(func)
        return in_executor.get(id(getattr(f, "__code__", None))) or _pool_site(func)
    return in_executor.get(id(getattr(func, "__code__", None))) or _pool_site(func)


def _rie_resolve(loop, executor, func):
    """The site a run_in_executor call is counted under (the counter in
    C asks on a key's first call)."""
    sid = _rie_site(loop, executor, func)
    return sid if sid is not None else _site("executor", _unwrap(func)[0])


def _cst_resolve(loop, callback):
    return _site("call_soon_threadsafe", callback)


def _sql_resolve(conn, fn):
    return _site("aiosqlite", fn)


def _make_rie(orig):
    cnt, tally, site = _cnt, _tally, _rie_site

    def run_in_executor(self, executor, func, *args):
        if not _win:
            # handed on first, counted after (above); the default
            # executor exists once the original has run
            fut = orig(self, executor, func, *args)
            sid = site(self, executor, func)
            tally(cnt[sid if sid is not None else _site("executor", _unwrap(func)[0])])
            return fut
        sid = site(self, executor, func)
        if sid is None:
            return _to_executor(orig, self, executor, func, args)
        tally(cnt[sid])
        if self._debug:
            self._check_callback(func, "run_in_executor")
        _nwin[0] += 1
        # timed where it runs: in a thread of this process
        c = _Call()
        c.sid, c.ts, c.te, c.w = sid, 0, 0, _weight
        c.t0 = _pc()
        fut = orig(self, executor, _in_worker, c, func, *args)
        fut.add_done_callback(c.resumed)
        return fut

    run_in_executor.__wrapped__ = orig
    run_in_executor.__doc__ = orig.__doc__
    return run_in_executor


def _to_executor(orig, loop, executor, func, args):
    """A call to another executor (a process pool, which may pickle the
    function), in a window: handed on untouched, counted, and the whole
    call timed."""
    sid = _site("executor", _unwrap(func)[0])
    _tally(_cnt[sid])
    if loop._debug:
        loop._check_callback(func, "run_in_executor")
    _nwin[0] += 1
    c = _Total()
    c.sid, c.w = sid, _weight
    c.t0 = _pc()
    fut = orig(loop, executor, func, *args)
    fut.add_done_callback(c.resumed)
    return fut


def _make_aiosqlite_execute(orig):
    """Connection._execute, a coroutine function, wrapped by a plain one
    that returns the original's coroutine out of a window (no frame of the
    probe's in the await), and in one a coroutine that times the call."""
    sites, ids, cnt, tally = _by_kind["aiosqlite"], _by_id["aiosqlite"], _cnt, _tally

    def _execute(self, fn, *args, **kwargs):
        code = getattr(fn, "__code__", None)  # fn is mostly a builtin's method (Connection.execute)
        sid = (ids.get(id(code)) if code is not None else sites.get(_builtin_key(fn))) or _site("aiosqlite", fn)
        tally(cnt[sid])
        if not _win:
            return orig(self, fn, *args, **kwargs)
        _nwin[0] += 1
        return _timed_execute(orig, self, sid, fn, args, kwargs)

    _execute.__wrapped__ = orig
    _execute.__doc__ = orig.__doc__
    return _execute


async def _timed_execute(orig, conn, sid, fn, args, kwargs):
    c = _Call()
    c.sid, c.ts, c.te, c.w = sid, 0, 0, _weight
    c.t0 = _pc()
    try:
        return await orig(conn, _in_worker, c, fn, *args, **kwargs)
    finally:
        c.resumed(None)


# --- every asyncio loop's lag ---------------------------------------------

def _schedstat_fd():
    """This thread's /proc schedstat (time on a CPU, time waiting for one),
    open on a high descriptor the program will not notice; -1 without."""
    try:
        fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return -1
    try:
        return _high_fd(fd)
    except OSError:
        return fd


class _Tick:
    """A loop's periodic timer, while the loop is observed (the windows,
    above): its lateness is the loop's lag. When it is due, the loop runs
    it as soon as it can, and it schedules a callback; the tick is taken
    when the loop runs that callback — where a coroutine sleeping on the
    timer would resume — and the next is armed from then, as `await
    asyncio.sleep(tick)` in a loop would be. Each tick also takes its
    thread's CPU time since the last (thread_time_ns, which keeps the GIL:
    a tick must not hand the GIL to a busy thread, as a read of /proc
    would); about once a second, and when the loop stops, the thread's
    run-queue wait since the last such reading (schedstat). A late tick
    after the thread ran tells handlers' CPU work, one after it slept (a
    wait for the GIL) tells contention.

    While the loop is observed, its selector's class is a subclass whose
    select counts the loop's polls (_poller): with the timed calls, they
    tell how busy the loop is, and so how long its windows and the gaps
    between them are. Between windows the selector's class is its own
    and no timer of the probe's is in the loop's schedule. (Taking the
    tick in the wrapped poll instead of from a timer saved a timer in the
    schedule, but read the lag beside a busy thread at 0.65-0.8 of the
    program's own 1 ms timer: the timer in the schedule is what a sleeping
    coroutine has, and changes when the loop wakes.)"""

    __slots__ = ("loop", "lid", "sel", "cls", "sub", "due", "h", "ctx",
                 "c0", "w0", "q0", "qw0", "fd", "n", "stopped",
                 "np", "np0", "nc0", "win0", "until", "k", "resting", "wake_at", "late", "observed", "t0")

    def __init__(self, loop, lid, sel):
        self.loop, self.lid, self.sel = loop, lid, sel
        self.stopped, self.n = False, 0
        # one empty context for the tick's timers: call_at does not copy
        # the program's context for each (the tick reads none)
        self.ctx = sys.modules["contextvars"].Context()
        self.np, self.np0, self.k, self.resting, self.wake_at, self.late, self.observed = 0, 0, 1, False, 0, 0, 0
        self.fd = _schedstat_fd()
        self.c0 = _tt()
        self.w0 = self.t0 = _pc()
        self.q0, self.qw0 = self.runq(), self.w0
        self.due = self.w0 + _tick_ns
        self.win0, self.nc0, self.until = self.w0, _nwin[0], self.w0 + 10 * ON_NS  # the first look at the rates
        self.cls, self.sub, self.h = type(sel), None, None

    def arm(self):
        """Puts the poll wrapper in and the first tick's timer in the loop.
        The poll is wrapped by a subclass of the selector's own class, put
        in as the selector's class while the loop runs: the loop's
        `self._selector.select` stays a plain method lookup (an instance
        attribute in its way would cost the lookup on every poll)."""
        self.sel.__class__ = self.make_sub()
        self.h = self.loop.call_later(_tick_s, self.fire, context=self.ctx)

    def make_sub(self):
        cls = self.cls
        if self.sub is None:
            self.sub = type(cls.__name__, (cls,), {"select": _poller(self, cls.select), "__slots__": (),
                                                   "__module__": cls.__module__, "__qualname__": cls.__qualname__})
        return self.sub

    def fire(self):
        # The timer is due: the loop runs this as soon as it can; the tick
        # is taken when the loop next runs a callback this one schedules —
        # when a coroutine sleeping on the timer would resume — and the
        # next is armed from then, as `await asyncio.sleep(tick)` in a
        # loop would be.
        if self.stopped or not _on:
            self.h = None
            return
        self.h = self.loop.call_soon(self.woke, context=self.ctx)

    def woke(self):
        now = _pc()
        self.h = None
        if self.stopped or not _on:
            return
        self.take(now)
        if not self.resting:
            self.h = self.loop.call_later(_tick_s, self.fire, context=self.ctx)

    def take(self, now):
        """Takes the tick that fell due, now."""
        self.n += 1
        timed = self.n % 16 == 0  # its own cost, timed on one tick in 16
        c = _tt()
        _ext((T_LAG, self.lid, now - self.due, c - self.c0, now - self.w0, 0))
        self.c0, self.w0 = c, now
        self.due = now + _tick_ns
        if now >= self.until:
            self.window(now)
        if timed:
            _self["tick"] += 16 * (_tt() - c)
        if now - self.qw0 > 1_000_000_000:  # each loop's own second, whoever flushes
            t = _tt()
            self.segment(now)
            _self["tick"] += _tt() - t
        if now - _last_flush[0] > 1_000_000_000 or len(_buf) >= _FLUSH_AT:
            _flush()

    def window(self, now):
        """The window has lasted its time. Its rates of polls and (for the
        first running loop) of timed calls give the next window's k; the
        gap after it is k - 1 times as long as it was, at random, for the
        k its calls were timed with: so every moment is in a window with
        probability 1/k, whatever the window held, and a call timed in it
        stands for k calls."""
        span = now - self.win0
        driver = _driver() is self
        k = 1
        if _budget > 0 and span > 0:
            k = int((self.np - self.np0) * 1e9 / span / POLLS_PER_S) + 1
            if driver:
                k = max(k, int((_nwin[0] - self.nc0) * 1e9 / span / _budget) + 1)
            k = min(k, 1000)
        used, self.k = self.k, k
        self.observed += span
        if used == 1:  # observed whole: the next window at once, for the new k
            self.win0, self.np0, self.nc0 = now, self.np, _nwin[0]
            self.until = now + (100_000_000 if k == 1 else ON_NS)  # at k = 1, look again in 100 ms
            if driver:
                _open_calls(now, k)
            return
        self.sel.__class__ = self.cls
        if driver:
            _close_calls(now)
        _W["rng"] = r = (_W["rng"] * 1103515245 + 12345) & 0x7FFFFFFF
        gap = span * (used - 1) * (0.5 + r / 0x80000000)
        # the waker's thread takes the GIL back some time after it wakes:
        # it is asked to wake that much sooner, so gaps last as drawn
        _rest(self, now + max(int(gap) - self.late, 0), now + int(gap))

    def resume(self, now):
        """The first poll after the waker put the wrapper back: the next
        window opens."""
        self.resting = False
        self.late += (now - self.wake_at - self.late) // 4  # how late the window opens, on average
        self.c0, self.w0, self.due = _tt(), now, now + _tick_ns
        self.h = self.loop.call_later(_tick_s, self.fire, context=self.ctx)
        self.win0, self.np0, self.nc0, self.until = now, self.np, _nwin[0], now + ON_NS
        if _driver() is self:
            _open_calls(now, self.k)

    def runq(self):
        """The thread's run-queue wait so far (ns), or -1 without schedstat."""
        if self.fd >= 0:
            try:
                return int(os.pread(self.fd, 96, 0).split()[1])
            except (OSError, ValueError, IndexError):
                self.close()
        return -1

    def segment(self, now):
        """Sends the run-queue wait since the last reading, with its wall time."""
        q = self.runq()
        if q >= 0 and self.q0 >= 0:
            _ext((T_RUNQ, self.lid, q - self.q0, now - self.qw0, 0, 0))
        self.q0, self.qw0 = q, now

    def close(self):
        fd, self.fd = self.fd, -1
        if fd >= 0:
            try:
                os.close(fd)
            except OSError:
                pass

    def stop(self):
        self.stopped = True
        sel = self.sel
        if type(sel) is self.sub:
            sel.__class__ = self.cls
        _waker["rest"].pop(self.lid, None)
        h, self.h = self.h, None
        if h is not None:
            h.cancel()
        now = _pc()
        if not self.resting:  # it stops in a window
            self.observed += now - self.win0
        if self is _driver():
            _close_calls(now)
        _pending.append({"kind": "loop-end", "loop": self.lid, "observed_ns": self.observed, "running_ns": now - self.t0})
        self.segment(now)
        self.close()
        self.loop = self.sel = None  # the poll wrapper's class lives on until the garbage collector's turn; the loop need not


def _poller(t, real):
    """The select of a loop's selector while it is observed, for tick t:
    it counts the loop's polls, and the first poll of a window opens it.
    real is the selector class's own."""

    def select(sel, timeout=None):
        t.np += 1
        if t.resting:  # the first poll of a window
            if t.stopped or not _on or _aside["keys"]:
                sel.__class__ = t.cls
                return real(sel, timeout)
            t.resume(_pc())
            if timeout is None or timeout > _tick_s:  # the tick's timer, just put in the schedule
                timeout = _tick_s
        return real(sel, timeout)

    select.__wrapped__ = real
    select.__doc__ = real.__doc__
    return select


# The waker: a thread of the probe's own (started the first time a loop
# rests between windows) that sleeps until a resting loop's next window and
# then puts its poll wrapper back; the loop's next poll opens the window. A
# timer in the loop would do the same, but a loop with a timer pending
# sleeps with a timeout, which costs the kernel more on every sleep than
# the windows save.
_waker = {"rest": {}, "lock": None}


def _rest(t, wake_ns, planned_ns):
    """Rests tick t (its selector back to its own class) until wake_ns."""
    t.resting, t.wake_at = True, planned_ns
    _waker["rest"][t.lid] = (wake_ns, t)
    lock = _waker["lock"]
    if lock is None:
        lock = _waker["lock"] = _thread.allocate_lock()
        lock.acquire()
        _thread.start_new_thread(_wake, (lock,))
    else:
        try:
            lock.release()  # it may be asleep until a later wake
        except RuntimeError:
            pass


def _wake(lock):
    _pending.append({"kind": "thread", "ident": _get_ident(), "native_id": _native_id(), "name": "pyprobe-waker", "daemon": True})
    rest = _waker["rest"]
    while _on:
        now = _pc()
        nxt = 0
        for lid, (at, t) in list(rest.items()):
            if at <= now:
                rest.pop(lid, None)
                if not t.stopped and _on and not _aside["keys"]:
                    t.sel.__class__ = t.sub
            elif nxt == 0 or at < nxt:
                nxt = at
        if nxt:
            lock.acquire(True, (nxt - now) / 1e9)
        else:
            lock.acquire()


def _driver():
    """The tick that opens and closes the call windows: the first loop's
    that runs."""
    for lid in sorted(_ticks):
        return _ticks[lid]
    return None


def _open_calls(now, k):
    """Opens a call window (or keeps it open), a timed call standing for k."""
    global _weight
    w = _W
    _weight = k
    if _aside["keys"]:  # stepped aside (the program's profiler): no window
        return
    if not w["open"]:
        w["open"], w["start"] = True, now
        w["opened"] += 1
        _swap(True)


def _close_calls(now):
    w = _W
    if w["open"]:
        w["open"] = False
        w["on_ns"] += now - w["start"]
        _swap(False)


def _swap(on):
    """Has the call wrappers time calls (on), or only count them."""
    global _win
    _win = _on if on else False
    for c in _ccs:
        c.timing = _win


def _selector(loop):
    """The loop's selector if the probe can count its polls (asyncio's own
    selector loops, whose select the program did not replace); None for
    any other (the note says so)."""
    sel = getattr(loop, "_selector", None)
    d = getattr(sel, "__dict__", None)
    if sel is None or d is None or "select" in d or not callable(getattr(type(sel), "select", None)):
        return None
    return sel


def _loop_id(loop):
    lid = _loops.get(id(loop))
    if lid is None:
        with _lock:
            lid = len(_loops) + 1
            _loops[id(loop)] = lid
            _pending.append({"kind": "loop", "loop": lid, "ident": _get_ident(), "class": type(loop).__module__ + "." + type(loop).__qualname__})
    return lid


def _make_run_forever(orig):
    def run_forever(self):
        if not _on:
            return orig(self)
        t = None
        try:
            lid = _loop_id(self)
            sel = _selector(self)
            if sel is not None:
                t = _Tick(self, lid, sel)
            else:
                _note("the lag of loop %d (%s) is not measured: it has no selector the probe can time" % (lid, type(self).__qualname__))
        except Exception as e:
            t = None
            _note("the lag of this loop is not measured: %s: %s" % (type(e).__name__, e))
        if t is not None:
            _ticks[t.lid] = t
            if _aside["keys"]:  # the program's profiler is set: the tick rests until the probe comes back
                _tick_aside(t, t.t0)
            else:
                t.arm()
                if _driver() is t:  # a new first loop: calls are timed until its first look at the rates
                    _open_calls(t.t0, 1)
        try:
            return orig(self)
        finally:
            if t is not None:
                t.stop()
                _ticks.pop(t.lid, None)

    run_forever.__wrapped__ = orig
    run_forever.__doc__ = orig.__doc__
    return run_forever


# --- threads ----------------------------------------------------------------

def _thread_started(th):
    _pending.append({"kind": "thread", "ident": _get_ident(), "native_id": _native_id(), "name": _thread_name(th), "daemon": bool(getattr(th, "_daemonic", False))})


def _thread_ended(th):
    if _aside["keys"]:
        ident = _get_ident()
        _set_aside((ident, "p"), False)
        _set_aside((ident, "t"), False)
    _pending.append({"kind": "thread-end", "ident": _get_ident(), "native_id": _native_id(), "name": _thread_name(th)})


def _thread_name(th):
    # the attribute, not the property: a profiler would see the property's frame
    return str(th.__dict__.get("_name", ""))


def _native_id():
    try:
        return _thread.get_native_id()
    except AttributeError:
        return 0


def _make_bootstrap(orig):
    def _bootstrap_inner(self):
        if _on:
            try:
                _thread_started(self)
            except Exception:
                pass
        try:
            return orig(self)
        finally:
            if _on:
                try:
                    _thread_ended(self)
                except Exception:
                    pass

    _bootstrap_inner.__wrapped__ = orig
    return _bootstrap_inner


# --- patching at import time ------------------------------------------------

def _patch(owner, name, wrapper, kind=None, resolve=None):
    """owner.name wrapped; a call wrapper (kind, resolve: counter.c's) behind
    a Counter when the counter in C is loaded."""
    orig = owner.__dict__[name]
    _patched.append((owner, name, orig))
    w = wrapper(orig)
    if kind is not None:
        w = _in_c(orig, w, kind, resolve)
        if _cc is not None:
            _ccs.append(w)
    setattr(owner, name, w)


def _in_c(orig, py, kind, resolve):
    """py, the Python wrapper of orig, behind a Counter when the counter in
    C is loaded: out of a window it calls orig and counts the call itself
    (resolve names a key's site on its first call), in one it hands the
    call to py. py itself without it."""
    if _cc is None:
        return py
    c = _cc.Counter(orig, py, kind, resolve)
    c.timing = _win
    return c


def _load_counter(here):
    """The counter in C that ctxlab built for this interpreter (counter-
    and its extension suffix, in the probe's directory), made from a spec
    without the import system: no sys.modules entry, nothing for -X
    importtime. Sets _cc and says in _counting how calls are counted."""
    global _cc
    if _free_threaded:
        _counting["why"] = "a free-threaded build (its table would need locks of its own)"
        return
    imp = sys.modules["_imp"]
    path = os.path.join(here, "counter-" + imp.extension_suffixes()[0].lstrip("."))
    if not os.path.exists(path):
        return  # ctxlab says why it built none
    try:
        m = imp.create_dynamic(sys.modules["_frozen_importlib"].ModuleSpec("_ctxlab_ccount", None, origin=path))
        imp.exec_dynamic(m)
    except Exception as e:
        _counting["why"] = "the counter in C did not load: %s: %s" % (type(e).__name__, e)
        return
    _cc = m
    _counting["in"] = "c"


def _patch_threading(m):
    _patch(m.Thread, "_bootstrap_inner", _make_bootstrap)


def _patch_base_events(m):
    _types()  # asyncio has imported functools and contextvars by now
    L = m.BaseEventLoop
    _patch(L, "run_forever", _make_run_forever)
    if _cc is not None and _partial_t is not None:
        _cc.set_types(_partial_t, _context_t)
    _patch(L, "call_soon_threadsafe", _make_cst, 0, _cst_resolve)
    _patch(L, "run_in_executor", _make_rie, 1, _rie_resolve)


def _patch_aiosqlite(m):
    C = getattr(m, "Connection", None)
    if C is not None and "_execute" in C.__dict__:
        _patch(C, "_execute", _make_aiosqlite_execute, 2, _sql_resolve)
        _pending.append({"kind": "library", "name": "aiosqlite", "version": str(getattr(sys.modules.get("aiosqlite"), "__version__", ""))})


def _hook_atexit(m):
    """Until 3.10 each atexit module made runs its own handlers and takes
    the interpreter's exit from the one before (asyncio imports logging,
    which imports atexit): the probe's report goes on the program's."""
    if m is not _exit_mod[0]:
        m.register(_report)


_exit_mod = [None]  # the atexit the probe registered its report with
_HOOKS = {"threading": _patch_threading, "asyncio.base_events": _patch_base_events, "aiosqlite.core": _patch_aiosqlite}
if sys.version_info < (3, 10):
    _HOOKS["atexit"] = _hook_atexit


class _Loader:
    """Runs the real loader, then patches the module; the module keeps
    the real loader as its __loader__."""

    def __init__(self, real, hook):
        self.real, self.hook = real, hook

    def create_module(self, spec):
        cm = getattr(self.real, "create_module", None)
        return cm(spec) if cm is not None else None

    def exec_module(self, module):
        try:
            self.real.exec_module(module)
        finally:
            try:
                module.__loader__ = self.real
                if getattr(module, "__spec__", None) is not None:
                    module.__spec__.loader = self.real
            except Exception:
                pass
        if _on:
            try:
                self.hook(module)
            except Exception as e:
                _note("could not hook %s: %s: %s" % (module.__name__, type(e).__name__, e))

    def __getattr__(self, name):
        return getattr(self.real, name)


class _Finder:
    """Finds the modules the probe hooks with the other finders and wraps
    their loaders; every other import passes by (None)."""

    def find_spec(self, name, path=None, target=None):
        hook = _HOOKS.get(name)
        if hook is None or not _on:
            return None
        for f in sys.meta_path:
            if f is self:
                continue
            find = getattr(f, "find_spec", None)
            if find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _Loader(spec.loader, hook)
        return spec


def _note(text):
    _pending.append({"kind": "note", "text": text})


# --- the program's own profiler or tracer ------------------------------------
#
# sys.setprofile and sys.settrace (which threading's calls in each new
# thread) are replaced by stand-ins that give the program's function a
# proxy: it hands the function every event but those of the probe's own
# frames (the wrappers, the stand-ins; what the wrappers pass on, the
# originals, is the program's and is handed on), and for the stand-ins the
# c_call and c_return the builtin would have made. sys.getprofile and
# sys.gettrace give back the program's function. While any thread has one
# set, the probe steps aside: no tick, no poll wrapper, no window (so no
# timer or callback of the probe's runs in the program's loops for it to
# see); the call wrappers go on counting, so counts stay whole. The note
# says for how long.

_hiding = False  # the probe's own work at exit: no event of it is handed on
_aside = {"keys": set(), "since": 0, "ns": 0, "times": 0}
_real = {}  # sys's own functions, by name
_fname = _high_fd.__code__.co_filename  # the probe's frames: their code's file (one string object)


def _proxy_profile(f):
    synth = _synth

    def profile(frame, event, arg):
        if frame.f_code.co_filename is not _fname:
            if not _hiding:
                f(frame, event, arg)
            return
        s = synth.get(frame.f_code)  # a stand-in: the builtin's events, as without the probe
        if s is not None:
            if event == "call":
                f(frame.f_back, "c_call", s[0])
            elif event == "return" and (s[1] is True or (s[1] and _was_profiled.pop(_get_ident(), False))):
                f(frame.f_back, "c_return", s[0])

    return profile


def _proxy_trace(f):
    def trace(frame, event, arg):
        if frame.f_code.co_filename is _fname or _hiding:
            return None
        return f(frame, event, arg)

    return trace


def _target(p):
    """The program's function behind a proxy (p itself when it is not one)."""
    code = getattr(p, "__code__", None)
    if code is _proxy_profile_code or code is _proxy_trace_code:
        return p.__closure__[code.co_freevars.index("f")].cell_contents
    return p


def _set_aside(key, on):
    keys = _aside["keys"]
    was = bool(keys)
    if on:
        keys.add(key)
    else:
        keys.discard(key)
    if bool(keys) != was:
        (_go_aside if keys else _come_back)(_pc())


def _go_aside(now):
    _aside["since"] = now
    _aside["times"] += 1
    _close_calls(now)
    for t in list(_ticks.values()):
        _tick_aside(t, now)


def _tick_aside(t, now):
    """Tick t rests until the probe comes back: no timer, no poll wrapper."""
    if t.stopped:
        return
    _waker["rest"].pop(t.lid, None)
    h, t.h = t.h, None
    if h is not None:
        h.cancel()
    if not t.resting:
        t.observed += now - t.win0
    t.resting, t.wake_at = True, now
    if type(t.sel) is t.sub:
        t.sel.__class__ = t.cls


def _come_back(now):
    _aside["ns"] += now - _aside["since"]
    for t in list(_ticks.values()):
        if not t.stopped:
            t.make_sub()
            _rest(t, now, now)  # the waker puts the poll wrapper back; the next poll opens a window


def _aside_note(now):
    a = _aside
    if a["times"]:
        ns = a["ns"] + (now - a["since"] if a["keys"] else 0)
        _note("the probe stepped aside for %.3f s (%d time%s) while the program had its own profiler or tracer set "
              "(sys.setprofile, sys.settrace, or threading's): no loop lag and no timed call then; every call was still counted"
              % (ns / 1e9, a["times"], "" if a["times"] == 1 else "s"))


def _make_set(name, proxy, key, every_thread=False):
    real = _real[name]

    def stand_in(function):
        k = (0 if every_thread else _get_ident(), key)
        if key == "p":
            _was_profiled[_get_ident()] = any(x[1] == "p" for x in _aside["keys"])
        if function is not None and callable(function):
            _set_aside(k, True)
            return real(proxy(_target(function)))
        r = real(function)  # None, or what the builtin refuses as it would
        _set_aside(k, False)
        return r

    return _named(stand_in, name, real)


def _make_get(name):
    real = _real[name]

    def stand_in():
        return _target(real())

    return _named(stand_in, name, real)


def _named(f, name, real):
    """f as name, with a code object of its own (_synth tells them apart)."""
    f.__code__ = f.__code__.replace(co_name=name)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = real.__doc__
    return f


_was_profiled = {}  # thread ident -> some thread had a profiler when it last called setprofile
_synth = {}  # a stand-in's code -> (the builtin it stands for, whether its c_return is seen)
_proxy_profile_code = _proxy_profile(None).__code__
_proxy_trace_code = _proxy_trace(None).__code__


def _stand_in():
    """Puts the stand-ins in sys (at start)."""
    for name, make in (("setprofile", lambda: _make_set("setprofile", _proxy_profile, "p")),
                       ("settrace", lambda: _make_set("settrace", _proxy_trace, "t")),
                       # threading.setprofile_all_threads and settrace_all_threads (3.12)
                       ("_setprofileallthreads", lambda: _make_set("_setprofileallthreads", _proxy_profile, "p", True)),
                       ("_settraceallthreads", lambda: _make_set("_settraceallthreads", _proxy_trace, "t", True)),
                       ("getprofile", lambda: _make_get("getprofile")),
                       ("gettrace", lambda: _make_get("gettrace"))):
        real = getattr(sys, name, None)
        if real is None:
            continue
        _real[name] = real
        f = make()
        # Whether a profiler sees the builtin's c_return: always but after
        # setprofile, which until 3.12 leaves none; from 3.12 (sys.monitoring
        # underneath) it leaves one when some thread was profiled already.
        ret = True if name not in ("setprofile", "_setprofileallthreads") else "if profiled" if sys.version_info >= (3, 12) else False
        _synth[f.__code__] = (real, ret)
        setattr(sys, name, f)


def _unstand():
    for name, real in _real.items():
        setattr(sys, name, real)


# --- fork, exit ---------------------------------------------------------------

def _forked():
    """A forked child is not probed: the pipe is its parent's."""
    global _fd, _on, _win
    _on = _win = False
    fd, _fd = _fd, -1
    if fd >= 0:
        try:
            os.close(fd)
        except OSError:
            pass
    del _buf[:]
    del _pending[:]
    for owner, name, orig in reversed(_patched):
        try:
            setattr(owner, name, orig)
        except Exception:
            pass
    for t in list(_ticks.values()):  # its loops' selectors as they were; no waker here
        t.stopped = True
        try:
            if type(t.sel) is t.sub:
                t.sel.__class__ = t.cls
        except Exception:
            pass
    _waker["rest"].clear()
    _waker["lock"] = None
    try:
        sys.meta_path.remove(_finder)
    except ValueError:
        pass
    _unstand()


def _calibrate(n=300):
    """The wrappers' own cost per call, timed on stand-ins: the original
    replaced by a function that only runs what it is given; each in a
    window (counted and timed) and out of one (counted)."""
    scratch = array("q")
    global _ext, _win
    saved, saved_win, saved_n = _ext, _win, _nwin[0]
    _ext, _win = scratch.extend, True
    out = {}
    np, n0 = len(_pending), _sites.get("n", 0)
    keys = {k: set(d) for k, d in _by_kind.items()}
    try:
        def noop(*a):
            return None

        class Self:
            _debug = False
            _thread_id = None
            _default_executor = None

        s = Self()

        def plain_cst(self, cb, *args, context=None):
            cb(*args)

        w = _in_c(plain_cst, _make_cst(plain_cst), 0, _cst_resolve)
        out["cst_ns"], out["cst_count_ns"] = _per_call_both(w, lambda: w(s, noop), lambda: plain_cst(s, noop), n)

        class Fut:
            __slots__ = ()

            def add_done_callback(self, cb):
                cb(self)

        fut = Fut()

        def plain_rie(self, ex, func, *args):
            func(*args)
            return fut

        w2 = _in_c(plain_rie, _make_rie(plain_rie), 1, _rie_resolve)
        # to_thread's shape, partial(Context.run, func), the dearer path
        # (an executor call of a plain function costs a little less)
        ft, cv = sys.modules.get("functools"), sys.modules.get("contextvars")
        call = noop
        if ft is not None and cv is not None:
            call = ft.partial(cv.Context().run, noop)
        out["call_ns"], out["call_count_ns"] = _per_call_both(w2, lambda: w2(s, None, call), lambda: plain_rie(s, None, call), n)
    finally:
        _ext, _win, _nwin[0] = saved, saved_win, saved_n
        del _pending[np:]  # the stand-ins' sites are not the program's
        _sites["n"] = n0
        del _cnt[n0 + 1:]
        for kind, d in _by_kind.items():
            for k in [k for k in d if k not in keys[kind]]:
                del d[k]
    return out


def _per_call_both(w, f, base, n):
    """_per_call in a window, then out of one (w: the wrapper f calls)."""
    global _win
    _win = True
    if _cc is not None:
        w.timing = True
    timed = _per_call(f, base, n)
    _win = False
    if _cc is not None:
        w.timing = False
    return timed, _per_call(f, base, n)


def _per_call(f, base, n):
    """The least extra CPU time per call of f over base, of five rounds."""
    best = None
    for _ in range(5):
        t = _tt()
        for _ in range(n):
            f()
        a = _tt() - t
        t = _tt()
        for _ in range(n):
            base()
        b = _tt() - t
        d = max(a - b, 0) / n
        best = d if best is None else min(best, d)
    return best


def _threads_now():
    th = sys.modules.get("threading")
    out = []
    if th is None:
        return out
    try:
        for t in th.enumerate():
            out.append({"ident": t.ident or 0, "native_id": getattr(t, "native_id", 0) or 0, "name": str(t.name)})
    except Exception:
        pass
    return out


def _report():
    """The final frame, at exit (atexit: after the program's own handlers
    and after threading joined its threads)."""
    global _on, _win, _hiding
    if not _on or _fd < 0:
        return
    _hiding = True  # a profiler still set at exit sees nothing of this
    t = _tt()
    try:
        _aside_note(_pc())
        cal = _calibrate() if _sites.get("n") else {}
        _win = False
        tm = os.times()
        rep = {"kind": "final", "pid": os.getpid(), "wall_ns": _pc() - _t0,
               "cpu_ns": int((tm.user + tm.system) * 1e9), "switch_interval_s": sys.getswitchinterval(),
               "gil_enabled": _gil_enabled(), "threads": _threads_now(),
               "self_ns": dict(_self), "calibration": cal, "executable": sys.executable, "counter": dict(_counting),
               "timing": {"budget_per_s": _budget, "polls_per_s": POLLS_PER_S, "timed": _nwin[0], "windows": _W["opened"],
                          "window_ns": ON_NS, "open_ns": _W["on_ns"] + (_pc() - _W["start"] if _W["open"] else 0)},
               "argv": [str(a) for a in sys.argv]}
        _flush()
        _on = False
        rep["self_ns"]["report"] = _tt() - t
        _write(_frame(b"J", _dumps(rep)))
    except Exception as e:
        try:
            _write(_frame(b"J", _dumps({"kind": "note", "text": "the probe's final report failed: %s: %s" % (type(e).__name__, e)})))
        except Exception:
            pass
    finally:
        _on = False


def _gil_enabled():
    f = getattr(sys, "_is_gil_enabled", None)
    if f is None:
        return True
    try:
        return bool(f())
    except Exception:
        return True


_finder = _Finder()


def start(here):
    """Starts the probe: called once by ctxlab's sitecustomize."""
    global _fd, _on, _win, _t0, _tick_ns, _tick_s, _ext, _free_threaded, _budget, _tally
    _t0 = _pc()
    c0 = _tt()
    spec = os.environ.get("CTXLAB_PYPROBE", "")
    parts = dict(p.split("=", 1) for p in spec.split(",")[1:] if "=" in p)
    fd = spec.split(",")[0]
    if not fd.isdigit():
        return
    fd = int(fd)
    try:
        os.fstat(fd)
    except OSError:
        return
    # Claim the pipe: the first interpreter to start with this environment
    # reports; another (a shell's second python3) leaves it alone.
    try:
        os.mkdir(os.path.join(here, "claimed"))
    except OSError:
        try:
            os.close(fd)
        except OSError:
            pass
        return
    # Keep the pipe away from the program: a high descriptor, closed on exec.
    try:
        fd = _high_fd(fd)
    except OSError:
        os.set_inheritable(fd, False)
    _fd = fd
    _tick_ns = int(parts.get("tick_us", "5000")) * 1000
    _tick_s = _tick_ns / 1e9
    _budget = int(parts.get("calls_per_s", str(_budget)))
    _free_threaded = "t" in getattr(sys, "abiflags", "")  # Py_GIL_DISABLED builds
    if _free_threaded:  # a build without the GIL: the buffer and the counters need the lock
        _ext, _tally = _ext_locked, _tally_locked
    _load_counter(here)
    v = sys.version_info
    hello = ('{"kind":"hello","protocol":%d,"pid":%d,"version":"%d.%d.%d","free_threaded":%s,"gil_enabled":%s,'
             '"switch_interval_s":%r,"tick_ns":%d,"main_ident":%d,"main_native_id":%d}') % (
        PROTOCOL, os.getpid(), v.major, v.minor, v.micro, "true" if _free_threaded else "false",
        "true" if _gil_enabled() else "false", sys.getswitchinterval(), _tick_ns, _get_ident(), _native_id())
    _write(_frame(b"J", hello.encode()))
    _on = _win = True
    _W["start"], _W["rng"] = _pc(), (os.getpid() * 2654435761 + _t0) & 0x7FFFFFFF
    _exit_mod[0] = _private("atexit")
    _exit_mod[0].register(_report)
    os.register_at_fork(after_in_child=_forked)
    for name, hook in _HOOKS.items():
        m = sys.modules.get(name)
        if m is not None:
            try:
                hook(m)
            except Exception as e:
                _note("could not hook %s: %s: %s" % (name, type(e).__name__, e))
    sys.meta_path.insert(0, _finder)
    _stand_in()
    _self["load"] = _tt() - c0
