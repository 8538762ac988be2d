#!/usr/bin/env bash
# Regenerates the Go code for shared/proto into the folder given as $1.
# Used by `make proto` (into the real package) and by the staleness test
# (into a temporary folder, compared byte for byte).
set -euo pipefail
out=${1:?usage: genproto.sh OUTDIR}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
protoc -I "$root/shared/proto" \
  --go_out="$out" --go_opt=paths=source_relative \
  --go-grpc_out="$out" --go-grpc_opt=paths=source_relative \
  "$root/shared/proto/kmx/sessions/v1/sessions.proto"
# protoc writes under the proto's own folder; flatten into $out.
mv "$out"/kmx/sessions/v1/*.go "$out"/
rm -rf "$out/kmx"
