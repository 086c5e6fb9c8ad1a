/* ctxlab's CPython probe: its call counter, in C (docs/pyprobe.md).

   ctxlab compiles this for the interpreter it probes, where a C compiler
   and the interpreter's headers are there (internal/pyprobe/counter.go),
   and the probe loads it without the import system (probe.py's
   _load_counter): no sys.modules entry, nothing for -X importtime.

   A Counter stands in for one of asyncio's methods (call_soon_threadsafe,
   run_in_executor) or aiosqlite's Connection._execute. Out of the probe's
   windows it calls the original and then counts the call in a table of its
   own, by what identifies the call's site (the callback's code, a builtin
   method's definition and its object's type, and for run_in_executor the
   executor's type and to_thread's shape) and, for call_soon_threadsafe,
   the calling thread (0: the loop's own). The first call of a key asks the
   probe's Python for the site's id (resolve). In a window (timing set) the
   Counter hands the call to the probe's Python wrapper, which counts and
   times it. counts() gives the table's counts by site and thread; the
   probe adds them to its own at every flush.

   Counting in Python cost a program that does nothing but hop 2-3% more
   time; the same count in C, nothing measurable (docs/pyprobe.md, tenth
   session). The table is touched with the GIL held: a free-threaded build
   is not given one (the probe counts in Python there). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "pythread.h"
#include "structmember.h"
#include <stddef.h>
#include <stdint.h>

#if PY_VERSION_HEX < 0x03090000
#define PyObject_Vectorcall _PyObject_Vectorcall
#define Py_TPFLAGS_HAVE_VECTORCALL _Py_TPFLAGS_HAVE_VECTORCALL
#endif
#if PY_VERSION_HEX < 0x030A0000
static inline PyObject *Py_NewRef(PyObject *o) {
    Py_INCREF(o);
    return o;
}
static inline PyObject *Py_XNewRef(PyObject *o) {
    Py_XINCREF(o);
    return o;
}
#endif

enum { CST = 0, RIE = 1, SQL = 2 };
enum { PLAIN = 1, PARTIAL = 2, TO_THREAD = 3 }; /* run_in_executor's shapes */

/* One key's count. own holds what a and b point at alive (a code object,
   a type), so that no other object takes their address. */
typedef struct {
    void *a, *b;
    long long c;
    PyObject *own[2];
    long long sid, n;
} slot;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *orig, *timed, *resolve;
    int kind, timing;
    Py_ssize_t cap, used;
    slot *tab;
} Counter;

static PyObject *s_thread_id, *s_default_executor, *s_func, *s_args, *s_doc;
static PyObject *partial_t, *context_t; /* functools.partial, contextvars.Context (set_types) */

static size_t hash3(void *a, void *b, long long c) {
    uint64_t h = (uint64_t)(uintptr_t)a * 0x9E3779B97F4A7C15ull;
    h ^= (uint64_t)(uintptr_t)b * 0xC2B2AE3D27D4EB4Full;
    h ^= (uint64_t)c * 0x165667B19E3779F9ull;
    return (size_t)(h ^ (h >> 29));
}

static slot *find(Counter *w, void *a, void *b, long long c) {
    size_t m = (size_t)w->cap - 1;
    for (size_t i = hash3(a, b, c) & m;; i = (i + 1) & m) {
        slot *s = &w->tab[i];
        if (s->sid == 0 || (s->a == a && s->b == b && s->c == c))
            return s;
    }
}

static int grow(Counter *w) {
    Py_ssize_t cap = w->cap ? w->cap * 2 : 64;
    slot *old = w->tab, *tab = PyMem_Calloc((size_t)cap, sizeof(slot));
    if (tab == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t ocap = w->cap;
    w->tab = tab;
    w->cap = cap;
    for (Py_ssize_t i = 0; i < ocap; i++)
        if (old[i].sid != 0)
            *find(w, old[i].a, old[i].b, old[i].c) = old[i];
    PyMem_Free(old);
    return 0;
}

/* What identifies a callable's site without Python code: a function's or
   bound method's code, a builtin method's definition and its object's
   type. 0 for any other callable: its site is resolved each call. */
static int callable_key(PyObject *f, void **a, void **b, PyObject **own) {
    if (PyMethod_Check(f))
        f = PyMethod_GET_FUNCTION(f);
    if (PyFunction_Check(f)) {
        *own = PyFunction_GET_CODE(f);
        *a = *own;
        *b = NULL;
        return 1;
    }
    if (PyCFunction_Check(f)) {
        PyObject *self = PyCFunction_GET_SELF(f);
        *a = ((PyCFunctionObject *)f)->m_ml;
        *own = self != NULL ? (PyObject *)Py_TYPE(self) : NULL;
        *b = *own;
        return 1;
    }
    return 0;
}

/* run_in_executor's key: the function the thread runs (to_thread's
   partial(Context.run, f) is f), its shape, the executor's type (None: the
   loop's default one, which exists once the original has run). */
static int rie_key(PyObject *loop, PyObject *ex, PyObject *func, void **a, void **b, long long *c, PyObject **own) {
    PyObject *ext = NULL;
    if (ex == Py_None) {
        ext = PyObject_GetAttr(loop, s_default_executor);
        if (ext == NULL) {
            PyErr_Clear();
            return 0;
        }
        *b = Py_TYPE(ext);
        Py_DECREF(ext);
    } else
        *b = Py_TYPE(ex);
    own[1] = (PyObject *)*b;
    *c = PLAIN;
    if (partial_t != NULL && Py_TYPE(func) == (PyTypeObject *)partial_t) {
        PyObject *fn = PyObject_GetAttr(func, s_func), *args = PyObject_GetAttr(func, s_args);
        int ok = 0;
        if (fn != NULL && args != NULL && PyTuple_Check(args)) {
            PyObject *self = PyCFunction_Check(fn) ? PyCFunction_GET_SELF(fn) : NULL;
            if (self != NULL && (PyObject *)Py_TYPE(self) == context_t && PyTuple_GET_SIZE(args) > 0) {
                *c = TO_THREAD;
                Py_DECREF(fn);
                fn = Py_NewRef(PyTuple_GET_ITEM(args, 0));
            } else
                *c = PARTIAL;
            void *ignored;
            ok = PyFunction_Check(fn) && callable_key(fn, a, &ignored, own);
        }
        if (fn == NULL || args == NULL)
            PyErr_Clear();
        Py_XDECREF(fn);
        Py_XDECREF(args);
        return ok;
    }
    void *ignored;
    return PyFunction_Check(func) || PyMethod_Check(func) ? callable_key(func, a, &ignored, own) && *a != NULL : 0;
}

/* The calling thread, as the probe keys call_soon_threadsafe: 0 for the
   loop's own thread. */
static long long caller(PyObject *loop) {
    unsigned long tid = PyThread_get_thread_ident();
    PyObject *lt = PyObject_GetAttr(loop, s_thread_id);
    if (lt == NULL) {
        PyErr_Clear();
        return (long long)tid;
    }
    int same = PyLong_Check(lt) && PyLong_AsUnsignedLong(lt) == tid;
    if (PyErr_Occurred())
        PyErr_Clear();
    Py_DECREF(lt);
    return same ? 0 : (long long)tid;
}

/* The positional arguments a call's key is made of: the object, and the
   callback (call_soon_threadsafe, aiosqlite) or the executor and the
   function (run_in_executor). */
static Py_ssize_t need(Counter *w) { return w->kind == RIE ? 3 : 2; }

/* Counts one call of args (the original succeeded; it has need(w)
   positional arguments). */
static int count(Counter *w, PyObject *const *args) {
    void *a = NULL, *b = NULL;
    long long c = 0;
    PyObject *own[2] = {NULL, NULL};
    int keyed = 0;
    if (w->kind == RIE)
        keyed = rie_key(args[0], args[1], args[2], &a, &b, &c, own);
    else {
        keyed = callable_key(args[1], &a, &b, &own[0]);
        if (w->kind == CST)
            c = caller(args[0]);
    }
    if (keyed) {
        slot *s = find(w, a, b, c);
        if (s->sid != 0) {
            s->n++;
            return 0;
        }
    }
    /* first sight of this key, or a callable the table cannot key: the
       probe's Python names the site (and may let another thread run) */
    PyObject *r = PyObject_Vectorcall(w->resolve, args, (size_t)need(w), NULL);
    if (r == NULL)
        return -1;
    long long sid = PyLong_AsLongLong(r);
    Py_DECREF(r);
    if (sid <= 0)
        return PyErr_Occurred() ? -1 : 0;
    if (!keyed) { /* counted by site alone */
        a = NULL;
        b = (void *)(intptr_t)sid;
        own[0] = own[1] = NULL;
    }
    if ((w->used + 1) * 2 > w->cap && grow(w) < 0)
        return -1;
    slot *s = find(w, a, b, c);
    if (s->sid == 0) {
        s->a = a;
        s->b = b;
        s->c = c;
        s->sid = sid;
        s->own[0] = Py_XNewRef(own[0]);
        s->own[1] = Py_XNewRef(own[1]);
        w->used++;
    }
    s->n++;
    return 0;
}

static PyObject *counter_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Counter *w = (Counter *)self;
    /* in a window, and for a call that names the callback by keyword, the
       Python wrapper (which counts in Python out of a window) */
    if (w->timing || (Py_ssize_t)PyVectorcall_NARGS(nargsf) < need(w))
        return PyObject_Vectorcall(w->timed, args, nargsf, kwnames);
    PyObject *r = PyObject_Vectorcall(w->orig, args, nargsf, kwnames);
    if (r == NULL) /* a call that raised made no hop: not counted */
        return NULL;
    if (count(w, args) < 0) {
        /* the probe never raises into the program: this call goes uncounted */
        PyErr_Clear();
    }
    return r;
}

static PyObject *counter_new(PyTypeObject *t, PyObject *a, PyObject *k) {
    PyObject *orig, *timed, *resolve;
    int kind;
    if (!PyArg_ParseTuple(a, "OOiO", &orig, &timed, &kind, &resolve))
        return NULL;
    if (kind < CST || kind > SQL) {
        PyErr_SetString(PyExc_ValueError, "kind: 0, 1 or 2");
        return NULL;
    }
    Counter *w = (Counter *)t->tp_alloc(t, 0);
    if (w == NULL)
        return NULL;
    w->orig = Py_NewRef(orig);
    w->timed = Py_NewRef(timed);
    w->resolve = Py_NewRef(resolve);
    w->kind = kind;
    w->vectorcall = counter_call;
    if (grow(w) < 0) {
        Py_DECREF(w);
        return NULL;
    }
    return (PyObject *)w;
}

static void counter_dealloc(Counter *w) {
    for (Py_ssize_t i = 0; i < w->cap; i++) {
        Py_XDECREF(w->tab[i].own[0]);
        Py_XDECREF(w->tab[i].own[1]);
    }
    PyMem_Free(w->tab);
    Py_XDECREF(w->orig);
    Py_XDECREF(w->timed);
    Py_XDECREF(w->resolve);
    Py_TYPE(w)->tp_free((PyObject *)w);
}

/* A method as the original is: bound to the object it is got from. */
static PyObject *counter_get(PyObject *self, PyObject *obj, PyObject *type) {
    if (obj == NULL || obj == Py_None)
        return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

/* The original's attributes (__name__, __qualname__, __module__ …). */
static PyObject *counter_getattro(PyObject *self, PyObject *name) {
    PyObject *r = PyObject_GenericGetAttr(self, name);
    if (r == NULL && PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyErr_Clear();
        r = PyObject_GetAttr(((Counter *)self)->orig, name);
    }
    return r;
}

static PyObject *counter_doc(Counter *w, void *unused) { return PyObject_GetAttr(w->orig, s_doc); }

/* counts() -> [(site, thread key, calls)], every call counted so far, a
   row a key (thread key -1 but for call_soon_threadsafe). */
static PyObject *counter_counts(Counter *w, PyObject *unused) {
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = 0; out != NULL && i < w->cap; i++) {
        slot *s = &w->tab[i];
        if (s->sid == 0)
            continue;
        PyObject *row = Py_BuildValue("(LLL)", s->sid, w->kind == CST ? s->c : -1LL, s->n);
        if (row == NULL || PyList_Append(out, row) < 0)
            Py_CLEAR(out);
        Py_XDECREF(row);
    }
    return out;
}

static PyMethodDef counter_methods[] = {
    {"counts", (PyCFunction)counter_counts, METH_NOARGS, NULL},
    {NULL},
};

static PyMemberDef counter_members[] = {
    {"timing", T_INT, offsetof(Counter, timing), 0, NULL},
    {"__wrapped__", T_OBJECT, offsetof(Counter, orig), READONLY, NULL},
    {NULL},
};

static PyGetSetDef counter_getset[] = {
    {"__doc__", (getter)counter_doc, NULL, NULL, NULL},
    {NULL},
};

static PyTypeObject CounterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_ctxlab_ccount.Counter",
    .tp_basicsize = sizeof(Counter),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_METHOD_DESCRIPTOR | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = counter_new,
    .tp_dealloc = (destructor)counter_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Counter, vectorcall),
    .tp_descr_get = counter_get,
    .tp_getattro = counter_getattro,
    .tp_methods = counter_methods,
    .tp_members = counter_members,
    .tp_getset = counter_getset,
};

/* set_types(functools.partial, contextvars.Context): to_thread's shape. */
static PyObject *set_types(PyObject *m, PyObject *args) {
    PyObject *p, *c;
    if (!PyArg_ParseTuple(args, "OO", &p, &c))
        return NULL;
    Py_XSETREF(partial_t, Py_NewRef(p));
    Py_XSETREF(context_t, Py_NewRef(c));
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"set_types", set_types, METH_VARARGS, NULL},
    {NULL},
};

static int module_exec(PyObject *m) {
    if (PyType_Ready(&CounterType) < 0)
        return -1;
    if (s_thread_id == NULL) {
        s_thread_id = PyUnicode_InternFromString("_thread_id");
        s_default_executor = PyUnicode_InternFromString("_default_executor");
        s_func = PyUnicode_InternFromString("func");
        s_args = PyUnicode_InternFromString("args");
        s_doc = PyUnicode_InternFromString("__doc__");
        if (!s_thread_id || !s_default_executor || !s_func || !s_args || !s_doc)
            return -1;
    }
    Py_INCREF(&CounterType);
    if (PyModule_AddObject(m, "Counter", (PyObject *)&CounterType) < 0) {
        Py_DECREF(&CounterType);
        return -1;
    }
    return 0;
}

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, module_exec},
    {0, NULL},
};

/* Multi-phase: a module made from its spec, which the import system's
   sys.modules never holds. */
static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_ctxlab_ccount", NULL, 0, module_methods, module_slots,
};

PyMODINIT_FUNC PyInit__ctxlab_ccount(void) { return PyModuleDef_Init(&module_def); }
