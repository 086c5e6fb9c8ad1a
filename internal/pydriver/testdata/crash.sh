#!/bin/sh
# A driver that says hello, then dies on the first request.
echo '{"hello":{"protocol":1,"implementation":"fake","version":"0.0.0"}}'
read -r line
echo "Traceback (most recent call last): boom" >&2
exit 3
