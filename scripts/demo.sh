#!/usr/bin/env bash
# make demo: check the demo agent files, then test them on the fake model.
# Every turn runs in an embedded Session, is journaled in SQLite and verified
# by replay. One example in support-triage fails on purpose.
set -uo pipefail
kmx=${1:?usage: demo.sh PATH-TO-KMX}
cd "$(dirname "$0")/.."

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

step kmx check testdata/demo/*.agent.md
"$kmx" check testdata/demo/*.agent.md || { echo "demo: the demo files should check clean"; exit 1; }

step kmx test testdata/demo/release-notes.agent.md
"$kmx" test testdata/demo/release-notes.agent.md
code=$?
[ "$code" = 0 ] || { echo "demo: release-notes should pass (exit 0), got exit $code"; exit 1; }

step kmx test testdata/demo/fix-add.agent.md
"$kmx" test testdata/demo/fix-add.agent.md
code=$?
[ "$code" = 0 ] || { echo "demo: fix-add should edit its scratch copy of fixtures/calc and pass (exit 0), got exit $code"; exit 1; }

step kmx test testdata/demo/support-triage.agent.md
"$kmx" test testdata/demo/support-triage.agent.md
code=$?
[ "$code" = 1 ] || { echo "demo: support-triage should fail one example (exit 1), got exit $code"; exit 1; }

step kmx test explain --file testdata/demo/support-triage.agent.md
"$kmx" test explain --file testdata/demo/support-triage.agent.md || { echo "demo: explain should show the retained failure"; exit 1; }

printf '\nThe demo passed: two files pass (fix-add edits a scratch copy of its fixture workspace), one example fails on purpose (exit 1).\n'
printf 'Journals are kept under $KMX_HOME (or your config folder)/local-preview/journals:\n'
printf 'kmx journal list, kmx journal inspect RUN (a replay with zero model calls), kmx journal clear.\n'
