"""Writes to stdout and stderr what a probe must not change — its
environment, sys.path, which sitecustomize ran, its open descriptors — and
exits with status 3."""
import os
import sys

print("stdout line 1")
print("PYTHONPATH=%r" % os.environ.get("PYTHONPATH"))
print("CTXLAB_PYPROBE=%r" % os.environ.get("CTXLAB_PYPROBE"))
print("sitecustomize=%r" % (getattr(sys.modules.get("sitecustomize"), "__file__", None),))
print("user_sitecustomize_ran=%r" % getattr(sys, "user_sitecustomize_ran", False))
print("ctxlab on sys.path=%r" % any("ctxlab-pyprobe" in p for p in sys.path))
print("json imported=%r" % ("json" in sys.modules))
print("first free fd=%d" % os.open(os.devnull, os.O_RDONLY))
sys.stderr.write("stderr line 1\n")
sys.exit(3)
