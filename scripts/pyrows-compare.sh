#!/usr/bin/env bash
# Usage:
#   go build -o ctxlab ./cmd/ctxlab && CTX=./ctxlab bash scripts/pyrows-compare.sh
# The two CPython rows that once moved away from plain loops of their own
# code (issue 44): the task ring at n=100 (ring/pytask/asyncio-queue/n=100)
# and the two-hop wrapper (hop/pytask/two-hop), each beside a plain
# perf_counter loop of the same code (internal/selfcheck/pyref.py -mode ring,
# -mode two-hop: 5 repetitions of about 200 ms, ctxlab's default), ROUNDS
# rounds (default 3) interleaved in alternating order by
# scripts/sqlite-seed-compare.sh. It prints each round's ratio and the
# median, and fails when either median is above LIMIT (default 1.10).
# Timings need a quiet machine: the load average is printed with each round.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rc=0
ARM='ring/pytask/asyncio-queue/n=100' LOOPARGS='-mode ring -tasks 100 -seconds 0.2 -reps 5' \
  bash "$here/sqlite-seed-compare.sh" || rc=1
echo
ARM='hop/pytask/two-hop' LOOPARGS='-mode two-hop -seconds 0.2 -reps 5' \
  bash "$here/sqlite-seed-compare.sh" || rc=1
exit $rc
