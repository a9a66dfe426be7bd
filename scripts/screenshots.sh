#!/usr/bin/env bash
# screenshots.sh makes the README's two pictures from the real product:
#
#   docs/img/approve-terminal.svg   mcpepoch approve at a terminal (tmux
#                                   capture-pane, turned into SVG)
#   docs/img/approve-web.png        the approval page of mcpepoch approve
#                                   --web (chromium --headless --screenshot)
#
# In a temporary directory it builds mcpepoch (go build ./cmd/mcpepoch) and
# the example server examples/inventory-go, records the build, starts
# `mcpepoch host` with this script as its MCP client (JSON-RPC lines over a
# FIFO), lists the tools and makes a call the host refuses until a person
# approves. Then:
#
#  1. in a tmux session of its own it runs `mcpepoch approve` and answers
#     y, and captures the pane;
#  2. it enrolls a security key (`mcpepoch enroll --web` in tmux, Register
#     pressed on the page by a virtual WebAuthn authenticator in headless
#     Chromium: scripts/screenshots), connects a new host, which counts
#     only presence now, makes the refused call again, runs `mcpepoch
#     approve --web --no-open` and screenshots the page it prints.
#
# The trust store and policy floor live in the temporary directory
# (XDG_CONFIG_HOME), never in the user's: Linux only, since macOS keeps
# them in ~/Library whatever XDG_CONFIG_HOME says.
#
# Needs Go, tmux and chromium (Debian: apt-get install tmux chromium).
# Usage: scripts/screenshots.sh [OUTDIR]   (default docs/img)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$repo/docs/img}

die() {
	echo "screenshots.sh: $*" >&2
	exit 1
}
[ "$(uname -s)" = Linux ] || die "Linux only: elsewhere the trust store would be the user's own"
for prog in go tmux chromium; do
	command -v "$prog" >/dev/null 2>&1 || die "$prog is not on PATH: install it (apt-get install tmux chromium; Go from go.dev)"
done
mkdir -p "$out"
out=$(cd "$out" && pwd)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mcpepoch-screenshots.XXXXXX")
tmp=$(cd "$tmp" && pwd -P)
sock=mcpepoch-screenshots-$$
tmuxc() { tmux -L "$sock" -f /dev/null "$@"; }
host_pid=
cleanup() {
	exec 3>&- 2>/dev/null || true
	[ -n "$host_pid" ] && wait "$host_pid" 2>/dev/null || true
	tmuxc kill-server 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

proj=$tmp/project
mkdir -p "$tmp/bin" "$tmp/config" "$proj/bin"
# The host, the server and the terminal run with this environment only,
# so that the pictures show no variable of the machine they were made on.
clean=(env -i HOME="$tmp" PATH="$tmp/bin:/usr/local/bin:/usr/bin:/bin" XDG_CONFIG_HOME="$tmp/config"
	LANG=C.UTF-8 TERM=xterm-256color INVENTORY_SUPPLIER_TOKEN=demo-supplier-token)

echo "building mcpepoch and examples/inventory-go"
(cd "$repo" && go build -o "$tmp/bin/mcpepoch" ./cmd/mcpepoch && go build -o "$tmp/bin/screenshots" ./scripts/screenshots)
(cd "$repo/examples/inventory-go" && go build -o "$proj/bin/inventory-server" .)
cat >"$proj/mcpepoch.toml" <<'EOF'
label = "inventory"
command = ["./bin/inventory-server"]

[grants]
exempt = ["inventory_lookup"]

[credentials.inventory-supplier]
tools = ["inventory_order"]
env   = "INVENTORY_SUPPLIER_TOKEN"
EOF
(cd "$proj" && "${clean[@]}" mcpepoch record >/dev/null 2>&1) || die "mcpepoch record failed"

# waitfor FILE PATTERN WHAT: wait up to 30 s for a line matching PATTERN
# (grep -E) in FILE.
waitfor() {
	for _ in $(seq 300); do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "--- $1:" >&2
	cat "$1" >&2 || true
	die "no $3 within 30 s"
}

# connect N: start host N with this shell as its client, list the tools and
# make the call that needs a grant; the host's log is in host-N.log.
connect() {
	local n=$1
	mkfifo "$tmp/to-host-$n"
	(cd "$proj" && exec "${clean[@]}" mcpepoch host -- ./bin/inventory-server) <"$tmp/to-host-$n" >"$tmp/from-host-$n" 2>"$tmp/host-$n.log" &
	host_pid=$!
	exec 3>"$tmp/to-host-$n"
	echo '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"screenshots.sh","version":"1"}}}' >&3
	waitfor "$tmp/from-host-$n" '"id":1,' "answer to initialize"
	echo '{"jsonrpc":"2.0","method":"notifications/initialized"}' >&3
	echo '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' >&3
	waitfor "$tmp/from-host-$n" '"id":2,' "answer to tools/list"
	echo '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"inventory_adjust","arguments":{"sku":"bolt","delta":3}}}' >&3
	waitfor "$tmp/from-host-$n" '"id":3,.*authorization_required' "refusal of the call"
}

# disconnect: close the host's stdin and wait for it to end.
disconnect() {
	exec 3>&-
	wait "$host_pid" || true
	host_pid=
}

# A terminal of its own: a tmux server is a daemon, in a session of its
# own, so what runs in it descends from no MCP client (docs/approval.md).
"${clean[@]}" tmux -L "$sock" -f /dev/null new-session -d -s shots -x 120 -y 40 -c "$proj" \
	"env -u TMUX PS1='\$ ' bash --norc --noprofile"
tmuxc set-option -g status off >/dev/null

# pane: what the pane shows, with its colours.
pane() { tmuxc capture-pane -p -e -t shots; }

# waitpane PATTERN WHAT: wait up to 30 s for the pane to show PATTERN.
waitpane() {
	for _ in $(seq 300); do
		pane | grep -qE "$1" && return 0
		sleep 0.1
	done
	pane >&2
	die "the pane did not show $2 within 30 s"
}

echo "1. mcpepoch approve at a terminal"
connect 1
tmuxc send-keys -t shots "clear" Enter
tmuxc send-keys -t shots "mcpepoch approve" Enter
waitpane 'tools to approve' "the question which tools"
tmuxc send-keys -t shots Enter
waitpane '\[y/N\]' "the question"
tmuxc send-keys -t shots "y" Enter
waitpane 'approved: grant' "the grant"
pane | "$tmp/bin/screenshots" svg -title "mcpepoch approve" >"$out/approve-terminal.svg"
disconnect

echo "2. mcpepoch approve --web"
tmuxc send-keys -t shots "clear" Enter
tmuxc send-keys -t shots "mcpepoch enroll --web --no-open --name 'security key' >$tmp/enroll.url" Enter
waitpane '\[y/N\]' "the enrollment question"
tmuxc send-keys -t shots "y" Enter
waitfor "$tmp/enroll.url" '^http://localhost:' "registration page URL"
"$tmp/bin/screenshots" register "$(head -n 1 "$tmp/enroll.url")" >/dev/null
waitpane 'enrolled|trusted' "the enrollment's end"
connect 2
(cd "$proj" && exec "${clean[@]}" mcpepoch approve --web --no-open --tools inventory_adjust) >"$tmp/approve.url" 2>"$tmp/approve.err" &
approve_pid=$!
waitfor "$tmp/approve.url" '^http://localhost:' "approval page URL"
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
	--user-data-dir="$tmp/chromium" --window-size=900,860 --virtual-time-budget=3000 \
	--screenshot="$out/approve-web.png" "$(head -n 1 "$tmp/approve.url")" >/dev/null 2>&1 ||
	die "chromium --screenshot failed"
kill "$approve_pid" 2>/dev/null || true
wait "$approve_pid" 2>/dev/null || true
disconnect

ls -l "$out/approve-terminal.svg" "$out/approve-web.png"
