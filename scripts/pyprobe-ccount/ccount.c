#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "pythread.h"
#include <stddef.h>

/* ctxlab: a spike (docs/pyprobe.md, tenth session), not part of the probe.
   A method-like wrapper in C that forwards a call to orig and then
   counts it, kind 0 (pass through), 1 (one count), 2 (count by the callback's
   code and the calling thread, as the probe's call_soon_threadsafe wrapper,
   or by the to_thread function's code for run_in_executor). */

typedef struct { void *code; unsigned long tid; long long n; } slot;

typedef struct {
    PyObject_HEAD
    PyObject *orig;
    int kind, rie;
    long long n;
    slot tab[256];
    vectorcallfunc vectorcall;
} CW;

static PyObject *thread_id_str, *func_str, *args_str;

static void count_key(CW *w, void *code, unsigned long tid) {
    size_t h = (((size_t)code >> 4) ^ tid) & 255;
    for (int i = 0; i < 256; i++) {
        slot *s = &w->tab[(h + i) & 255];
        if (s->code == code && s->tid == tid) { s->n++; return; }
        if (s->code == NULL) { s->code = code; s->tid = tid; s->n = 1; return; }
    }
}

static PyObject *cw_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    CW *w = (CW *)self;
    PyObject *r = PyObject_Vectorcall(w->orig, args, nargsf, kwnames);
    if (r == NULL || w->kind == 0) return r;
    if (w->kind == 1) { w->n++; return r; }
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (n < 2) return r;
    if (!w->rie) {
        PyObject *cb = args[1];
        void *code = PyFunction_Check(cb) ? (void *)PyFunction_GET_CODE(cb) : (void *)Py_TYPE(cb);
        unsigned long tid = PyThread_get_thread_ident();
        PyObject *lt = PyObject_GetAttr(args[0], thread_id_str);
        unsigned long same = 0;
        if (lt) { same = PyLong_AsUnsignedLong(lt) == tid; Py_DECREF(lt); } else PyErr_Clear();
        count_key(w, code, same ? 0 : tid);
    } else if (n >= 3) {
        PyObject *f = args[2];
        void *code = (void *)Py_TYPE(f);
        PyObject *fa = PyObject_GetAttr(f, args_str);  /* partial.args */
        if (fa && PyTuple_Check(fa) && PyTuple_GET_SIZE(fa) > 0) {
            PyObject *inner = PyTuple_GET_ITEM(fa, 0);
            if (PyFunction_Check(inner)) code = (void *)PyFunction_GET_CODE(inner);
        } else PyErr_Clear();
        Py_XDECREF(fa);
        count_key(w, code, 0);
    }
    return r;
}

static PyObject *cw_new(PyTypeObject *t, PyObject *a, PyObject *k) {
    PyObject *orig; int kind = 0, rie = 0;
    if (!PyArg_ParseTuple(a, "Oi|i", &orig, &kind, &rie)) return NULL;
    CW *w = (CW *)t->tp_alloc(t, 0);
    if (!w) return NULL;
    Py_INCREF(orig); w->orig = orig; w->kind = kind; w->rie = rie;
    w->vectorcall = cw_vectorcall;
    return (PyObject *)w;
}

static void cw_dealloc(CW *w) { Py_XDECREF(w->orig); Py_TYPE(w)->tp_free((PyObject *)w); }

static PyObject *cw_get(PyObject *self, PyObject *obj, PyObject *type) {
    if (obj == NULL || obj == Py_None) { Py_INCREF(self); return self; }
    return PyMethod_New(self, obj);
}

static PyObject *cw_total(CW *w, PyObject *unused) {
    long long t = w->n;
    for (int i = 0; i < 256; i++) t += w->tab[i].n;
    return PyLong_FromLongLong(t);
}

static PyMethodDef cw_methods[] = {{"total", (PyCFunction)cw_total, METH_NOARGS, NULL}, {NULL}};

static PyTypeObject CWType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ccount.Counted",
    .tp_basicsize = sizeof(CW),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_METHOD_DESCRIPTOR | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = cw_new,
    .tp_dealloc = (destructor)cw_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(CW, vectorcall),
    .tp_descr_get = cw_get,
    .tp_methods = cw_methods,
};

static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "ccount", NULL, -1, NULL};

PyMODINIT_FUNC PyInit_ccount(void) {
    if (PyType_Ready(&CWType) < 0) return NULL;
    thread_id_str = PyUnicode_InternFromString("_thread_id");
    func_str = PyUnicode_InternFromString("func");
    args_str = PyUnicode_InternFromString("args");
    PyObject *m = PyModule_Create(&mod);
    Py_INCREF(&CWType);
    PyModule_AddObject(m, "Counted", (PyObject *)&CWType);
    return m;
}
