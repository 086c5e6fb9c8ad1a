# ctxlab's CPython probe loader (docs/pyprobe.md). ctxlab diagnose puts this
# file's directory first on PYTHONPATH, so site imports it as sitecustomize.
# It starts the probe (_ctxlab_pyprobe.py, beside it, run as a module that
# sys.modules does not list), takes its directory off
# sys.path and PYTHONPATH again, and then imports the sitecustomize this one
# shadows, so that one runs as it would have; when there is none, this module
# ends with the ImportError site ignores, so sys.modules looks as it would.
# Nothing here prints: a probe that cannot start tells ctxlab over its pipe.
import sys


def _ctxlab_start():
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    probe = None
    try:
        if sys.version_info >= (3, 8) and sys.implementation.name == "cpython":
            # Run without the import system, so that neither sys.modules
            # nor -X importtime shows the probe to the program.
            path = os.path.join(here, "_ctxlab_pyprobe.py")
            with open(path, "rb") as f:
                code = compile(f.read(), path, "exec")
            probe = type(sys)("_ctxlab_pyprobe")
            probe.__file__ = path
            exec(code, probe.__dict__)
            probe.start(here)
        else:
            _ctxlab_say(os, "unsupported", "%s %d.%d is not CPython 3.8 or newer" % (
                getattr(getattr(sys, "implementation", None), "name", "python"), sys.version_info[0], sys.version_info[1]))
    except BaseException as e:
        _ctxlab_say(os, "failed", "%s: %s" % (type(e).__name__, e), getattr(probe, "_fd", -1))
    finally:
        sys.path[:] = [p for p in sys.path if p != here]
        sys.path_importer_cache.pop(here, None)
        _ctxlab_restore(os, here)


def _ctxlab_say(os, kind, why, moved=-1):
    # The probe is not running (kind "unsupported": not a CPython it
    # supports; "failed": it raised as it started): say why, once, on the
    # pipe (where the probe moved it, if it did), and write nothing else.
    fd = str(moved) if moved >= 0 else os.environ.get("CTXLAB_PYPROBE", "").split(",")[0]
    if fd.isdigit():
        why = "".join(c if c >= " " else " " for c in why).replace("\\", "\\\\").replace('"', '\\"')
        body = ('{"kind":"%s","pid":%d,"reason":"%s"}' % (kind, os.getpid(), why)).encode()
        try:
            os.fstat(int(fd))
            os.write(int(fd), len(body).to_bytes(4, "little") + b"J" + body)
            os.close(int(fd))
        except OSError:
            pass


def _ctxlab_restore(os, here):
    # The program sees its own environment: PYTHONPATH as it was, no
    # CTXLAB_PYPROBE, so its own children run without the probe.
    os.environ.pop("CTXLAB_PYPROBE", None)
    pp = os.environ.get("PYTHONPATH")
    if pp is not None:
        if pp == here:
            del os.environ["PYTHONPATH"]
        elif pp.startswith(here + os.pathsep):
            os.environ["PYTHONPATH"] = pp[len(here) + 1:]


_ctxlab_start()
del _ctxlab_start, _ctxlab_say, _ctxlab_restore
# The sitecustomize this one shadows (the system's, a virtualenv's, the
# user's own on PYTHONPATH): imported here so it runs as it would have, its
# errors reported by site exactly as without ctxlab.
del sys.modules["sitecustomize"]
import sitecustomize  # noqa: E402,F401  (the next one on sys.path; ImportError when none)
