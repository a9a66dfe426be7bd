#!/usr/bin/env bash
# npm-pack.sh DIR: build the npm packages of mcpepoch into DIR.
#
# Writes five tarballs: mcpepoch-V.tgz, the main package (a launcher,
# npm/mcpepoch/bin/mcpepoch.js, and no install script), and one package per
# platform, mcpepoch-{linux,darwin}-{x64,arm64}-V.tgz (npm names
# @mcpepoch/linux-x64 and so on), each holding that platform's binary and
# selected by npm through the main package's optionalDependencies and its
# own os/cpu fields. A platform package holds the one binary of an install,
# bin/mcpepoch. V is the version in the VERSION file at the repository
# root, the one place it is written; it is stamped into each binary
# (-ldflags -X .../internal/cli.releaseVersion=V) and into every package.json.
#
# NPM_PACK_PLATFORMS, when set, names the platforms to build, space
# separated (for instance "linux-x64"); the main package is always built.
#
# Binaries are built with CGO_ENABLED=0 and -trimpath. Needs go, node and
# npm; reaches no registry.
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: bash scripts/npm-pack.sh DIR" >&2
	exit 2
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)

version=$(tr -d ' \t\r\n' <"$root/VERSION")
if ! [[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
	echo "npm-pack.sh: $root/VERSION: \"$version\" is not a version such as 1.2.3" >&2
	exit 2
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

# platform: npm os, npm cpu, GOOS, GOARCH
platforms=(
	"linux x64 linux amd64"
	"linux arm64 linux arm64"
	"darwin x64 darwin amd64"
	"darwin arm64 darwin arm64"
)

# selected prints the platforms to build, one "npmos npmcpu goos goarch" a
# line.
selected() {
	for p in "${platforms[@]}"; do
		read -r npmos npmcpu _ _ <<<"$p"
		if [ -n "${NPM_PACK_PLATFORMS:-}" ] && [[ " $NPM_PACK_PLATFORMS " != *" $npmos-$npmcpu "* ]]; then
			continue
		fi
		echo "$p"
	done
}

# The binaries are built at once, side by side: each link is one process,
# so on a machine with cores to spare the four take little longer than one.
pids=()
while read -r npmos npmcpu goos goarch; do
	dir="$stage/$npmos-$npmcpu"
	mkdir -p "$dir/bin"
	echo "build $goos/$goarch"
	(cd "$root" && CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch go build -trimpath -buildvcs=auto \
		-ldflags "-s -w -X github.com/mcpepoch/mcpepoch/internal/cli.releaseVersion=$version" \
		-o "$dir/bin/" ./cmd/mcpepoch) &
	pids+=($!)
done < <(selected)
failed=0
for pid in "${pids[@]}"; do
	wait "$pid" || failed=1
done
if [ "$failed" -ne 0 ]; then
	echo "npm-pack.sh: go build failed (above)" >&2
	exit 1
fi

while read -r npmos npmcpu _ _; do
	name="$npmos-$npmcpu"
	dir="$stage/$name"
	cat >"$dir/package.json" <<JSON
{
  "name": "@mcpepoch/$name",
  "version": "$version",
  "description": "The mcpepoch binary for $npmos $npmcpu, installed by the mcpepoch package",
  "os": ["$npmos"],
  "cpu": ["$npmcpu"],
  "files": ["bin/mcpepoch"],
  "preferUnplugged": true
}
JSON
	cat >"$dir/README.md" <<MD
# @mcpepoch/$name

The \`mcpepoch\` binary for $npmos on $npmcpu. Install the \`mcpepoch\`
package, which selects this one on this platform.
MD
	(cd "$dir" && npm pack --silent --pack-destination "$out" >/dev/null)
done < <(selected)

main="$stage/mcpepoch"
cp -R "$root/npm/mcpepoch" "$main"
VERSION="$version" node -e '
	const fs = require("fs");
	const file = process.argv[1];
	const pkg = JSON.parse(fs.readFileSync(file, "utf8"));
	pkg.version = process.env.VERSION;
	for (const dep of Object.keys(pkg.optionalDependencies)) pkg.optionalDependencies[dep] = process.env.VERSION;
	fs.writeFileSync(file, JSON.stringify(pkg, null, 2) + "\n");
' "$main/package.json"
(cd "$main" && npm pack --silent --pack-destination "$out" >/dev/null)

ls -l "$out"/*.tgz
