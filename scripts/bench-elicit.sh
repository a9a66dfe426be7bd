#!/usr/bin/env bash
# bench-elicit.sh runs host's BenchmarkElicitPressToServer and checks its
# speed target against the 90th percentile:
#
#   press of Approve on the page a url elicitation named → the held call's
#   result at the client (an upper bound of press → call at the server)
#                                                         goal <= 100 ms
#
# Usage: scripts/bench-elicit.sh   (N=50 presses by default; needs chromium)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
n=${N:-50}
out=$(cd "$repo" && go test ./host/ -run '^$' -bench 'ElicitPressToServer' -benchtime "${n}x")
echo "$out"
echo "$out" | awk '
	/press-p90-ms/ { for (i = 1; i < NF; i++) if ($(i+1) == "press-p90-ms") p = $i }
	END {
		if (p == "") { print "benchmark did not report"; exit 1 }
		printf "press -> held call p90 %.2f ms (goal <= 100)\n", p
		exit (p <= 100) ? 0 : 1
	}'
