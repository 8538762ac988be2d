#!/usr/bin/env bash
# Installs the third-party OpenAI-compatible mock server that the compatible
# route's end-to-end test runs against (TestMockOpenAIServer in
# sidecar/internal/route), and prints the path of its executable.
#
# The server is @dwmkerr/mock-llm, pinned, installed by name from the npm
# registry into a cache folder outside the repository, so nothing lands in
# the checkout. Nobody on this project wrote it: it is an independent reading
# of the Chat Completions wire format. Re-running is cheap: an existing install
# of the pinned version is reused.
#
#   bash scripts/mock-openai.sh          # install if needed, print the binary
#   KMX_TEST_CACHE=/some/dir bash scripts/mock-openai.sh
set -euo pipefail

pkg="@dwmkerr/mock-llm"
version="0.1.29"
cache="${KMX_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kmx-test}/npm"
bin="$cache/node_modules/.bin/mock-llm"
manifest="$cache/node_modules/$pkg/package.json"

if ! command -v npm >/dev/null 2>&1; then
	echo "mock-openai.sh: npm is not installed; install Node.js and npm (Debian: apt-get install npm)" >&2
	exit 1
fi

if [ -x "$bin" ] && [ -f "$manifest" ] && grep -q "\"version\": \"$version\"" "$manifest"; then
	echo "$bin"
	exit 0
fi

mkdir -p "$cache"
# Several checkouts on one machine share this cache and their test runs
# start at the same moment: concurrent npm installs into one prefix undo
# each other, so one installs at a time and the others reuse its result.
exec 7>"$cache.lock"
flock 7
if [ -x "$bin" ] && [ -f "$manifest" ] && grep -q "\"version\": \"$version\"" "$manifest"; then
	echo "$bin"
	exit 0
fi
# Install logs go to stderr: stdout carries only the binary's path.
npm install --prefix "$cache" --no-audit --no-fund --loglevel=error "$pkg@$version" >&2
if [ ! -x "$bin" ]; then
	echo "mock-openai.sh: $pkg@$version installed but $bin is missing" >&2
	exit 1
fi
echo "$bin"
