#!/usr/bin/env bash
# Usage: go build -o ctxlab ./cmd/ctxlab && go test -c -o mech.test ./internal/mech &&
#        CTX=./ctxlab MECH=./mech.test bash scripts/harness-compare.sh
# Needs perf (linux-perf) and taskset; prints a markdown table of ratios.
# Interleaved rounds: ctxlab arms with --cpus 0 against their references.
set -euo pipefail
CTX=${CTX:-ctxlab}; MECH=${MECH:-./mech.test}; ROUNDS=${ROUNDS:-3}; OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
for r in $(seq 1 $ROUNDS); do
  $CTX run 'pingpong/thread/pipe/unpinned' 'pingpong/process/pipe/unpinned' 'pingpong/thread/futex/unpinned' 'pingpong/thread/eventfd/unpinned' 'pingpong/goroutine/chan/gomaxprocs=1' --cpus 0 --reps 5 --no-store --format json -o $OUT/ctx$r.json >/dev/null 2>$OUT/ctx$r.err || { echo "ctxlab run failed:"; cat $OUT/ctx$r.err; exit 1; }
  taskset -c 0 perf bench sched pipe -T -l 300000 > $OUT/perfT$r.txt 2>&1
  taskset -c 0 perf bench sched pipe -l 300000 > $OUT/perfP$r.txt 2>&1
  $MECH -test.run XXX -test.bench 'RawFutex|RawEventfd' -test.count 3 -test.cpu 4 > $OUT/raw$r.txt 2>&1
  $MECH -test.run XXX -test.bench 'PlainChan' -test.count 3 -test.cpu 1 > $OUT/chan$r.txt 2>&1
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import json,re,sys,statistics as st
out,R=sys.argv[1],int(sys.argv[2])
rows={}
def add(k,kind,v): rows.setdefault(k,{}).setdefault(kind,[]).append(v)
for r in range(1,R+1):
    run=json.load(open(f"{out}/ctx{r}.json"))
    for a in run['arms']:
        add(a['name'],'ctx',a['median'])
    def perf(f):
        t=open(f).read(); m=re.search(r'([\d.]+) usecs/op',t); return float(m.group(1))*1000
    add('pingpong/thread/pipe/unpinned','ref',perf(f"{out}/perfT{r}.txt"))
    add('pingpong/process/pipe/unpinned','ref',perf(f"{out}/perfP{r}.txt"))
    for line in open(f"{out}/raw{r}.txt"):
        m=re.match(r'BenchmarkRaw(Futex|Eventfd)\S*\s+\d+\s+([\d.]+) ns/op',line)
        if m: add('pingpong/thread/%s/unpinned'%m.group(1).lower(),'refr%d'%r,float(m.group(2)))
    for line in open(f"{out}/chan{r}.txt"):
        m=re.match(r'BenchmarkPlainChan\S*\s+\d+\s+([\d.]+) ns/op',line)
        if m: add('pingpong/goroutine/chan/gomaxprocs=1','refr%d'%r,float(m.group(1)))
refname={'pingpong/thread/pipe/unpinned':'perf bench sched pipe -T','pingpong/process/pipe/unpinned':'perf bench sched pipe',
 'pingpong/thread/futex/unpinned':'raw futex loop (BenchmarkRawFutex)','pingpong/thread/eventfd/unpinned':'raw eventfd loop (BenchmarkRawEventfd)',
 'pingpong/goroutine/chan/gomaxprocs=1':'testing.B (BenchmarkPlainChan -cpu 1)'}
print("| arm (`--cpus 0`) | ctxlab median per round | reference | reference per round | ratio per round |")
print("|---|---|---|---|---|")
for k,v in rows.items():
    c=v.get('ctx',[])
    if 'ref' in v: refs=v['ref']
    else: refs=[st.median(v['refr%d'%r]) for r in range(1,R+1) if 'refr%d'%r in v]
    ratios=[a/b for a,b in zip(c,refs)]
    f=lambda xs: ", ".join("%.0f"%x for x in xs)
    print(f"| {k} | {f(c)} ns | {refname[k]} | {f(refs)} ns | {', '.join('%.2f'%x for x in ratios)} |")
PY
