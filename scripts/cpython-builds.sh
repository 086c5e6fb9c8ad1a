#!/usr/bin/env bash
# Both builds of one CPython version — the GIL build and the free-threaded
# one (--disable-gil), the same configure options apart from that — from
# Debian's source package, into a cache outside the repo, reused when
# present and verified (docs/python.md, "The free-threaded build, for real";
# the method is /work/shared/notes/cpython-from-debian-source.md's).
#
#   scripts/cpython-builds.sh            # prints CTXLAB_PYTHON_GIL=… and CTXLAB_PYTHON_FT=…
#   eval "$(scripts/cpython-builds.sh)"  # and the tests use them (internal/testpy)
#
# CTXLAB_CPYTHON_CACHE: the cache (default ${XDG_CACHE_HOME:-~/.cache}/ctxlab/cpython).
# CTXLAB_CPYTHON_SUITE, CTXLAB_CPYTHON_PACKAGE: Debian's suite and source
# package (trixie, python3.13). The machine's own apt sources are not
# touched: the source comes through a private sources list and state.
# Needs: apt-get, and the build dependencies (libffi-dev libsqlite3-dev
# zlib1g-dev libssl-dev libbz2-dev liblzma-dev, which .ci/run installs).
# Cost on a 2-vCPU VM: about 4 minutes of CPU a build, 9 minutes of wall
# time for both at make -j2; nothing when the cache holds them.
set -euo pipefail
suite="${CTXLAB_CPYTHON_SUITE:-trixie}"
pkg="${CTXLAB_CPYTHON_PACKAGE:-python3.13}"
cache="${CTXLAB_CPYTHON_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ctxlab/cpython}"
minor="${pkg#python}"   # 3.13

# verify PY WANT_GIL: the interpreter runs, has what ctxlab's driver and
# tests import, and its GIL is as wanted at run time.
verify() {
  "$1" -c "import sys, sqlite3, asyncio, ctypes, json, resource, sysconfig
gil = sys._is_gil_enabled() if hasattr(sys, '_is_gil_enabled') else True
sys.exit(0 if gil == $2 else 1)" 2>/dev/null
}

# the installed pair, if the cache holds it and it verifies
found() {
  local d
  for d in "$cache"/*-gil; do
    [ -d "$d" ] || continue
    local v="${d##*/}"; v="${v%-gil}"
    if verify "$d/bin/python$minor" True && verify "$cache/$v-ft/bin/python${minor}t" False; then
      echo "CTXLAB_PYTHON_GIL=$d/bin/python$minor"
      echo "CTXLAB_PYTHON_FT=$cache/$v-ft/bin/python${minor}t"
      return 0
    fi
  done
  return 1
}

if found; then exit 0; fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
uri=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
uri="${uri:-http://deb.debian.org/debian}"
echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $suite main" > "$work/src.list"
mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
A=(-o Dir::Etc::sourcelist="$work/src.list" -o Dir::Etc::sourceparts=- -o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache")
apt-get "${A[@]}" update -qq >&2
(cd "$work" && apt-get "${A[@]}" source --download-only "$pkg" >&2 2>&1)
tar -C "$work" -xf "$work"/"${pkg}"_*.orig.tar.xz
src=$(echo "$work"/Python-*/)
version=$(basename "$src"); version="${version#Python-}"
mkdir -p "$cache"
for build in gil ft; do
  prefix="$cache/$version-$build"
  opt=(); [ "$build" = ft ] && opt=(--disable-gil)
  rm -rf "$prefix" "$work/build-$build"
  mkdir -p "$work/build-$build"
  echo "== building CPython $version ($build) into $prefix" >&2
  (cd "$work/build-$build" && "$src/configure" "${opt[@]}" --prefix="$prefix" >/dev/null \
    && make -j"$(nproc)" >/dev/null 2>&1 && make install >/dev/null 2>&1)
done
found || { echo "cpython-builds: the builds of $version did not verify" >&2; exit 1; }
