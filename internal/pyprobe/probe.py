# ctxlab's CPython probe (docs/pyprobe.md): loaded by ctxlab's
# sitecustomize before the program's own code, it times, inside the
# interpreter, every asyncio loop's lag and the hops between threads and
# loops, and sends raw timings to ctxlab over an inherited pipe. ctxlab
# builds every histogram, rate and reading from them (internal/pyprobe).
#
# It never prints, never raises into the program and never changes what the
# program computes: its wrappers pass every argument, result and exception
# through. What the program could notice is listed in docs/pyprobe.md.
#
# Frames on the pipe: u32 little-endian length, one type byte, the payload.
# "J": one JSON object with a "kind". "E": int64 events, six to a record:
#   (1, loop, lag_ns, cpu_ns, wall_ns, -1)   a tick of a loop's timer, with
#       its thread's time on a CPU and the wall time since the last tick
#   (4, loop, runq_ns, wall_ns, 0, 0)   the loop thread's time waiting for a
#       CPU (schedstat) over the wall time since the last such record
#       (about once a second, and when the loop stops)
#   (2, site, hop_ns, caller_ident, same_thread, 0)   a call_soon_threadsafe
#   (3, site, wait_ns, work_ns, back_ns, 0)       an executor / to_thread /
#                                                 aiosqlite call; -1: not known
import os
import sys
import time
from array import array

PROTOCOL = 1

T_LAG, T_CST, T_CALL, T_RUNQ = 1, 2, 3, 4

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
_loops = {}  # id(loop) -> loop id
_free_threaded = False


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
    """Sends the pending JSON objects, then the events taken so far."""
    t = _tt()
    with _lock:
        n = len(_buf)
        data = _buf[:n].tobytes() if n else b""
        if n:
            del _buf[:n]  # appends made meanwhile stay for the next flush
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
                s = _next_site()
                name, where = _name(f)
                _pending.append({"kind": "site", "site": s, "site_kind": kind, "name": name, "where": where})
                cache[k] = s
    return s


def _next_site():
    _sites["n"] = n = _sites.get("n", 0) + 1
    return n


# --- call_soon_threadsafe -----------------------------------------------

def _hopped(t0, tid, sid, same, callback, args):
    _ext((T_CST, sid, _pc() - t0, tid, same, 0))
    return callback(*args)


def _make_cst(orig):
    sites = _by_kind["call_soon_threadsafe"]

    def call_soon_threadsafe(self, callback, *args, context=None):
        if not _on:
            return orig(self, callback, *args, context=context)
        if self._debug:
            self._check_callback(callback, "call_soon_threadsafe")
        tid = _get_ident()
        sid = sites.get(getattr(callback, "__code__", None)) or _site("call_soon_threadsafe", callback)
        return orig(self, _hopped, _pc(), tid, sid, tid == self._thread_id, callback, args, context=context)

    call_soon_threadsafe.__wrapped__ = orig
    call_soon_threadsafe.__doc__ = orig.__doc__
    return call_soon_threadsafe


# --- run_in_executor, to_thread, aiosqlite -------------------------------

class _Call:
    """One call handed to a thread: when it was made (t0), when the thread
    started (ts) and ended (te) the function; 0 until then."""

    __slots__ = ("t0", "ts", "te", "sid")

    def resumed(self, fut):
        t = _pc()
        ts, te = self.ts, self.te
        if ts == 0:
            _ext((T_CALL, self.sid, -1, -1, -1, 0))  # cancelled before it started
        elif te == 0:
            _ext((T_CALL, self.sid, ts - self.t0, -1, -1, 0))  # cancelled while it ran
        else:
            _ext((T_CALL, self.sid, ts - self.t0, te - ts, t - te, 0))


class _Total:
    __slots__ = ("t0", "sid")

    def resumed(self, fut):
        _ext((T_CALL, self.sid, -1, -1, _pc() - self.t0, 0))


def _in_worker(c, func, *args, **kwargs):
    c.ts = _pc()
    try:
        return func(*args, **kwargs)
    finally:
        c.te = _pc()


_tpe = [None]  # concurrent.futures.ThreadPoolExecutor, once imported


def _make_rie(orig):
    to_thread, in_executor = _by_kind["to_thread"], _by_kind["run_in_executor"]

    def run_in_executor(self, executor, func, *args):
        if not _on:
            return orig(self, executor, func, *args)
        if self._debug:
            self._check_callback(func, "run_in_executor")
        ex = executor if executor is not None else self._default_executor
        tpe = _tpe[0]
        if tpe is None and ex is not None:
            m = sys.modules.get("concurrent.futures.thread")
            tpe = _tpe[0] = getattr(m, "ThreadPoolExecutor", None) if m is not None else None
        if ex is None or (tpe is not None and isinstance(ex, tpe)):
            # a thread pool (None makes asyncio's default one): the function
            # runs in a thread of this process, so it is timed where it runs
            c = _Call()
            if _partial_t is None or type(func) is not _partial_t:
                c.sid = in_executor.get(getattr(func, "__code__", None)) or _site("run_in_executor", func)
            else:
                inner, via = _unwrap(func)
                kind = "to_thread" if via else "run_in_executor"
                c.sid = (to_thread if via else in_executor).get(getattr(inner, "__code__", None)) or _site(kind, inner)
            c.ts = c.te = 0
            c.t0 = _pc()
            fut = orig(self, executor, _in_worker, c, func, *args)
        else:
            # another executor (a process pool) may pickle the function:
            # it is handed on untouched and only the whole call is timed
            c = _Total()
            c.sid = _site("executor", _unwrap(func)[0])
            c.t0 = _pc()
            fut = orig(self, executor, func, *args)
        fut.add_done_callback(c.resumed)
        return fut

    run_in_executor.__wrapped__ = orig
    run_in_executor.__doc__ = orig.__doc__
    return run_in_executor


def _make_aiosqlite_execute(orig):
    async def _execute(self, fn, *args, **kwargs):
        if not _on:
            return await orig(self, fn, *args, **kwargs)
        c = _Call()
        c.sid = _site("aiosqlite", fn)
        c.ts = c.te = 0
        c.t0 = _pc()
        try:
            return await orig(self, _in_worker, c, fn, *args, **kwargs)
        finally:
            c.resumed(None)

    _execute.__wrapped__ = orig
    return _execute


# --- every asyncio loop's lag ---------------------------------------------

def _schedstat_fd():
    """This thread's /proc schedstat (time on a CPU, time waiting for one),
    open on a high descriptor the program will not notice; -1 without."""
    try:
        fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return -1
    try:
        import fcntl

        hi = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 200)
        os.close(fd)
        return hi
    except Exception:
        return fd


class _Tick:
    """A loop's periodic timer: its lateness is the loop's lag. Each tick
    also takes its thread's CPU time since the last (thread_time_ns, which
    keeps the GIL: a tick must not hand the GIL to a busy thread, as a
    read of /proc would); about once a second, and when the loop stops,
    the thread's run-queue wait since the last such reading (schedstat).
    A late tick after the thread ran tells handlers' CPU work, one after
    it slept (a wait for the GIL) tells contention."""

    __slots__ = ("loop", "lid", "due", "h", "c0", "w0", "q0", "qw0", "stopped", "ctx", "fd", "n")

    def __init__(self, loop, lid):
        self.loop, self.lid, self.stopped, self.n = loop, lid, False, 0
        # one empty context for every tick of this loop: call_later does
        # not copy the program's context for each (the tick reads none)
        self.ctx = sys.modules["contextvars"].Context()
        self.fd = _schedstat_fd()
        self.c0 = _tt()
        self.w0 = _pc()
        self.q0, self.qw0 = self.runq(), self.w0
        self.due = self.w0 + _tick_ns
        self.h = loop.call_later(_tick_s, self.fire, context=self.ctx)

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

    def fire(self):
        # The timer is due: the loop runs this as soon as it can; the tick
        # is taken when the loop next runs a callback this one schedules —
        # when a coroutine sleeping on the timer would resume — and the
        # next is armed from then, as `await asyncio.sleep(tick)` in a
        # loop would be.
        if self.stopped or not _on:
            return
        self.h = self.loop.call_soon(self.woke, context=self.ctx)

    def woke(self):
        now = _pc()
        if self.stopped or not _on:
            return
        self.n += 1
        timed = self.n % 16 == 0  # its own cost, timed on one tick in 16
        c = _tt()
        _ext((T_LAG, self.lid, now - self.due, c - self.c0, now - self.w0, -1))
        self.c0, self.w0 = c, now
        self.due = now + _tick_ns
        self.h = self.loop.call_later(_tick_s, self.fire, context=self.ctx)
        if timed:
            _self["tick"] += 16 * (_tt() - c)
        if now - self.qw0 > 1_000_000_000:  # each loop's own second, whoever flushes
            t = _tt()
            self.segment(now)
            _self["tick"] += _tt() - t
        if now - _last_flush[0] > 1_000_000_000 or len(_buf) >= _FLUSH_AT:
            _flush()

    def close(self):
        fd, self.fd = self.fd, -1
        if fd >= 0:
            try:
                os.close(fd)
            except OSError:
                pass

    def stop(self):
        self.stopped = True
        h = self.h
        if h is not None:
            h.cancel()
        self.h = None
        self.segment(_pc())
        self.close()


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
            t = _Tick(self, _loop_id(self))
        except Exception:
            t = None
        try:
            return orig(self)
        finally:
            if t is not None:
                t.stop()

    run_forever.__wrapped__ = orig
    run_forever.__doc__ = orig.__doc__
    return run_forever


# --- threads ----------------------------------------------------------------

def _thread_started(th):
    _pending.append({"kind": "thread", "ident": _get_ident(), "native_id": _native_id(), "name": str(th.name), "daemon": bool(th.daemon)})


def _thread_ended(th):
    _pending.append({"kind": "thread-end", "ident": _get_ident(), "native_id": _native_id(), "name": str(th.name)})


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

def _patch(owner, name, wrapper):
    orig = owner.__dict__[name]
    _patched.append((owner, name, orig))
    setattr(owner, name, wrapper(orig))


def _patch_threading(m):
    _patch(m.Thread, "_bootstrap_inner", _make_bootstrap)


def _patch_base_events(m):
    _types()  # asyncio has imported functools and contextvars by now
    L = m.BaseEventLoop
    _patch(L, "run_forever", _make_run_forever)
    _patch(L, "call_soon_threadsafe", _make_cst)
    _patch(L, "run_in_executor", _make_rie)


def _patch_aiosqlite(m):
    C = getattr(m, "Connection", None)
    if C is not None and "_execute" in C.__dict__:
        _patch(C, "_execute", _make_aiosqlite_execute)
        _pending.append({"kind": "library", "name": "aiosqlite", "version": str(getattr(sys.modules.get("aiosqlite"), "__version__", ""))})


_HOOKS = {"threading": _patch_threading, "asyncio.base_events": _patch_base_events, "aiosqlite.core": _patch_aiosqlite}


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


# --- fork, exit ---------------------------------------------------------------

def _forked():
    """A forked child is not probed: the pipe is its parent's."""
    global _fd, _on
    _on = False
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
    try:
        sys.meta_path.remove(_finder)
    except ValueError:
        pass


def _calibrate(n=300):
    """The wrappers' own cost per call, timed on stand-ins: the original
    replaced by a function that only runs what it is given."""
    scratch = array("q")
    global _ext
    saved = _ext
    _ext = scratch.extend
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

        w = _make_cst(plain_cst)
        out["cst_ns"] = _per_call(lambda: w(s, noop), lambda: plain_cst(s, noop), n)

        class Fut:
            __slots__ = ()

            def add_done_callback(self, cb):
                cb(self)

        fut = Fut()

        def plain_rie(self, ex, func, *args):
            func(*args)
            return fut

        w2 = _make_rie(plain_rie)
        # to_thread's shape, partial(Context.run, func), the dearer path
        # (an executor call of a plain function costs a little less)
        ft, cv = sys.modules.get("functools"), sys.modules.get("contextvars")
        call = noop
        if ft is not None and cv is not None:
            call = ft.partial(cv.Context().run, noop)
        out["call_ns"] = _per_call(lambda: w2(s, None, call), lambda: plain_rie(s, None, call), n)
    finally:
        _ext = saved
        del _pending[np:]  # the stand-ins' sites are not the program's
        _sites["n"] = n0
        for kind, d in _by_kind.items():
            for k in [k for k in d if k not in keys[kind]]:
                del d[k]
    return out


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
    global _on
    if not _on or _fd < 0:
        return
    t = _tt()
    try:
        cal = _calibrate() if _sites.get("n") else {}
        tm = os.times()
        rep = {"kind": "final", "pid": os.getpid(), "wall_ns": _pc() - _t0,
               "cpu_ns": int((tm.user + tm.system) * 1e9), "switch_interval_s": sys.getswitchinterval(),
               "gil_enabled": _gil_enabled(), "threads": _threads_now(),
               "self_ns": dict(_self), "calibration": cal, "executable": sys.executable,
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
    global _fd, _on, _t0, _tick_ns, _tick_s, _ext, _free_threaded
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
        import fcntl

        hi = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 200)
        os.close(fd)
        fd = hi
    except Exception:
        os.set_inheritable(fd, False)
    _fd = fd
    tick_us = int(parts.get("tick_us", "5000"))
    _tick_ns = tick_us * 1000
    _tick_s = tick_us / 1e6
    _free_threaded = "t" in getattr(sys, "abiflags", "")  # Py_GIL_DISABLED builds
    if _free_threaded:
        _ext = _ext_locked  # a build without the GIL: the buffer needs the lock
    v = sys.version_info
    hello = ('{"kind":"hello","protocol":%d,"pid":%d,"version":"%d.%d.%d","free_threaded":%s,"gil_enabled":%s,'
             '"switch_interval_s":%r,"tick_ns":%d,"main_ident":%d,"main_native_id":%d}') % (
        PROTOCOL, os.getpid(), v.major, v.minor, v.micro, "true" if _free_threaded else "false",
        "true" if _gil_enabled() else "false", sys.getswitchinterval(), _tick_ns, _get_ident(), _native_id())
    _write(_frame(b"J", hello.encode()))
    _on = True
    import atexit

    atexit.register(_report)
    os.register_at_fork(after_in_child=_forked)
    for name, hook in _HOOKS.items():
        m = sys.modules.get(name)
        if m is not None:
            try:
                hook(m)
            except Exception as e:
                _note("could not hook %s: %s: %s" % (name, type(e).__name__, e))
    sys.meta_path.insert(0, _finder)
    _self["load"] = _tt() - c0
