#!/usr/bin/env bash
# ctxlab serve at defaults for 10 minutes, real Prometheus scraping
# it every 15 s; at minutes 2, 4, 6, 8, 10 (and 11) every probe's mean over
# the window, rate(_sum[10m]) / rate(_count[10m]), must lie within
# [0.9 x p50, 1.1 x p99.9] of ctxlab_op_seconds.
# Needs prometheus on PATH; CTXLAB names the binary (default: ctxlab; an
# absolute path).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CTXLAB=${CTXLAB:-ctxlab}
D=$(mktemp -d /tmp/serve10.XXXX); cd "$D"
"$CTXLAB" serve --listen 127.0.0.1:19577 > serve.log 2>&1 & S=$!
cat > prom.yml <<Y
global: {scrape_interval: 15s, evaluation_interval: 15s}
rule_files: ["$ROOT/deploy/ctxlab.rules.yml"]
scrape_configs: [{job_name: ctxlab, static_configs: [{targets: ["127.0.0.1:19577"]}]}]
Y
prometheus --config.file=prom.yml --storage.tsdb.path=data --web.listen-address=127.0.0.1:19590 --log.level=warn > prom.log 2>&1 & P=$!
trap 'kill $S $P 2>/dev/null; wait $S $P 2>/dev/null' EXIT
q() { curl -s --data-urlencode "query=$1" http://127.0.0.1:19590/api/v1/query; }
fails=0
for m in 2 4 6 8 10 11; do
  sleep $(( m==2 ? 120 : (m==11 ? 60 : 120) ))
  python3 - "$m" "$(q 'rate(ctxlab_op_seconds_sum[10m]) / rate(ctxlab_op_seconds_count[10m])')" "$(q 'ctxlab_op_seconds{quantile="0.5"}')" "$(q 'ctxlab_op_seconds{quantile="0.999"}')" <<'PY' || fails=$((fails+1))
import json,sys
m=sys.argv[1]
def probes(s):
    r=json.loads(s)['data']['result']
    return {x['metric']['experiment']+'/'+x['metric']['arm']: float(x['value'][1]) for x in r}
mean,p50,top=(probes(a) for a in sys.argv[2:5])
bad=0
for k in sorted(mean):
    lo,hi=0.9*p50.get(k,float('nan')),1.1*top.get(k,float('nan'))
    ok=lo<=mean[k]<=hi
    bad+= not ok
    print(f"min {m:>2} {'ok ' if ok else 'OUT'} {k:55s} mean {mean[k]*1e6:9.3f} us  p50 {p50.get(k,0)*1e6:9.3f}  p99.9 {top.get(k,0)*1e6:10.3f}")
print(f"min {m:>2}: {len(mean)} probes, {bad} outside")
sys.exit(1 if bad or not mean else 0)
PY
done
echo "== serve10: $fails checkpoints with a probe outside (dir $D)"
tail -3 serve.log
