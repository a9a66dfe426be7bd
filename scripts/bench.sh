#!/usr/bin/env bash
# bench.sh prints, in one run, what mcpepoch costs against the least a
# middle process can cost, each comparison interleaved within the run (the
# machine may be shared: ratios within one run are what to read):
#
#   gateway   scripts/bench/echoclient against four connections open at
#             once to scripts/bench/echoserver: direct, through
#             scripts/bench/spliceproxy (splice(2), 1 MiB pipes), through
#             scripts/bench/durableproxy (the same, plus an audit record
#             per message and grouped fdatasync: the anchor of the
#             targets) and through mcpepoch host; small tools/call
#             p50/p99, CPU per call of the middle process, 8 concurrent
#             callers, 1 MiB and 5 MiB results; then the audit backlog after a burst of 8,000
#             calls, restart overhead (idle, and with one slow call in
#             flight, which host.drain waits for) and the host's RSS
#   profile   the host alone under each load (20,000 sequential small
#             calls; 8 concurrent callers for 3 s; 10 restarts): calls/s,
#             CPU per call, its system calls per call by name (perf stat,
#             else strace) and the top of a CPU profile the host writes
#             (MCPEPOCH_CPUPROFILE), with its mutex profile for the callers
#   start     mcpepoch version against an empty Go program (goal <= 1.5x)
#             and a program that links the same dependencies and does
#             nothing, the static build (as installed) and a cgo one; the
#             binaries' sizes; the costliest package inits
#   hook      warm mcpepoch record with and without a host listening
#             against git status (BenchmarkHookWarmGit in cmd/mcpepoch)
#             and an lstat walk, on synthetic trees of 1k, 4k, 20k files
#
# It prints the load average before and after: under load, absolute
# figures move, and the ratios less so.
#
# Usage: scripts/bench.sh [gateway|profile|start|hook]...   (default: all; Linux)
# Env:   ROUNDS (gateway rounds, default 15), HOOK_ROUNDS (default 15),
#        HOOK_SIZES (default "1000 4000 20000"), START_ROUNDS (default 100),
#        BEFORE (an earlier mcpepoch binary: the gateway measures it as a
#        fourth connection, the hook as two more records, each interleaved,
#        for a before/after in one run)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
parts=${*:-gateway profile start hook}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mcpepoch-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "mcpepoch bench, $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -sm), $(nproc) cores," \
	"$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ *//')"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

cd "$repo"
# The mcpepoch measured is the one installs give (docs/install.md, the
# npm packages, task build): no cgo, a static binary.
CGO_ENABLED=0 go build -trimpath -o "$tmp/" ./cmd/mcpepoch
for p in echoserver echoclient spliceproxy durableproxy lstatwalk exectime inittrace; do
	go build -o "$tmp/$p" "./scripts/bench/$p"
done
mkdir "$tmp/empty"
printf 'package main\n\nfunc main() {}\n' >"$tmp/empty/main.go"
(cd "$tmp/empty" && GO111MODULE=off go build -o "$tmp/empty-program" main.go)

for part in $parts; do
	case $part in
	gateway)
		echo
		echo "== gateway: echo server direct, through the splice proxy, the durable proxy and mcpepoch host (interleaved)"
		# The echo server lives in the project, so that its identity
		# hashes a file of it (a launch that hashes none is refused).
		proj=$tmp/project
		mkdir -p "$proj"
		cp "$tmp/echoserver" "$proj/echoserver"
		printf 'command = ["%s"]\n\n[grants]\nexempt = ["**"]\n' "$proj/echoserver" >"$proj/mcpepoch.toml"
		"$tmp/echoclient" -server "$proj/echoserver" -splice "$tmp/spliceproxy" -durable "$tmp/durableproxy" \
			-mcpepoch "$tmp/mcpepoch" -dir "$proj" -rounds "${ROUNDS:-15}" ${BEFORE:+-before "$BEFORE"} 2>"$tmp/gateway.log" ||
			{ tail -20 "$tmp/gateway.log" >&2; exit 1; }
		;;
	profile)
		echo
		echo "== profile: the host alone under each load, its system calls and the top of its CPU profile"
		# A project per load, so that no host starts on another load's
		# audit log (the start reads it whole), all made first: the
		# identity's stat cache trusts a file only once it is 2 s old,
		# and the restart load would otherwise hash the server each time.
		for load in small callers restart; do
			mkdir -p "$tmp/profile-$load"
			cp "$tmp/echoserver" "$tmp/profile-$load/echoserver"
			printf 'command = ["%s"]\n\n[grants]\nexempt = ["**"]\n' "$tmp/profile-$load/echoserver" >"$tmp/profile-$load/mcpepoch.toml"
		done
		for load in small callers restart; do
			proj=$tmp/profile-$load
			# Counted and profiled in two runs: the profiler's signals
			# are system calls too.
			for what in -syscalls "-cpuprofile $tmp/$load.prof"; do
				# shellcheck disable=SC2086 # $what is a flag and its value
				"$tmp/echoclient" -load "$load" -n 20000 -for 3s -restarts 10 $what \
					-server "$proj/echoserver" -mcpepoch "$tmp/mcpepoch" -dir "$proj" 2>"$tmp/profile.log" ||
					{ tail -20 "$tmp/profile.log" >&2; exit 1; }
			done
			go tool pprof -top -nodecount=25 "$tmp/mcpepoch" "$tmp/$load.prof" 2>/dev/null | sed -n '/flat%/,$p'
			if [ "$load" = callers ]; then
				echo "-- where goroutines waited for a lock (mutex profile, every wait):"
				go tool pprof -top -nodecount=6 "$tmp/mcpepoch" "$tmp/$load.prof.mutex" 2>/dev/null | sed -n '/^Showing nodes/,$p'
			fi
			echo
		done
		;;
	start)
		echo
		echo "== start: mcpepoch version against an empty Go program (interleaved, ${START_ROUNDS:-100} rounds)"
		# mcpepoch is built as scripts/npm-pack.sh builds what ships (no
		# cgo: static, no dynamic loader at start); cgo/ holds this go's
		# default build (cgo where a C compiler is found, as a plain go
		# install does). deps-only links every package mcpepoch links but
		# its own and does nothing: the start no binary that links them
		# can beat.
		mkdir "$tmp/cgo" "$tmp/deps-only"
		go build -o "$tmp/cgo/mcpepoch-cgo" ./cmd/mcpepoch
		sed 's#^module .*#module depsonly#' go.mod >"$tmp/deps-only/go.mod"
		cp go.sum "$tmp/deps-only/"
		{
			printf 'package main\n\nimport (\n'
			CGO_ENABLED=0 go list -deps ./cmd/mcpepoch |
				grep -v -E '(^|/)internal(/|$)|^vendor/|^github.com/mcpepoch/mcpepoch(/|$)' | sed 's/.*/\t_ "&"/'
			printf ')\n\nfunc main() {}\n'
		} >"$tmp/deps-only/main.go"
		(cd "$tmp/deps-only" && CGO_ENABLED=0 go build -trimpath -o "$tmp/deps-only/deps-only" .)
		"$tmp/exectime" -rounds "${START_ROUNDS:-100}" "$tmp/empty-program" "$tmp/deps-only/deps-only" \
			"$tmp/mcpepoch version" "$tmp/cgo/mcpepoch-cgo version"
		for b in "$tmp/mcpepoch" "$tmp/cgo/mcpepoch-cgo" "$tmp/deps-only/deps-only" "$tmp/empty-program"; do
			echo "binary ${b#"$tmp/"}: $(du -h "$b" | cut -f1) ($(stat -c %s "$b") bytes, $(file -b "$b" 2>/dev/null | grep -o -E 'statically linked|dynamically linked' || echo '?'))"
		done
		echo "go $(go env GOVERSION) $(go env GOOS)/$(go env GOARCH); package inits of mcpepoch version (GODEBUG=inittrace=1):"
		"$tmp/inittrace" -rounds 30 -top 12 "$tmp/mcpepoch" version
		;;
	hook)
		echo
		echo "== hook: warm record (host listening / none) against git status and an lstat walk"
		for n in ${HOOK_SIZES:-1000 4000 20000}; do
			tree=$tmp/tree-$n
			"$tmp/lstatwalk" -make "$n" "$tree"
			echo "-- $n files: lstat walk $("$tmp/lstatwalk" "$tree")"
			MCPEPOCH_BENCH_TREE=$tree MCPEPOCH_BENCH_BIN=$tmp/mcpepoch MCPEPOCH_BENCH_BEFORE=${BEFORE:-} \
				go test -run '^$' -bench '^BenchmarkHookWarmGit$' -benchtime "${HOOK_ROUNDS:-15}x" -count 1 ./cmd/mcpepoch |
				grep -E '^(Benchmark|--- )' || echo "   (BenchmarkHookWarmGit gave no result)"
			rm -rf "$tree"
		done
		;;
	*)
		echo "bench.sh: unknown part $part (gateway, profile, start, hook)" >&2
		exit 2
		;;
	esac
done
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
