#!/usr/bin/env bash
# A hostile-input audit of the contract in README "Exit status, bad input
# and what is written": the history as an output by roads the corpus test
# does not take, FIFOs and devices as run files, escape sequences through
# every format, validation before Python starts (a slow python3 on PATH),
# repeated, empty and non-decimal flags, nonsense runs to import, and the
# smaller things. One line per case, PASS or FAIL; root for the bind mount.
# C names the ctxlab binary (an absolute path; default: ctxlab on PATH).
ROOT=$(cd "$(dirname "$0")/.." && pwd)
C=${C:-$(command -v ctxlab)}
W=$(mktemp -d /tmp/audit.XXXX)
cd "$W"
export XDG_DATA_HOME="$W/xdg" HOME="$W"
R=$ROOT/internal/report/testdata/run.json
pass=0; fail=0
ok()   { pass=$((pass+1)); echo "PASS $*"; }
bad()  { fail=$((fail+1)); echo "FAIL $*"; }
integrity() { python3 -c "import sqlite3,sys; c=sqlite3.connect('file:'+sys.argv[1]+'?mode=ro',uri=True); print(c.execute('pragma integrity_check').fetchone()[0], c.execute('select count(*) from runs').fetchone()[0])" "$1" 2>&1; }
expect2() { # name, then the command; exit 2, nothing on stdout
  local name=$1; shift
  out=$(timeout 20 "$@" 2>err.txt); code=$?
  if [ $code -eq 2 ] && [ -z "$out" ]; then ok "$name: $(head -c 160 err.txt)"; else bad "$name: exit $code, stdout $(echo "$out" | head -c 80), stderr $(head -c 200 err.txt)"; fi
}
$C import $R --db h.db >/dev/null
$C import $R >/dev/null
# 1. the history as an output, by roads the issue did not list
expect2 "-o via /proc/self/cwd" $C show $R --db h.db -o /proc/self/cwd/h.db
expect2 "-o ./h.db" $C export last --db h.db -o ./h.db
ln -s h.db dblink; expect2 "--db through a link, -o the real file" $C show last --db dblink -o h.db
ln -s h.db-shm shmlink; expect2 "-o a link to the -shm" $C show last --db h.db -o shmlink
expect2 "report --chart -o history" $C report last --db h.db --chart pingpong -o h.db
mkdir -p bind; mount --bind "$W" bind 2>/dev/null && { expect2 "-o through a bind mount" $C show last --db h.db -o bind/h.db; umount bind; }
expect2 "-o the default via .." $C show $R -o xdg/ctxlab/../ctxlab/history.db
expect2 "-o journal" $C compare $R $R --db h.db -o h.db-journal
echo "history: $(integrity h.db) / default: $(integrity xdg/ctxlab/history.db)"
# 2. FIFOs, sockets and devices as run files
mkfifo f1 f2
expect2 "compare fifo fifo" $C compare f1 f2
expect2 "report ./fifo" $C report ./f1
expect2 "budget --run bare fifo" $C budget --rate 1/s --run f1
expect2 "import /dev/stdin (a pipe)" sh -c "echo {} | $C import /dev/stdin"
expect2 "show /dev/zero" $C show /dev/zero
expect2 "history --db fifo" $C history --db f1
# 3. text from outside
python3 - "$R" <<'PY'
import json,sys
r=json.load(open(sys.argv[1]))
r['id']='20261202T000000-hostil'
r['env']['hostname']='h\x1b]8;;http://evil\x07link\x1b]8;;\x07\u009b2J'
r['env']['cpu_model']='cpu\u2067rtl\u2069\x1b[5m'
for a in r['arms'][:2]:
    a['name']=a['name']+'\x1b[31m\u009b1m'
r['warnings']=(r.get('warnings') or [])+['warn\x1bP+q\x1b\\ dcs']
json.dump(r,open('hostile.json','w'))
PY
for cmd in "import hostile.json --db h2.db" "show hostile.json" "show hostile.json --format csv" "show hostile.json --format markdown" "show hostile.json --format bench" "show hostile.json --format json" "history --db h2.db" "history --db h2.db --format csv" "history --db h2.db --format json" "compare $R hostile.json" "budget --rate 1000/s --run hostile.json" "report hostile.json"; do
  $C $cmd > out.bin 2>&1
  if python3 - out.bin <<'PY'
import sys
b=open(sys.argv[1],'rb').read()
s=b.decode('utf-8','surrogateescape')
badc=[c for c in s if (ord(c)<0x20 and c not in '\n\t') or ord(c)==0x7f or 0x80<=ord(c)<=0x9f or 0x202a<=ord(c)<=0x202e or 0x2066<=ord(c)<=0x2069 or 0xdc80<=ord(c)<=0xdcff]
sys.exit(1 if badc else 0)
PY
  then ok "inert: $cmd"; else bad "raw control in: $cmd"; fi
done
# 4. validation before anything: a slow python3 on PATH
mkdir -p slowbin; printf '#!/bin/sh\necho started >> %s/py.log\nsleep 20\nexec /usr/bin/python3 "$@"\n' "$W" > slowbin/python3; chmod +x slowbin/python3
for a in "run python/pingpong --set nosuchopt=1" "run python/pingpong --cpus 99" "run python/pingpong -o $W/h.db --db $W/h.db" "run pingpong/pythread/* --format nope"; do
  start=$(date +%s.%N); PATH="$W/slowbin:$PATH" timeout 30 $C $a >/dev/null 2>err.txt; code=$?; took=$(python3 -c "print(round($(date +%s.%N)-$start,1))")
  if [ $code -eq 2 ] && [ ! -s py.log ]; then ok "no python before refusing: $a (${took}s)"; else bad "$a: exit $code, ${took}s, python started: $(wc -l < py.log 2>/dev/null)"; fi
done
# 5. flags
expect2 "--timeout twice" $C run --timeout 1s --timeout 2h
expect2 "--format twice" $C show $R --format json --format table
expect2 "--benchtime empty" $C run --benchtime ''
expect2 "watch --name empty" $C watch --name ''
expect2 "watch --count hex" $C watch 1 --count 0x5
expect2 "history --limit 1e3" $C history --limit 1e3
expect2 "--set same key via python alias" $C run --set python=python3 --set python=python3
expect2 "serve --interval twice" $C serve --interval 1m --interval 2m
# 6. import nonsense, new kinds
python3 - "$R" <<'PY'
import json,sys,copy
r=json.load(open(sys.argv[1]))
def w(name,f):
    x=copy.deepcopy(r); f(x); json.dump(x,open(name,'w'))
w('id-space.json',lambda x:x.__setitem__('id','a b'))
w('id-dash.json',lambda x:x.__setitem__('id','-rf'))
w('empty-arm.json',lambda x:x['arms'][0].__setitem__('name',''))
w('huge-reps.json',lambda x:x['arms'][0].__setitem__('median',1e300))
w('neg-switch.json',lambda x:x['arms'][0].__setitem__('rep_means',[1.0,-2.0,3.0]))
w('min-above-max.json',lambda x:x['arms'][0].update(min=9e9,max=1.0))
w('bad-status.json',lambda x:x['arms'][0].__setitem__('status','great'))
PY
for f in id-space id-dash empty-arm huge-reps neg-switch min-above-max bad-status; do expect2 "import $f" $C import $f.json --db h3.db; done
[ -e h3.db ] && echo "note: h3.db exists: $(integrity h3.db)"
# 7. smaller things
expect2 "completion nosh" $C completion nosh
expect2 "report png into .svg" $C report $R --chart pingpong --format png -o x.svg
out=$($C run pingpong/goroutine/chan/gomaxprocs=1 --reps 1 --benchtime 1ms --no-store 2>/dev/null); echo "$out" | grep -q 'ctxlab show' && bad "--no-store still points at show" || ok "--no-store does not point at show"
echo "== $pass passed, $fail failed ($W)"
