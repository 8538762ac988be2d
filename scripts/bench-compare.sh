#!/usr/bin/env bash
# bench-compare.sh: whole-process throughput figures for docs/benchmarks.md,
# each as the median of PAIRS paired runs on this machine, right now.
#
#   fake       kmx test, N=2000 examples on the fake model, default concurrency
#              (beside Waza's mock executor on 2,000 tasks when WAZA=path/to/waza)
#   endpoint   kmx test --concurrency 1, N=2000, instant local endpoint,
#              beside the floor program (testdata/floor) on the same endpoint
#   slow       kmx test, 50 examples, endpoint answering after 200 ms,
#              at the default concurrency and at 8 (floors 2.6 s and 1.4 s)
#   rss        kmx test --concurrency 8, N=2000, fake model: peak RSS
#
# Times are wall seconds and CPU (user+sys) seconds from /usr/bin/time; read
# `uptime` with them: under load the wall figures mostly measure waiting.
#
# BEFORE=REV also builds kmx at git revision REV (from `git archive`, in a
# temporary folder) and runs every kmx measure with both binaries in each
# pair, in alternating order, each on a state folder of its own; it then
# prints each measure's medians before and now and the median over pairs
# of now/before (wall, CPU, peak RSS): below 1 is better now.
# Usage: scripts/bench-compare.sh   (PAIRS=5 N=2000 WAZA=/path/to/waza BEFORE=REV)
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
PAIRS=${PAIRS:-5}
N=${N:-2000}
work=$(mktemp -d)
trap 'for p in "$work"/pid-*; do [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null; done; rm -rf "$work"' EXIT
chmod 700 "$work"
# kmx is built as scripts/package.sh builds what users install (no cgo, no
# symbol tables), so the peak RSS is the shipped binary's; a cgo build maps
# libc and its allocator besides (about 1.5 MiB more).
CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$work/kmx" ./sidecar/cmd/kmx
go build -o "$work/floor" ./sidecar/internal/runner/testdata/floor
mkdir -m 700 "$work/home"
export KMX_HOME="$work/home"
if [ -n "${BEFORE:-}" ]; then
  mkdir -m 700 "$work/before" "$work/home-before"
  git archive "$BEFORE" | tar -x -C "$work/before"
  (cd "$work/before" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$work/kmx-before" ./sidecar/cmd/kmx)
  echo "before: $(git rev-parse --short "$BEFORE"); now: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- sidecar || echo ' (with uncommitted changes)')"
fi

gen() { # gen N MODEL FILE: N examples, three text assertions each
  awk -v n="$1" -v m="$2" 'BEGIN {
    printf "---\nname: generated\nmodel: %s\n---\nYou answer briefly.\n\nReply with exactly `Answer:` followed by the input\n\n## Examples\n\n```yaml\n", m
    for (i = 0; i < n; i++) printf "- id: ex-%05d\n  input: Question number %d about the release\n  assert:\n    - contains: \"Answer:\"\n    - regex: \"number %d\\\\b\"\n    - notContains: TODO\n", i, i, i
    print "```" }' > "$3"
}
serve() { # serve DELAY: start an endpoint, print its base URL
  "$work/floor" -serve 127.0.0.1:0 -delay "$1" > "$work/url-$1" &
  echo $! > "$work/pid-$1" # started in a command substitution: not a job of this shell
  for _ in $(seq 50); do [ -s "$work/url-$1" ] && break; sleep 0.1; done
  head -1 "$work/url-$1"
}
timed() { # timed LABEL CMD...: append "seconds maxrss_kb cpu_seconds" to $work/LABEL.times
  local label=$1
  shift
  /usr/bin/time -f "%e %M %U %S" -o "$work/t" "$@" > /dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }
  awk '{printf "%s %s %.2f\n", $1, $2, $3 + $4}' "$work/t" >> "$work/$label.times"
}
both() { # both LABEL ARGS...: kmx ARGS timed as LABEL and, with BEFORE, the
  # before build as LABEL-before, first or second by the pair's parity
  local label=$1
  shift
  if [ -n "${BEFORE:-}" ] && [ $((p % 2)) = 0 ]; then timed "$label-before" env KMX_HOME="$work/home-before" "$work/kmx-before" "$@"; fi
  timed "$label" "$work/kmx" "$@"
  if [ -n "${BEFORE:-}" ] && [ $((p % 2)) = 1 ]; then timed "$label-before" env KMX_HOME="$work/home-before" "$work/kmx-before" "$@"; fi
}
median() { sort -n | awk '{a[NR]=$1} END { if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }
report() { # report LABEL
  printf "%-34s median %6.2f s   (runs: %s)   CPU median %5.2f s   peak RSS %s MiB\n" "$1" \
    "$(cut -d' ' -f1 "$work/$1.times" | median)" "$(cut -d' ' -f1 "$work/$1.times" | tr '\n' ' ')" \
    "$(cut -d' ' -f3 "$work/$1.times" | median)" \
    "$(cut -d' ' -f2 "$work/$1.times" | sort -n | tail -1 | awk '{printf "%.1f", $1/1024}')"
}
ratio() { # ratio A B FIELD: the median over pairs of A's FIELD / B's FIELD
  paste -d' ' <(cut -d' ' -f"$3" "$work/$1.times") <(cut -d' ' -f"$3" "$work/$2.times") | awk '{print $1/$2}' | median
}

gen "$N" fake "$work/fake.agent.md"
gen "$N" kmx-bench-model "$work/ep.agent.md"
gen 50 kmx-bench-model "$work/slow.agent.md"
fast=$(serve 0s)
slow=$(serve 200ms)

if [ -n "${WAZA:-}" ]; then
  mkdir -p "$work/waza/tasks"
  cat > "$work/waza/eval.yaml" <<'YAML'
name: bench
skill: bench
version: "1.0"
config: {trials_per_task: 1, timeout_seconds: 300, parallel: false, executor: mock, model: mock-model}
graders:
  - {type: regex, name: answered, config: {must_not_match: ["(?i)fatal error"]}}
tasks: ["tasks/*.yaml"]
YAML
  for i in $(seq 0 $((N - 1))); do
    printf 'id: t-%05d\nname: Task %d\ninputs:\n  prompt: "Question number %d about the release"\n' "$i" "$i" "$i" > "$work/waza/tasks/t-$(printf %05d "$i").yaml"
  done
  printf -- '---\nname: bench\ndescription: bench\n---\nbench\n' > "$work/waza/SKILL.md"
fi

uptime
for p in $(seq "$PAIRS"); do
  both fake test "$work/fake.agent.md"
  [ -z "${WAZA:-}" ] || (cd "$work/waza" && timed waza "$WAZA" run eval.yaml -o "$work/waza/out.json")
  both endpoint test "$work/ep.agent.md" --endpoint "$fast" --concurrency 1
  rm -f "$work"/floor.db*
  timed floor "$work/floor" -endpoint "$fast" -n "$N" -db "$work/floor.db"
  both slow-default test "$work/slow.agent.md" --endpoint "$slow"
  both slow-c8 test "$work/slow.agent.md" --endpoint "$slow" --concurrency 8
  both rss-c8 test "$work/fake.agent.md" --concurrency 8
done
uptime
report fake
[ -z "${WAZA:-}" ] || report waza
report endpoint
report floor
report slow-default
report slow-c8
report rss-c8
printf "endpoint/floor ratio, median of pairs: wall %.2f, CPU %.2f\n" "$(ratio endpoint floor 1)" "$(ratio endpoint floor 3)"
[ -z "${WAZA:-}" ] || printf "fake/waza ratio, median of pairs: wall %.2f, CPU %.2f\n" "$(ratio fake waza 1)" "$(ratio fake waza 3)"
if [ -n "${BEFORE:-}" ]; then
  echo "before ($BEFORE) against now, medians of $PAIRS pairs:"
  for m in fake endpoint slow-default slow-c8 rss-c8; do
    report "$m-before"
    printf "  %-32s now/before: wall %.2f, CPU %.2f, peak RSS %.2f\n" "$m" "$(ratio "$m" "$m-before" 1)" "$(ratio "$m" "$m-before" 3)" "$(ratio "$m" "$m-before" 2)"
  done
fi
ls -l "$work/home/local-preview/journals/" | awk -v n="$N" '/\.db$/ && $5 > 100000 {print "journal bytes per example (last N-example run): " $5/n; exit}'
