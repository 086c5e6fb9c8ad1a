#!/bin/sh
# A well-behaved fake driver: a hello, then one fixed answer per request.
echo '{"hello":{"protocol":1,"implementation":"fake","version":"0.0.0"}}'
while read -r line; do
  id=$(printf '%s' "$line" | sed 's/^{"id":\([0-9]*\).*/\1/')
  echo "got request $id" >&2
  printf '{"id":%s,"ok":true,"rep_ns":[1000,3000],"ops":[10,10],"samples_ns":[50,60,70],"sample_every":1,"switches":{"voluntary":40,"involuntary":2,"child_voluntary":4,"child_involuntary":0},"migrations":3,"switch_interval_s":0.005,"metrics":{"x":1},"notes":["fake"]}\n' "$id"
done
