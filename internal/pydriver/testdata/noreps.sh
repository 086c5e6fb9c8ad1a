#!/bin/sh
# A driver whose answer says ok but carries no repetitions.
echo '{"hello":{"protocol":1,"implementation":"fake","version":"0.0.0"}}'
read -r line
echo '{"id":1,"ok":true,"rep_ns":[],"ops":[]}'
sleep 300
