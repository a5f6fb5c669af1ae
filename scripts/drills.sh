#!/usr/bin/env bash
# Chaos drills at full size: build bin/seismo, run every drill of the
# drills package against it, and print what each drill did and what was
# lost (it must be nothing). Exits non-zero when a drill fails.
#
#   scripts/drills.sh            # all drills (several minutes)
#   scripts/drills.sh Kill9      # drills whose test name matches
#
# Needs /usr/bin/prometheus-alertmanager, and root for the tmpfs of the
# full/read-only data directory drill (skipped otherwise, with the reason).
set -uo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
filter=${1:-.}
log=$(mktemp -t seismo-drills.XXXXXX)

make build >/dev/null || exit 1
echo "drills: running against bin/seismo; go test -v output in $log"
DRILLS_FULL=1 TEST_SEISMO_BIN="$PWD/bin/seismo" $GO test -count=1 -timeout 60m -v -run "TestDrill($filter)" ./drills >"$log" 2>&1
rc=$?

echo
grep -E '^DRILL ' "$log" || true
skipped=$(grep -A1 -e '--- SKIP' "$log" || true)
if [ -n "$skipped" ]; then
	echo
	echo "skipped:"
	echo "$skipped"
fi
echo
if [ $rc -ne 0 ]; then
	grep -E -- '--- FAIL|Error:|Messages:|lost|duplicated' "$log" | grep -v '^DRILL ' | head -50
	echo "drills: FAILED (full output: $log)"
	exit 1
fi
rm -f "$log"
echo "drills: all passed, nothing lost"
