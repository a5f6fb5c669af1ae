#!/usr/bin/env bash
# Run every fuzzer in turn for the given time (default 1m), one worker at a
# time so that a shared machine stays usable. New crashers are written to
# the package's testdata/fuzz/FuzzXxx: fix the bug and commit the input as a
# regression seed.
#
#   scripts/fuzz.sh 10m
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
fuzztime=${1:-1m}
fuzzers=(
	"./internal/config FuzzLoad"
	"./rules FuzzParse"
	"./rules FuzzUnitTestFile"
	"./rules FuzzParseSeriesValues"
	"./rules FuzzLoadOpenMetrics"
	"./rules FuzzLoadCSV"
	"./collectors FuzzScrape"
	"./notify FuzzSilenceAPI"
	"./demo FuzzPayloads"
	"./detect/nab FuzzReadFileAndWindows"
	"./detect FuzzSnapshot"
	"./detect FuzzLattice"
)
failed=0
for f in "${fuzzers[@]}"; do
	set -- $f
	echo "== $2 ($1) for $fuzztime"
	if ! $GO test -run '^$' -fuzz "^$2\$" -fuzztime "$fuzztime" -fuzzminimizetime 5s -parallel 1 "$1" 2>&1 | tail -n 3; then
		failed=1
	fi
done
exit $failed
