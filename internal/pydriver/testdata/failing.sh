#!/bin/sh
# A driver that reports a failed bench and an unsupported one, and goes on.
echo '{"hello":{"protocol":1,"implementation":"fake","version":"0.0.0"}}'
read -r line
echo "ValueError: unknown bench" >&2
echo '{"id":1,"ok":false,"error":"ValueError: unknown bench"}'
read -r line
echo '{"id":2,"ok":false,"unsupported":"aiosqlite is not importable"}'
read -r line
echo '{"id":3,"ok":true,"rep_ns":[5],"ops":[1]}'
