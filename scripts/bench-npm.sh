#!/usr/bin/env bash
# bench-npm.sh: sizes of the npm packages and start time of `mcpepoch
# version` through them, against the bare binary, in one run.
#
# Builds the packages with scripts/npm-pack.sh, installs them offline into a
# temporary npm project, then times N rounds (default 20; ROUNDS=N to
# change), interleaved: the platform package's binary run directly, the
# launcher (node_modules/.bin/mcpepoch, which is what a client config
# points at), and `npx mcpepoch`. Prints medians in milliseconds.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=${ROUNDS:-20}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

bash "$root/scripts/npm-pack.sh" "$work/dist" >/dev/null
version=$(tr -d ' \t\r\n' <"$root/VERSION")
case "$(uname -s)-$(uname -m)" in
Linux-x86_64) here=linux-x64 ;;
Linux-aarch64) here=linux-arm64 ;;
Darwin-x86_64) here=darwin-x64 ;;
Darwin-arm64) here=darwin-arm64 ;;
*) echo "bench-npm.sh: no package for $(uname -s) $(uname -m)" >&2; exit 1 ;;
esac

mkdir "$work/app"
cd "$work/app"
echo '{"name":"app","version":"1.0.0","private":true}' >package.json
npm install --offline --no-audit --no-fund --silent --save-optional "$work"/dist/mcpepoch-*-*.tgz 2>/dev/null || true
npm install --offline --no-audit --no-fund --silent "$work/dist/mcpepoch-$version.tgz"

binary="node_modules/@mcpepoch/$here/bin/mcpepoch"
launcher="node_modules/.bin/mcpepoch"

ms() { # ms CMD…: wall time of one run in milliseconds (3 decimals)
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null
	t1=$(date +%s%N)
	echo "scale=3; ($t1 - $t0) / 1000000" | bc
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

: >"$work/bare" >"$work/launcher" >"$work/npx"
for _ in $(seq "$rounds"); do
	ms "$binary" version >>"$work/bare"
	ms "$launcher" version >>"$work/launcher"
	ms npx --offline mcpepoch version >>"$work/npx"
done

echo "machine: $(uname -sm), $(getconf _NPROCESSORS_ONLN) cpus, node $(node --version), $(date -u +%Y-%m-%d)"
echo "binary size ($here): $(wc -c <"$binary") bytes"
for f in "$work"/dist/*.tgz; do
	echo "tarball $(basename "$f"): $(wc -c <"$f") bytes"
done
echo "median of $rounds rounds, mcpepoch version:"
echo "  binary directly:           $(median <"$work/bare") ms"
echo "  node_modules/.bin launcher: $(median <"$work/launcher") ms"
echo "  npx --offline mcpepoch:     $(median <"$work/npx") ms"
