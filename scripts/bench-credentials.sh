#!/usr/bin/env bash
# bench-credentials.sh runs host's BenchmarkCredentialBroker and checks its
# speed target against the median, in the same run as a direct unix-socket
# round trip of the same shape (one connection, one line each way):
#
#   broker request during a granted call → answer     goal < 1 ms
#
# Usage: scripts/bench-credentials.sh   (N=500 requests by default)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
n=${N:-500}
out=$(cd "$repo" && go test ./host/ -run '^$' -bench 'CredentialBroker' -benchtime "${n}x")
echo "$out"
echo "$out" | awk '
	/broker-median-µs/ {
		for (i = 1; i < NF; i++) {
			if ($(i+1) == "broker-median-µs") b = $i
			if ($(i+1) == "direct-median-µs") d = $i
		}
	}
	END {
		if (b == "") { print "benchmark did not report"; exit 1 }
		printf "broker median %.1f µs, direct round trip %.1f µs (goal < 1000 µs)\n", b, d
		exit (b < 1000) ? 0 : 1
	}'
