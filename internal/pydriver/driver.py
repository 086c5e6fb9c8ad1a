# ctxlab's CPython driver. ctxlab embeds this file and runs it with the
# interpreter it measures: `python3 -u -c <this file>`. The protocol
# (docs/python.md):
#
#   stdout, first line: {"hello": {...}} — the interpreter's version and build.
#   stdin:  one JSON message per line, {"id", "do", ...}, for one arm at a time:
#             {"do": "open", "bench", "params", "cpus", "cpus_a", "cpus_b"}
#               sets the bench up; answers {"unit", "sampled"};
#             {"do": "batch", "n"} runs about n ops unsampled (the runner's
#               warm-up and sizing); answers {"batch": [ops, ns]};
#             {"do": "timed", "reps", "ops", "every", "per_op_ns"} runs the
#               timed repetitions, timing every `every`-th unit on its own
#               (0: none), and closes the arm; its answer carries switch
#               counts and the driver's CPU time over them;
#             {"do": "close"} closes the arm without measuring it.
#   stdout: exactly one JSON line per message: {"id", "ok": true, ...}
#           or {"id", "ok": false, "unsupported"|"error": "..."}; an arm that
#           fails or is refused is closed.
#   stderr: diagnostics and tracebacks only.
#   EOF on stdin: exit 0.
#
# The runner sizes every arm by its own rule (warm-up and testing.B-style
# repetition sizing, sampling interval): the driver decides no size. It runs
# what it is told and times it, batch timing per repetition (mean = elapsed /
# ops), per-op latencies on the sample of ops it was told, and OS context
# switches from getrusage over exactly the timed repetitions.
import asyncio
import functools
import itertools
import json
import linecache
import os
import queue
import resource
import sys
import sysconfig
import threading
import time
import types

PROTOCOL = 1
pc = time.perf_counter_ns


class Unsupported(Exception):
    """The arm cannot run with this interpreter (reason in the message)."""


# --- placement ----------------------------------------------------------

HAVE_AFFINITY = hasattr(os, "sched_setaffinity")
BASE_MASK = sorted(os.sched_getaffinity(0)) if HAVE_AFFINITY else None


def pin(cpus):
    """Pin the calling thread; threads it starts later inherit the mask."""
    if cpus and HAVE_AFFINITY:
        os.sched_setaffinity(0, cpus)


def choice(v, allowed, what):
    """v, which must be one of allowed (what names it in the error)."""
    if v not in allowed:
        raise ValueError("%s=%r; want one of: %s" % (what, v, ", ".join(allowed)))
    return v


# --- children -------------------------------------------------------------
#
# No process the driver forks may outlive it, SIGKILL of ctxlab included:
# ctxlab gives the driver a parent-death signal, but a grandchild gets one
# only by asking itself. So every forked child asks for SIGKILL when the
# driver's thread that forked it exits (PR_SET_PDEATHSIG, through ctypes),
# then checks that the driver did not die before it asked. A pipe the child
# still reads would not do: its siblings hold inherited write ends.

_PR_SET_PDEATHSIG = 1
_prctl_fn = []  # [libc.prctl or None], loaded once, in the driver


def prctl_ready():
    """Load prctl in the driver, before it forks: the child then imports
    nothing. None where there is no ctypes or no prctl (not Linux)."""
    if not _prctl_fn:
        try:
            import ctypes

            f = ctypes.CDLL(None, use_errno=True).prctl
            f.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
            f.restype = ctypes.c_int
            _prctl_fn.append(f)
        except (ImportError, OSError, AttributeError):
            _prctl_fn.append(None)
    return _prctl_fn[0]


def die_with_driver(driver):
    """In a forked child: be killed when the driver (pid driver) dies, and
    leave at once if it died already."""
    f = _prctl_fn[0] if _prctl_fn else None
    if f is not None:
        import signal

        f(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != driver:
        os._exit(1)


def fork_child(child, *args):
    """Fork a child that runs child(*args) and exits, never returning into
    the driver, and dies with the driver; its pid."""
    driver = os.getpid()
    prctl_ready()
    pid = os.fork()
    if pid == 0:
        try:
            die_with_driver(driver)
            child(*args)
        finally:
            os._exit(0)
    return pid


def pool_worker_init(driver, life_r, life_w):
    """A process-pool worker's initializer: die with the driver, by its
    signal and by a watchdog thread that waits, never waking, for EOF on a
    pipe whose only write end is the driver's (each worker closes the copy
    it inherited), for where prctl is missing or the forking thread was
    not the one that lives as long as the driver."""
    os.close(life_w)
    die_with_driver(driver)

    def watch():
        try:
            while os.read(life_r, 1):  # retried on EINTR (PEP 475)
                pass
        finally:
            os._exit(1)

    threading.Thread(target=watch, name="ctxlab-driver-watch", daemon=True).start()


# --- switch counting ----------------------------------------------------

RUSAGE_THREAD = getattr(resource, "RUSAGE_THREAD", None)


def rusage(who):
    """Voluntary and involuntary switches: RUSAGE_SELF's (every thread, live
    or exited), or RUSAGE_THREAD's (0, 0 where there is none)."""
    if who is None:
        return 0, 0
    r = resource.getrusage(who)
    return r.ru_nvcsw, r.ru_nivcsw


def proc_fields(path, names):
    """The values of the named `name: value` lines of a /proc file, 0 for
    one it lacks; None where it cannot be read."""
    vals = dict.fromkeys(names, 0)
    try:
        with open(path) as f:
            for line in f:
                name, _, v = line.partition(":")
                if name.strip() in vals:
                    vals[name.strip()] = int(v)
    except (OSError, ValueError):
        return None
    return tuple(vals.values())


def proc_switches(pid):
    """Voluntary and involuntary switches of a live child."""
    return proc_fields("/proc/%d/status" % pid, ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"))


def migrations():
    """tid -> se.nr_migrations for every live thread of the driver, or None."""
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return None
    out = {t: proc_fields("/proc/self/task/%s/sched" % t, ("se.nr_migrations",)) for t in tids}
    out = {t: v[0] for t, v in out.items() if v}
    return out if out else None


# --- benches ------------------------------------------------------------
#
# A bench has setup(), run(n, every, samples) -> (elapsed_ns, ops) and
# teardown(). run does about n ops; every `every`-th unit (an op; a lap, for
# a ring) is timed on its own and appended to samples (ns), inside the
# batch, like ctxlab's Go sampler.
#
# Every bench whose op is a few statements times them with the one loop
# below, LOOP, written once: timed_loop writes the bench's op and the locals
# it binds into it and compiles it, as timeit writes its statement into its
# loop. So no call sits around the op and the op is the one variable part:
# bound locals, and the unsampled ops of each chunk in a bare
# `for _ in range(k)` (or `for k in islice(keys, k)`) loop with no per-op
# branch or attribute lookup, so a batch costs what a hand-written
# perf_counter loop around the op costs (TestDriverLoopGap and
# TestDriverRowsDoWhatPlainLoopsDo keep that true).

LOOP = """\
{async_}def {name}(self, n, every, samples):
{bind}
    chunks, rest = divmod({units}, every)
    t0 = pc()
    for _ in range(chunks):
{key}        s = pc()
{op8}
        samples.append({sample})
        for {k} in {each_chunk}:
{op12}
    for {k} in {each_rest}:
{op8}
    return pc() - t0, {done}
"""


_loops = itertools.count(1)


def _indent(text, pad):
    return "\n".join(pad + line for line in text.splitlines())


@functools.lru_cache(maxsize=None)
def timed_loop(op, bind, keyed=False, lap=False, is_async=False):
    """A bench's run (or, is_async, its coroutine arun) timing op: one or
    more statements, with the locals that bind (statements run before the
    clock starts; `self` is the bench) sets for it. keyed: each op reads the
    next of self.keys as k. lap: the unit is a lap of the ring of self.n,
    the op one hop: about n/self.n laps run and each sample is a lap's
    time / self.n."""
    if lap:
        bind = "size = self.n\nlaps = max(1, -(-n // size))\n" + bind
    if keyed:
        bind += "\nkeys, islice = self.keys, itertools.islice"
    each = "islice(keys, %s)" if keyed else "range(%s)"
    src = LOOP.format(
        async_="async " if is_async else "", name="arun" if is_async else "run",
        bind=_indent(bind, "    "), units="laps" if lap else "n",
        key="        k = next(keys)\n" if keyed else "", k="k" if keyed else "_",
        each_chunk=each % "every - 1", each_rest=each % "rest",
        op8=_indent(op, " " * 8), op12=_indent(op, " " * 12),
        sample="(pc() - s) // size" if lap else "pc() - s", done="laps * size" if lap else "n")
    name = "<ctxlab timed loop %d>" % next(_loops)
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)  # its lines in tracebacks
    ns = {}
    exec(compile(src, name, "exec"), globals(), ns)
    return ns["arun" if is_async else "run"]


class Bench:
    sampled = True  # per-op latencies mean something for this bench
    sample_note = ""
    ops_per_unit = 1  # ops in one sampled unit (a ring's lap is N hops)

    def __init__(self, p):
        self.p = p
        self.cpus_b = p.get("cpus_b")

    def setup(self):
        pass

    def teardown(self):
        pass

    def children(self):
        return []

    def begin_timed(self):
        """The timed repetitions begin (the sizing batches are over)."""

    def metrics(self):
        return {}

    def notes(self):
        return [self.sample_note] if self.sample_note else []

    def use_loop(self, op, bind, keyed=False, lap=False):
        """Time op with LOOP (timed_loop): the bench's run, or an AsyncBench's arun."""
        a = isinstance(self, AsyncBench)
        setattr(self, "arun" if a else "run", types.MethodType(timed_loop(op, bind, keyed, lap, a), self))

    def one_worker(self):
        """A pool of one worker thread, pinned to cpus_b, started outside timing."""
        import concurrent.futures

        ex = concurrent.futures.ThreadPoolExecutor(max_workers=1, initializer=pin, initargs=(self.cpus_b,))
        ex.submit(int).result()
        return ex

    def partner(self, target, *args):
        """Start the bench's partner thread, pinned to cpus_b."""

        def run():
            pin(self.cpus_b)
            target(*args)

        t = threading.Thread(target=run, daemon=True)
        t.start()
        return t


class Busy:
    """One pure-Python busy thread: holds the GIL whenever it can."""

    def __init__(self):
        self.stop = False
        self.t = threading.Thread(target=self.spin, daemon=True)
        self.t.start()

    def spin(self):
        n = 0
        while not self.stop:
            n += 1

    def close(self):
        self.stop = True
        self.t.join()


class Ring:
    """A ring of N workers over queues, the driver's main thread (or task)
    worker 0: a ring.* arm's op is one hop and its unit a lap of N hops. A
    pingpong arm (pair) is a ring of two whose op is the round trip."""

    def __init__(self, p, pair=False):
        super().__init__(p)
        self.n = 2 if pair else int(p["n"])
        if not pair:
            self.ops_per_unit = self.n
            self.sample_note = "per-op latencies are a lap's time divided by the ring size"
        self.use_loop(*self.hop, lap=not pair)  # hop: (op, the locals it binds)


class ThreadRing(Ring, Bench):
    """Threads over queue.SimpleQueue."""

    hop = ("put(1); get()", "put, get = self.qs[1 % self.n].put, self.qs[0].get")

    def setup(self):
        n = self.n
        self.qs = [queue.SimpleQueue() for _ in range(n)]
        self.ts = []
        old = threading.stack_size()
        threading.stack_size(256 * 1024)
        try:
            for i in range(1, n):
                self.ts.append(self.partner(self.worker, self.qs[i], self.qs[(i + 1) % n]))
        finally:
            threading.stack_size(old)

    @staticmethod
    def worker(qin, qout):
        get, put = qin.get, qout.put
        while True:
            v = get()
            put(v)
            if v is None:
                return

    def teardown(self):
        self.qs[1 % self.n].put(None)
        self.qs[0].get()
        for t in self.ts:
            t.join()


class ThreadEvent(Bench):
    """Two threads over a pair of threading.Event."""

    run = timed_loop("e1.set(); e2.wait(); e2.clear()", "e1, e2 = self.e1, self.e2")

    def setup(self):
        self.e1, self.e2 = threading.Event(), threading.Event()
        self.stop = False

        def echo():
            e1, e2 = self.e1, self.e2
            while True:
                e1.wait()
                e1.clear()
                if self.stop:
                    return
                e2.set()

        self.t = self.partner(echo)

    def teardown(self):
        self.stop = True
        self.e1.set()
        self.t.join()


def pipe_echo(r, w):
    """Echo each byte read from r into w until EOF."""
    read, write = os.read, os.write
    while True:
        b = read(r, 1)
        if not b:
            return
        write(w, b)


class PipePair(Bench):
    """Two threads, or two processes (fork), over a pair of os.pipe."""

    run = timed_loop("write(w, one); read(r, 1)", 'read, write, r, w = os.read, os.write, self.r, self.w\none = b"x"')

    def __init__(self, p, fork):
        super().__init__(p)
        self.fork = fork
        self.pid = 0

    def setup(self):
        r1, w1 = os.pipe()
        r2, w2 = os.pipe()
        self.w, self.r = w1, r2
        if not self.fork:
            self.cr, self.cw = r1, w2
            self.t = self.partner(pipe_echo, r1, w2)
            return

        def child():  # echo until EOF
            os.close(w1)
            os.close(r2)
            pipe_echo(r1, w2)

        self.pid = fork_child(child)
        os.close(r1)
        os.close(w2)

    def children(self):
        return [self.pid] if self.pid else []

    def teardown(self):
        os.close(self.w)  # EOF ends the partner
        if self.fork:
            os.waitpid(self.pid, 0)
        else:
            self.t.join()
            os.close(self.cr)
            os.close(self.cw)
        os.close(self.r)


# asyncio benches: one event loop per arm, run_until_complete per batch;
# each coroutine times itself so the loop's entry and exit are not counted.


class AsyncBench(Bench):
    def setup(self):
        self.loop = asyncio.new_event_loop()
        try:
            self.loop.run_until_complete(self.asetup())
        except BaseException:
            self.loop.close()
            self.loop = None
            raise

    async def asetup(self):
        pass

    def run(self, n, every, samples):
        return self.loop.run_until_complete(self.arun(n, every, samples))

    def teardown(self):
        if self.loop is None:
            return
        try:
            self.loop.run_until_complete(self.ateardown())
        finally:
            self.loop.close()

    async def ateardown(self):
        pass


class TaskRing(Ring, AsyncBench):
    """asyncio tasks over asyncio.Queue."""

    hop = ("put(1); await get()", "put, get = self.qs[1 % self.n].put_nowait, self.qs[0].get")

    async def asetup(self):
        n = self.n
        self.qs = [asyncio.Queue() for _ in range(n)]
        loop = asyncio.get_running_loop()
        self.ts = [loop.create_task(self.worker(self.qs[i], self.qs[(i + 1) % n])) for i in range(1, n)]
        await asyncio.sleep(0)

    @staticmethod
    async def worker(qin, qout):
        get, put = qin.get, qout.put_nowait
        while True:
            v = await get()
            put(v)
            if v is None:
                return

    async def ateardown(self):
        self.qs[1 % self.n].put_nowait(None)
        await self.qs[0].get()
        for t in self.ts:
            await t


class TaskFuture(AsyncBench):
    """Two asyncio tasks handing over by resolving bare futures."""

    arun = timed_loop("resp = self.resp = fut(); self.req.set_result(1); await resp", "fut = self.fut", is_async=True)

    async def asetup(self):
        loop = asyncio.get_running_loop()
        self.fut = loop.create_future
        self.req = self.fut()
        self.resp = None

        async def echo():
            while True:
                v = await self.req
                if v is None:
                    return
                self.req = self.fut()
                self.resp.set_result(v)

        self.t = loop.create_task(echo())
        await asyncio.sleep(0)

    async def ateardown(self):
        self.req.set_result(None)
        await self.t


class TaskYield(AsyncBench):
    """K tasks each awaiting asyncio.sleep(0) in a loop; op = one yield."""

    sampled = False
    sample_note = "no per-op latencies: a yield's latency is a whole cycle of the ready queue"

    async def asetup(self):
        self.k = int(self.p["k"])
        self.m = 0

    def notes(self):
        out = super().notes()
        if self.m < 100:
            out.append("not comparable with a long loop's figure: each of the %d tasks yields only %d time%s per repetition, "
                       "and starting and finishing the tasks is inside the timing (a longer --benchtime amortises it)"
                       % (self.k, self.m, "" if self.m == 1 else "s"))
        return out

    async def arun(self, n, every, samples):
        k = self.k
        m = self.m = -(-n // k)  # at least n yields: sizing must see a batch grow
        sleep = asyncio.sleep

        async def worker():
            for _ in range(m):
                await sleep(0)

        loop = asyncio.get_running_loop()
        tasks = [loop.create_task(worker()) for _ in range(k)]
        t0 = pc()
        for t in tasks:
            await t
        return pc() - t0, k * m


# hop: the seed's sqlite3 lookup (a fresh conn.execute(SQL, (k,)).fetchone()
# per lookup on a 1 000-row table, by its integer primary key: one B-tree
# search) directly and through worker threads. The database is a file by
# default, as the seed's sqlite3.connect(path): made in a temp dir outside
# timing and removed at teardown, or at once when the set-up fails. db=memory
# runs the same lookup in ":memory:". The temp dir is named like ctxlab's own
# (ctxlab-sqlop-<pid>-), so one left by a killed driver is removed by the next
# run (sqlop.RemoveStale). internal/selfcheck/pyref.py times the same lookup
# in a plain perf_counter loop, to check this one against.

SQL = "select v from t where id = ?"
HOP_DBS = ("file", "memory", "user")
CREATE = "create table t (id integer primary key, v text)"
INSERT = "insert into t (id, v) values (?, ?)"
ROWS = 1000


def hop_rows():
    return [(i, "value %d" % i) for i in range(1, ROWS + 1)]


def hop_keys():
    """The ids 1..ROWS, cycled in C."""
    return itertools.cycle(range(1, ROWS + 1))


def user_db(p):
    """db=user: the user's file, by the read-only URI ctxlab opens it with
    (p["uri"]: file:PATH?mode=ro, the connection an application makes but
    read-only, with readonly_shm=1 for a WAL database whose -shm must not
    be written, or with immutable=1 for the row of what no locks and change
    checks would save), their query (p["query"]) and its arguments
    (p["args"], a JSON list, one per call in turn), as ctxlab checked them
    before the run."""
    uri = p["uri"]
    base, _, query = uri.partition("?")
    if not (base.startswith("file:") and "mode=ro" in query.split("&")):
        raise ValueError("hop: db=user: uri=%r is not a read-only file: URI (mode=ro)" % uri)
    args = json.loads(p["args"])
    if not args:
        raise ValueError("hop: db=user needs args (a query with one ?)")
    return uri, p["query"], itertools.cycle(args)


def make_db(conn):
    conn.execute(CREATE)
    conn.executemany(INSERT, hop_rows())
    conn.commit()


def seed_file(name):
    """The seed's table in a new file `name` in a temp dir named like
    ctxlab's own: (dir, path). The dir is gone again if making it failed."""
    import sqlite3
    import tempfile

    d = tempfile.mkdtemp(prefix="ctxlab-sqlop-%d-" % os.getpid())
    path = os.path.join(d, name)
    try:
        conn = sqlite3.connect(path)
        try:
            make_db(conn)
        finally:
            conn.close()
    except BaseException:
        remove_tree(d)
        raise
    return d, path


def open_db(kind, p, name):
    """The database a lookup reads, and how: (temp dir, path or URI, SQL,
    fetch, keys, uri): the seed's table in a new file `name` (file) or in
    ":memory:" (memory: the caller makes it in its connection), or the
    user's (user: all of their rows, every call)."""
    if kind == "user":
        uri, sql, keys = user_db(p)
        return None, uri, sql, "fetchall", keys, True
    d, path = seed_file(name) if kind == "file" else (None, ":memory:")
    return d, path, SQL, "fetchone", hop_keys(), False


def remove_tree(d):
    if d:
        import shutil

        shutil.rmtree(d, ignore_errors=True)


# One timed loop per way of calling (how: one lookup, the locals it binds),
# so the arms differ only by the hops they take. The statement and its
# fetch are the bench's: the seed's SQL and fetchone(), or the user's query
# and fetchall() (every row, every call), so the user's query runs in the
# very loop the built-in lookup does. Keys cycle over the table (or the
# user's args) in C. arun is the way's own coroutine function, so each time
# a hop's answer resumes the task it resumes that loop directly, as a plain
# loop's task would, not through an awaiting frame too (+2 frame
# resumptions per two-hop lookup, counted by testdata/rowcounts.py).
HOP_LOOPS = {
    "direct": ("execute(sql, (k,)).FETCH()", "execute, sql = self.conn.execute, self.sql"),
    "executor": ("await hop(ex, lookup, k)",
                 "hop, ex, execute, sql = asyncio.get_running_loop().run_in_executor, self.ex, self.conn.execute, self.sql\n"
                 "lookup = lambda k: execute(sql, (k,)).FETCH()"),
    "two-hop": ("cur = await hop(ex, execute, sql, (k,))\nawait hop(ex, getattr(cur, fetch))",
                "hop, ex, execute = asyncio.get_running_loop().run_in_executor, self.ex, self.conn.execute\n"
                "sql, fetch = self.sql, self.fetch"),
    "aiosqlite": ("async with execute(sql, (k,)) as cur:\n    await getattr(cur, fetch)()",
                  "execute, sql, fetch = self.db.execute, self.sql, self.fetch"),
}


class Hop(AsyncBench):
    def __init__(self, p):
        super().__init__(p)
        self.how = choice(p.get("how"), HOP_LOOPS, "hop: how")
        self.db_kind = choice(p.get("db") or "file", HOP_DBS, "hop: db")
        self.dir = self.conn = self.db = self.ex = None

    async def asetup(self):
        try:
            await self.open()
        except BaseException:
            try:
                await self.ateardown()
            finally:
                remove_tree(self.dir)
                self.dir = None
            raise
        op, bind = HOP_LOOPS[self.how]
        self.use_loop(op.replace("FETCH", self.fetch), bind.replace("FETCH", self.fetch), keyed=True)

    async def open(self):
        import sqlite3

        if self.how == "aiosqlite":
            try:
                import aiosqlite
            except ImportError:
                raise Unsupported(
                    "aiosqlite is not importable by this interpreter (Debian: apt-get install python3-aiosqlite; or pip install aiosqlite)"
                )
        self.dir, path, self.sql, self.fetch, self.keys, uri = open_db(self.db_kind, self.p, "hop.db")
        if self.how == "aiosqlite":
            self.db = await aiosqlite.connect(path, uri=uri)
            if self.db_kind == "memory":  # a :memory: database lives in its one connection
                await self.db.execute(CREATE)
                await self.db.executemany(INSERT, hop_rows())
                await self.db.commit()
            return
        self.conn = sqlite3.connect(path, check_same_thread=False, uri=uri)
        if self.db_kind == "memory":
            make_db(self.conn)
        if self.how != "direct":
            # No worker thread for the direct lookup: an idle one beside it
            # made every lookup ~3% slower (3.1 -> 3.2 us, pyenv 3.11.7 on a
            # 2-vCPU Xeon VM), which the seed's plain loop (pyref.py) does
            # not pay (issue 32).
            self.ex = self.one_worker()

    async def ateardown(self):
        try:
            if self.db is not None:
                await self.db.close()
        finally:
            try:
                if self.ex is not None:
                    self.ex.shutdown(wait=True)
            finally:
                if self.conn is not None:
                    self.conn.close()

    def teardown(self):
        try:
            super().teardown()
        finally:
            remove_tree(self.dir)
            self.dir = None


# callchain: the per-call and per-task floor. The argument is a constant
# small int, as in a hand-written loop: a growing counter would add three int
# allocations to every op (measured: ~15% of a 3-level call).


def l3(x):
    return x + 1


def l2(x):
    return l3(x) + 1


def l1(x):
    return l2(x) + 1


async def a3(x):
    return x + 1


async def a2(x):
    return await a3(x) + 1


async def a1(x):
    return await a2(x) + 1


class ChainPlain(Bench):
    sampled = False
    sample_note = "no per-op latencies: one op is below the clock's own cost"

    run = timed_loop("f(1)", "f = l1")  # unsampled: one bare loop of n ops


class ChainCoro(AsyncBench):
    sampled = False
    sample_note = "no per-op latencies: one op is below the clock's own cost"

    arun = timed_loop("await f(1)", "f = a1", is_async=True)


class ChainTask(AsyncBench):
    """create_task + await per tiny item; also the memory of a pending task."""

    async def asetup(self):
        import tracemalloc

        loop = asyncio.get_running_loop()
        gate = loop.create_future()

        async def wait():
            await gate

        k = 10000
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        ts = [loop.create_task(wait()) for _ in range(k)]
        await asyncio.sleep(0)  # every task started and parked on the gate
        self.task_bytes = (tracemalloc.get_traced_memory()[0] - base) / k
        tracemalloc.stop()
        gate.set_result(None)
        for t in ts:
            await t

    def metrics(self):
        return {"task-bytes": self.task_bytes}

    arun = timed_loop("await create(a3(1))", "create = asyncio.get_running_loop().create_task", is_async=True)


# --- issue 18: the seeds' remaining CPython findings ----------------------


class TaskEvent(AsyncBench):
    """Two asyncio tasks over a pair of asyncio.Event (the seed's 5.3 µs)."""

    arun = timed_loop("e1.set(); await e2.wait(); e2.clear()", "e1, e2 = self.e1, self.e2", is_async=True)

    async def asetup(self):
        self.e1, self.e2 = asyncio.Event(), asyncio.Event()
        self.stop = False

        async def echo():
            e1, e2 = self.e1, self.e2
            while True:
                await e1.wait()
                e1.clear()
                if self.stop:
                    return
                e2.set()

        self.t = asyncio.get_running_loop().create_task(echo())
        await asyncio.sleep(0)

    async def ateardown(self):
        self.stop = True
        self.e1.set()
        await self.t


class BusyProcess:
    """The seeds' remedy for a busy thread: the same pure-Python spin in a
    forked child. It stays in the driver's process group (a killed driver
    takes it along) and leaves by itself when the driver is gone."""

    def __init__(self, cpus):
        self.pid = fork_child(self.spin, os.getpid(), cpus)

    @staticmethod
    def spin(parent, cpus):
        pin(cpus)  # the arm's CPU set, not the measuring thread's alone
        n = 0
        while True:
            n += 1
            if n & 0xFFFFF == 0 and os.getppid() != parent:
                return

    def close(self):
        import signal

        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)


# py-call: the user's own synchronous function (p["func"], module:function,
# imported with p["path"] first on sys.path), called with the next of the
# args (p["args"], JSON; [] calls it with none) directly, through
# asyncio.to_thread, through run_in_executor on one worker thread, and
# through two hops (the call, then the result handed back through the
# worker once more: the two-hop wrapper's shape). An exception fails the
# arm with its last traceback line ("ValueError: …").

def user_func(p):
    import importlib

    mod, _, name = p["func"].partition(":")
    if p.get("path"):
        sys.path.insert(0, p["path"])
    f = getattr(importlib.import_module(mod), name)
    if not callable(f):
        raise TypeError("%s is not callable" % p["func"])
    args = json.loads(p.get("args") or "[]")
    if args:
        return f, itertools.cycle(args)
    return (lambda _k: f()), itertools.repeat(None)


def passback(v):
    return v


# Each way is (its op, the locals it binds), as in HOP_LOOPS. The call
# through the way's hops is a coroutine, one(k), made among the bound locals,
# that the loop awaits; the direct call is the plain call, no coroutine
# around it.
HOPS = "hop, ex, f = asyncio.get_running_loop().run_in_executor, self.ex, self.f\n"
PYCALL_LOOPS = {
    "direct": ("f(k)", "f = self.f"),
    "to_thread": ("await one(k)", "to_thread, f = asyncio.to_thread, self.f\nasync def one(k):\n    return await to_thread(f, k)"),
    "executor": ("await one(k)", HOPS + "async def one(k):\n    return await hop(ex, f, k)"),
    "two-hop": ("await one(k)", HOPS + "async def one(k):\n    return await hop(ex, passback, await hop(ex, f, k))"),
}


class PyCall(AsyncBench):
    async def asetup(self):
        how = choice(self.p.get("how"), PYCALL_LOOPS, "pycall: how")
        self.f, self.keys = user_func(self.p)
        self.ex = self.one_worker()
        self.use_loop(*PYCALL_LOOPS[how], keyed=True)

    async def ateardown(self):
        self.ex.shutdown(wait=True)
        await asyncio.get_running_loop().shutdown_default_executor()


# Concurrency: the seeds' compare(op_async, op_sync, n, concurrency). One op
# is one lookup; a batch is gathers (or maps) of at most CONC_CHUNK lookups,
# the seeds' 10 000, so a long repetition does not hold a million tasks.

CONC_CHUNK = 10000


class LookupOp:
    """The fast op: the seed's sqlite3 primary-key lookup on a database file,
    or the user's query on their read-only file (user_db, every row read),
    on a connection per thread, as each pool thread of the seeds had; the
    user's function (py-call); or a dict lookup (the pure-compute control)."""

    def __init__(self, op, p=None):
        choice(op, ("sqlite-file", "dict", "user", "py-call"), "op")
        self.dir = None
        self.conns = []
        self.keys = hop_keys()
        if op == "py-call":
            self.lookup, self.keys = user_func(p)
        elif op == "dict":
            d = {i: "value %d" % i for i in range(1, ROWS + 1)}
            self.lookup = lambda k: d[k]
        else:
            import sqlite3

            self.dir, path, sql, fetch, self.keys, uri = open_db("user" if op == "user" else "file", p, "lookup.db")
            connect = lambda: sqlite3.connect(path, uri=uri, check_same_thread=False)
            self.lookup = self.per_thread(connect, sql, getattr(sqlite3.Cursor, fetch))

    def per_thread(self, connect, sql, fetch):
        """lookup(k): fetch(sql, (k,)) on the calling thread's own
        connection, which connect() makes at its first lookup."""
        local = threading.local()
        lock = threading.Lock()
        conns = self.conns

        def conn_here():
            c = connect()
            with lock:
                conns.append(c)
            local.execute = c.execute
            return c.execute

        def lookup(k):
            try:
                execute = local.execute
            except AttributeError:
                execute = conn_here()
            return fetch(execute(sql, (k,)))

        return lookup

    def close(self):
        for c in self.conns:
            c.close()
        remove_tree(self.dir)


class ConcSem(AsyncBench):
    """asyncio.gather of one coroutine per lookup under asyncio.Semaphore(C),
    each lookup through asyncio.to_thread or run_in_executor (the loop's
    default executor)."""

    sampled = False
    sample_note = "no per-op latencies: C lookups are in flight at once; the figure is wall time per lookup"

    async def asetup(self):
        self.c = int(self.p["c"])
        self.how = choice(self.p.get("how", "to_thread"), ("to_thread", "executor"), "how")
        self.op = LookupOp(self.p.get("op", "sqlite-file"), self.p)

    async def arun(self, n, every, samples):
        sem, lookup = asyncio.Semaphore(self.c), self.op.lookup
        if self.how == "to_thread":
            hop = asyncio.to_thread
        else:
            ex = asyncio.get_running_loop().run_in_executor
            hop = lambda f, k: ex(None, f, k)

        async def one(k):
            async with sem:
                return await hop(lookup, k)

        gather, keys, islice = asyncio.gather, self.op.keys, itertools.islice
        t0 = pc()
        left = n
        while left > 0:
            k = min(left, CONC_CHUNK)
            await gather(*[one(x) for x in islice(keys, k)])
            left -= k
        return pc() - t0, n

    async def ateardown(self):
        try:
            await asyncio.get_running_loop().shutdown_default_executor()
        finally:
            self.op.close()


class ConcPool(Bench):
    """concurrent.futures.ThreadPoolExecutor(C).map of the plain lookup."""

    sampled = False
    sample_note = ConcSem.sample_note

    def setup(self):
        import concurrent.futures

        self.c = int(self.p["c"])
        self.op = LookupOp(self.p.get("op", "sqlite-file"), self.p)
        self.ex = concurrent.futures.ThreadPoolExecutor(max_workers=self.c)

    def run(self, n, every, samples):
        mp, lookup, keys, islice = self.ex.map, self.op.lookup, self.op.keys, itertools.islice
        t0 = pc()
        left = n
        while left > 0:
            k = min(left, CONC_CHUNK)
            for _ in mp(lookup, list(islice(keys, k))):
                pass
            left -= k
        return pc() - t0, n

    def teardown(self):
        self.ex.shutdown(wait=True)
        self.op.close()


# Event-loop lag: a loop serves requests from a few client tasks; every
# `period`-th request does X ms of pure-Python work (inline, via to_thread,
# or in a process pool), the others one byte of socket I/O. A 1 ms
# call_later timer re-armed for ever measures the loop's lag meanwhile.


def work(k):
    """Pure-Python CPU work: k iterations of an integer loop (x stays a
    small int, so every iteration costs the same)."""
    x = 0
    for i in range(k):
        x ^= i
    return x


def work_fault(k, fault):
    if fault == "crash":
        os._exit(7)
    if fault == "hang":
        time.sleep(3600)
    return work(k)


def calibrate(ms):
    """The iterations of work() that take ms milliseconds of CPU here, and
    the CPU time that count then takes. CPU time, not wall time: on a busy
    machine a preempted try would otherwise shrink the work. Each estimate
    is the least of a few tries; a second round corrects the first from a
    run of the full size. The time reported is the median of three runs
    of the final size: what one request's work typically takes."""
    goal = ms * 1e6
    k = 20000
    for tries in (5, 3):
        took = min(_cpu(work, k) for _ in range(tries))
        k = max(1, int(k * goal / max(took, 1)))
    return k, sorted(_cpu(work, k) for _ in range(3))[1]


def _cpu(f, k):
    t = time.thread_time_ns()
    f(k)
    return time.thread_time_ns() - t


class EventLoopLag(AsyncBench):
    sample_note = "per-op latencies are those of the I/O-only requests (the CPU ones are left out)"

    async def asetup(self):
        self.ms = float(self.p["work_ms"])
        self.how = choice(self.p.get("how", "inline"), ("inline", "to_thread", "process"), "how")
        self.period = int(self.p.get("period", 10))
        self.clients = int(self.p.get("clients", 4))
        self.fault = self.p.get("fault", "")
        self.k, self.work_ns = calibrate(self.ms)
        self.lags, self.timed_ns, self.timed_ops, self.loop_cpu = [], 0, 0, 0
        self.timed = False
        self.seq = 0
        self.pool = None
        self.life = ()
        import socket

        self.socks = []
        try:
            for _ in range(self.clients):
                a, b = socket.socketpair()
                self.socks.append((a, b))
                a.setblocking(False)
                b.setblocking(False)
            await self._start_pool()
        except BaseException:
            # teardown never runs for a set-up that failed
            for a, b in self.socks:
                a.close()
                b.close()
            raise

    async def _start_pool(self):
        if self.how == "process":
            import concurrent.futures
            import multiprocessing

            # One worker fewer than the CPUs (at least one): the loop keeps a CPU.
            n = max(1, len(os.sched_getaffinity(0)) - 1) if HAVE_AFFINITY else 1
            # The workers die with the driver (pool_worker_init): the
            # driver holds the life pipe's write end until the pool is shut.
            prctl_ready()
            self.life = os.pipe()
            self.pool = concurrent.futures.ProcessPoolExecutor(
                max_workers=n, mp_context=multiprocessing.get_context("fork"),
                initializer=pool_worker_init, initargs=(os.getpid(),) + self.life)
            loop = asyncio.get_running_loop()
            try:  # start the workers outside timing
                await asyncio.gather(*[loop.run_in_executor(self.pool, work, 1) for _ in range(n)])
            except BaseException:
                self._close_pool()
                raise

    def _close_pool(self):
        try:
            self.pool.shutdown(wait=True, cancel_futures=True)
        finally:
            self.pool = None
            for fd in self.life:
                os.close(fd)
            self.life = ()

    def children(self):
        procs = getattr(self.pool, "_processes", None) or {}
        return list(procs.keys())

    def begin_timed(self):
        self.timed = True

    def metrics(self):
        m = {"work-ms": self.work_ns / 1e6, "cpu-request-ratio": 1.0 / self.period}
        if self.lags:
            lags = sorted(self.lags)
            q = lambda f: lags[min(len(lags) - 1, int(f * len(lags)))] / 1e3
            m.update({"timer-lag-p50-us": q(0.50), "timer-lag-p99-us": q(0.99), "timer-lag-max-us": lags[-1] / 1e3,
                      "timer-fires": float(len(lags))})
        if self.timed_ns > 0 and self.timed_ops > 0:
            m["loop-thread-cpu-ratio"] = self.loop_cpu / self.timed_ns
            m["loop-cpu-us/request"] = self.loop_cpu / self.timed_ops / 1e3
        return m

    async def arun(self, n, every, samples):
        loop = asyncio.get_running_loop()
        k, period, fault = self.k, self.period, self.fault
        if self.how == "inline":
            async def cpu():
                work(k)
        elif self.how == "to_thread":
            async def cpu():
                await asyncio.to_thread(work, k)
        elif fault:
            async def cpu():
                await loop.run_in_executor(self.pool, work_fault, k, fault)
        else:
            async def cpu():
                await loop.run_in_executor(self.pool, work, k)
        sock_recv = loop.sock_recv
        lags = self.lags if self.timed else []
        stop = [False]

        async def prober():
            while not stop[0]:
                fut = loop.create_future()
                t = pc()
                h = loop.call_later(0.001, fut.set_result, None)
                try:
                    await fut
                except asyncio.CancelledError:
                    h.cancel()
                    return
                lags.append(pc() - t - 1_000_000)

        # Request numbers run on across batches, so a short batch (a sizing
        # batch of one op) holds its share of CPU requests, not always one.
        counter = itertools.count()
        base = self.seq
        self.seq += n

        async def client(a, b):
            send = b.send
            for i in counter:
                if i >= n:
                    return
                if (base + i) % period == period - 1:
                    await cpu()
                    continue
                s = pc()
                loop.call_soon(send, b"x")
                await sock_recv(a, 1)
                if i % every == 0:
                    samples.append(pc() - s)

        probe = loop.create_task(prober())
        await asyncio.sleep(0)
        c0 = time.thread_time_ns()
        t0 = pc()
        try:
            await asyncio.gather(*[client(a, b) for a, b in self.socks])
        finally:
            el = pc() - t0
            cpu_ns = time.thread_time_ns() - c0
            stop[0] = True
            probe.cancel()
            try:
                await probe
            except asyncio.CancelledError:
                pass
        if self.timed:
            self.timed_ns += el
            self.timed_ops += n
            self.loop_cpu += cpu_ns
        return el, n

    async def ateardown(self):
        try:
            if self.pool is not None:
                self._close_pool()
            await asyncio.get_running_loop().shutdown_default_executor()
        finally:
            for a, b in self.socks:
                a.close()
                b.close()


BENCHES = {
    "pingpong.simplequeue": lambda p: ThreadRing(p, pair=True),
    "pingpong.event": ThreadEvent,
    "pingpong.pipe-thread": lambda p: PipePair(p, fork=False),
    "pingpong.pipe-fork": lambda p: PipePair(p, fork=True),
    "pingpong.asyncio-queue": lambda p: TaskRing(p, pair=True),
    "pingpong.future": TaskFuture,
    "ring.thread": ThreadRing,
    "ring.task": TaskRing,
    "yield.task": TaskYield,
    "hop": Hop,
    "pycall": PyCall,
    "callchain.plain": ChainPlain,
    "callchain.coroutine": ChainCoro,
    "callchain.task": ChainTask,
    "pingpong.asyncio-event": TaskEvent,
    "concurrency.sem": ConcSem,
    "concurrency.pool": ConcPool,
    "eventloop.lag": EventLoopLag,
}


def load_test_benches():
    """Benches for ctxlab's own tests live outside the shipped driver: each
    module named in CTXLAB_DRIVER_TEST_BENCHES (comma-separated, found on
    PYTHONPATH) gets register(driver namespace) called, and adds its benches
    to BENCHES (internal/pydriver/testdata/testbenches.py). Unset, nothing
    is loaded."""
    names = [n for n in os.environ.get("CTXLAB_DRIVER_TEST_BENCHES", "").split(",") if n]
    if names:
        import importlib

        for n in names:
            importlib.import_module(n).register(globals())


# --- the measuring loop ---------------------------------------------------


def clock_cost():
    n = 20000
    t0 = pc()
    for _ in range(n):
        pc()
    return (pc() - t0) / n


CLOCK_NS = clock_cost()


NEVER = 1 << 62  # a sampling interval no batch reaches: no op is timed alone


def overhead_notes(every, per_op, bench):
    """Say when the timestamps inside the batch add a visible share to the
    mean: the published (seed) figures were taken with plain loops."""
    if not bench.sampled or every >= NEVER or per_op <= 0:
        return []
    share = 2 * CLOCK_NS / (every * bench.ops_per_unit * per_op)
    if share < 0.01:
        return []
    return ["not comparable with a plain loop's figure: timing every %d%s unit on its own adds about %.0f%% to the mean"
            % (every, "st" if every == 1 else "th", 100 * share)]


class Arm:
    """One arm, from its open message to its timed repetitions: the bench set
    up (pinned, with its switch interval and busy threads) until close()."""

    def __init__(self, req):
        name = req.get("bench")
        if name not in BENCHES:
            raise ValueError("unknown bench %r" % name)
        self.req = req
        self.p = p = dict(req.get("params") or {}, cpus_b=req.get("cpus_b"))
        self.bench = BENCHES[name](p)
        self.busy = []
        self.ready = False
        self.old_si = sys.getswitchinterval()
        pin(req.get("cpus"))
        pin(req.get("cpus_a"))
        self.mask = sorted(os.sched_getaffinity(0)) if HAVE_AFFINITY else None
        try:
            si = p.get("switch_interval_s")
            if si:
                sys.setswitchinterval(float(si))
            self.bench.setup()
            self.ready = True
            self.start_busy()
        except BaseException:
            self.close()
            raise

    def start_busy(self):
        n = int(self.p.get("busy", 0))
        if n <= 0:
            return
        kind = Busy
        if choice(self.p.get("busy_in", "thread"), ("thread", "process"), "busy_in") == "process":
            kind = lambda: BusyProcess(self.req.get("cpus") or BASE_MASK)
        # One at a time into the list close() stops: a start that fails
        # (EAGAIN, RLIMIT_NPROC) must not leave the earlier ones spinning
        # beside every later arm of this driver.
        for _ in range(n):
            self.busy.append(kind())

    def opened(self):
        return {"unit": self.bench.ops_per_unit, "sampled": self.bench.sampled}

    def batch(self, n):
        el, done = self.bench.run(n, NEVER, [])
        return {"batch": [done, el]}

    def timed(self, reps, ops, every, per_op):
        bench = self.bench
        if not every or not bench.sampled:
            every = NEVER
        samples, rep_ns, rep_ops = [], [], []
        vol = invol = tvol = tinvol = cvol = cinvol = 0
        migr, have_migr = 0, True
        cpu = 0  # the driver's CPU time (every thread) over the repetitions
        kids = bench.children()
        bench.begin_timed()
        for _ in range(reps):
            m0 = migrations()
            c0 = [proc_switches(k) for k in kids]
            s0 = rusage(resource.RUSAGE_SELF)
            t0 = rusage(RUSAGE_THREAD)
            p0 = time.process_time_ns()
            el, done = bench.run(ops, every, samples)
            cpu += time.process_time_ns() - p0
            t1 = rusage(RUSAGE_THREAD)
            s1 = rusage(resource.RUSAGE_SELF)
            c1 = [proc_switches(k) for k in kids]
            m1 = migrations()
            rep_ns.append(el)
            rep_ops.append(done)
            vol += s1[0] - s0[0]
            invol += s1[1] - s0[1]
            tvol += t1[0] - t0[0]
            tinvol += t1[1] - t0[1]
            for a, b in zip(c0, c1):
                if a and b:
                    cvol += b[0] - a[0]
                    cinvol += b[1] - a[1]
            if m0 is None or m1 is None:
                have_migr = False
            else:
                migr += sum(m1[t] - m0[t] for t in m1 if t in m0)
        return {
            "rep_ns": rep_ns,
            "ops": rep_ops,
            "samples_ns": samples,
            "sample_every": every if every < NEVER else 0,
            "switches": {"voluntary": vol, "involuntary": invol, "child_voluntary": cvol, "child_involuntary": cinvol},
            "thread_switches": {"voluntary": tvol, "involuntary": tinvol} if RUSAGE_THREAD is not None else None,
            "migrations": migr if have_migr else None,
            # forked children's CPU time is not the process's: not counted then
            "cpu_ns": None if kids else cpu,
            "switch_interval_s": sys.getswitchinterval(),
            "affinity": self.mask,
            "metrics": bench.metrics(),
            "notes": bench.notes() + overhead_notes(every, per_op, bench),
        }

    def close(self):
        busy, self.busy = self.busy, []
        for b in busy:
            b.close()
        try:
            if self.ready:
                self.ready = False
                self.bench.teardown()
        finally:
            sys.setswitchinterval(self.old_si)
            pin(BASE_MASK)


ARM = None  # the one arm open, or None


def close_arm():
    global ARM
    arm, ARM = ARM, None
    if arm is not None:
        arm.close()


def handle(req):
    """One message's answer; the arm is closed when its repetitions are done
    and when anything fails."""
    global ARM
    do = req.get("do")
    if do == "open":
        close_arm()
        ARM = Arm(req)
        return ARM.opened()
    if do == "close":
        close_arm()
        return {}
    if ARM is None:
        raise ValueError("no arm is open for %r" % do)
    if do == "batch":
        return ARM.batch(int(req["n"]))
    if do == "timed":
        try:
            return ARM.timed(int(req["reps"]), int(req["ops"]), int(req.get("every") or 0), float(req.get("per_op_ns") or 0))
        finally:
            close_arm()
    raise ValueError("unknown message %r" % do)


def hello():
    ft = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    gil = sys._is_gil_enabled() if hasattr(sys, "_is_gil_enabled") else True
    v = sys.version_info
    return {
        "protocol": PROTOCOL,
        "implementation": sys.implementation.name,
        "version": "%d.%d.%d" % (v.major, v.minor, v.micro),
        "full_version": sys.version.replace("\n", " "),
        "executable": sys.executable,
        "free_threaded": ft,
        "gil_enabled": gil,
        "switch_interval_s": sys.getswitchinterval(),
        "clock_ns": CLOCK_NS,
        "rusage_thread": RUSAGE_THREAD is not None,
        "affinity": HAVE_AFFINITY,
    }


def main():
    load_test_benches()
    out = sys.stdout
    out.write(json.dumps({"hello": hello()}) + "\n")
    out.flush()
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        rid = None
        try:
            req = json.loads(line)
            rid = req.get("id")
            res = handle(req)
            res.update({"id": rid, "ok": True})
        except Unsupported as e:
            close_arm()
            res = {"id": rid, "ok": False, "unsupported": str(e)}
        except Exception as e:  # reported on the arm; the driver goes on
            import traceback

            traceback.print_exc()
            close_arm()
            res = {"id": rid, "ok": False, "error": "%s: %s" % (type(e).__name__, e)}
        out.write(json.dumps(res) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
