#!/bin/sh
# A driver that says hello, then hangs (with a grandchild in its process
# group) and never answers: ctxlab must kill the whole group at the limit.
echo '{"hello":{"protocol":1,"implementation":"fake","version":"0.0.0"}}'
read -r line
echo "stuck" >&2
sleep 300 &
echo "$!" > "$1"
wait
