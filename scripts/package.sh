#!/usr/bin/env bash
# Builds one .vsix per target into dist/: the bundled extension plus the kmx
# sidecar cross-built for that platform at bin/<target>/kmx[.exe] inside the
# package. Each target is staged in out/package/<target>/, so the repo's own
# bin/kmx (make build) is never touched.
#
#   scripts/package.sh                 # all six targets
#   scripts/package.sh linux-x64 ...   # just these
#   scripts/package.sh current         # this machine's platform only
set -euo pipefail
cd "$(dirname "$0")/.."

ALL=(linux-x64 linux-arm64 darwin-x64 darwin-arm64 win32-x64 win32-arm64)
# current: the VS Code target of this machine (uname names it).
current_target() {
  local os arch
  case "$(uname -s)" in
    Linux) os=linux ;;
    Darwin) os=darwin ;;
    MINGW* | MSYS* | CYGWIN*) os=win32 ;;
    *) echo "package.sh: no VS Code target for $(uname -s); name one of: ${ALL[*]}" >&2; exit 2 ;;
  esac
  case "$(uname -m)" in
    x86_64 | amd64) arch=x64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) echo "package.sh: no VS Code target for $(uname -m); name one of: ${ALL[*]}" >&2; exit 2 ;;
  esac
  echo "$os-$arch"
}
TARGETS=()
for t in "$@"; do
  if [ "$t" = current ]; then TARGETS+=("$(current_target)"); else TARGETS+=("$t"); fi
done
[ "${#TARGETS[@]}" -gt 0 ] || TARGETS=("${ALL[@]}")
GO="${GO:-go}"
VERSION="$(node -p 'require("./package.json").version')"

[ -d node_modules/@vscode/vsce ] || npm ci --loglevel=error
node esbuild.mjs --production

mkdir -p dist
for target in "${TARGETS[@]}"; do
  case "$target" in
    linux-x64) goos=linux goarch=amd64 exe=kmx ;;
    linux-arm64) goos=linux goarch=arm64 exe=kmx ;;
    darwin-x64) goos=darwin goarch=amd64 exe=kmx ;;
    darwin-arm64) goos=darwin goarch=arm64 exe=kmx ;;
    win32-x64) goos=windows goarch=amd64 exe=kmx.exe ;;
    win32-arm64) goos=windows goarch=arm64 exe=kmx.exe ;;
    *) echo "package.sh: unknown target '$target'; use one of: ${ALL[*]}" >&2; exit 2 ;;
  esac
  stage="out/package/$target"
  rm -rf "$stage"
  mkdir -p "$stage/bin/$target" "$stage/dist"
  echo "package.sh: $target: go build ($goos/$goarch)" >&2
  CGO_ENABLED=0 GOOS="$goos" GOARCH="$goarch" "$GO" build -trimpath -ldflags="-s -w" \
    -o "$stage/bin/$target/$exe" ./sidecar/cmd/kmx
  cp package.json .vscodeignore "$stage/"
  cp docs/extension.md "$stage/README.md"
  cp dist/extension.js "$stage/dist/"
  out="$PWD/dist/kmx-$target-$VERSION.vsix"
  # The bundle has no runtime dependencies left to ship, and there is no
  # LICENSE file to ask about: never prompt (CI has no stdin).
  ( cd "$stage" && "$OLDPWD/node_modules/.bin/vsce" package --target "$target" \
      --no-dependencies --skip-license --allow-missing-repository -o "$out" >&2 )
  echo "$out"
done
