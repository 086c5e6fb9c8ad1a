#!/bin/sh
# A driver that says hello, then answers with something that is not JSON.
echo '{"hello":{"protocol":1,"implementation":"fake","version":"0.0.0"}}'
read -r line
echo "about to misbehave" >&2
echo 'Segmentation fault? no: just garbage'
sleep 300
