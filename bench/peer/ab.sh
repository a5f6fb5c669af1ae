#!/usr/bin/env bash
# Side-by-side cost of several seismo builds (or settings) on the same
# synthetic targets, at the same time: for comparing a change with the
# build before it on a machine too noisy for runs one after another.
#
# Usage: bench/peer/ab.sh SERIES WARM MEASURE BIN...
#   Every BIN is run with the built-in pack as bench/peer/run.sh runs
#   seismo; ENV_1, ENV_2, ... add environment to the first, second, ...
#   binary (e.g. ENV_2="GOGC=50"). PORT (24100) is the targets' first port;
#   the agents listen below it. BIN_TARGETS as in run.sh.
#
# Example: ENV_2=GOGC=50 bench/peer/ab.sh 1000 60 300 /tmp/old/seismo bin/seismo bin/seismo
set -euo pipefail

if (($# < 4)); then
	sed -n '2,14p' "$0" >&2
	exit 2
fi
n=$1 warm=$2 measure=$3
shift 3
cd "$(dirname "$0")/../.."
# shellcheck source=bench/peer/seismo-config.sh
. bench/peer/seismo-config.sh
PORT=${PORT:-24100}
out=$(mktemp -d /tmp/seismo-bench-ab.XXXXXX)
if [[ -z ${BIN_TARGETS:-} ]]; then
	go build -trimpath -o "$out/targets" ./bench/peer/targets
	BIN_TARGETS=$out/targets
fi
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait' EXIT
"$BIN_TARGETS" -series "$n" -listen "127.0.0.1:$PORT" -sink "127.0.0.1:$((PORT - 100))" \
	-write-targets "$out/targets.txt" >"$out/targets.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do [[ -s $out/targets.txt ]] && break; sleep 0.2; done
targets=$(awk '{printf "%s\"%s\"", (NR > 1 ? ", " : ""), $1}' "$out/targets.txt")
agents=() names=() i=0
for bin in "$@"; do
	i=$((i + 1))
	d=$out/$i
	mkdir -p "$d/data"
	seismo_config "$d/seismo.yml" "$d/data" "127.0.0.1:$((PORT - 90 + i))" 10s "$n" "$targets" "127.0.0.1:$((PORT - 100))"
	ev=ENV_$i
	# shellcheck disable=SC2086 # ENV_i is a list of assignments
	env ${!ev:-} "$bin" run --config "$d/seismo.yml" >"$d/log" 2>&1 &
	pids+=($!)
	agents+=($!)
	names+=("$bin ${!ev:-}")
done
sleep "$warm"
ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
kb() { awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status"; }
declare -a t0 rss anon
for j in "${!agents[@]}"; do t0[j]=$(ticks "${agents[j]}") rss[j]=0 anon[j]=0; done
k=0 start=$(date +%s) load0=$(cut -d' ' -f1 /proc/loadavg)
while (($(date +%s) - start < measure)); do
	for j in "${!agents[@]}"; do
		rss[j]=$((rss[j] + $(kb "${agents[j]}" VmRSS))) anon[j]=$((anon[j] + $(kb "${agents[j]}" RssAnon)))
	done
	k=$((k + 1))
	sleep 5
done
el=$(($(date +%s) - start))
for j in "${!agents[@]}"; do
	awk -v dt=$(($(ticks "${agents[j]}") - t0[j])) -v hz="$(getconf CLK_TCK)" -v el=$el -v r="${rss[j]}" -v a="${anon[j]}" -v k=$k -v b="${names[j]}" -v n="$n" \
		'BEGIN {printf "%d series  %-45s CPU-s/min %.4f  RSS %.1f MB  anon %.1f MB\n", n, b, dt / hz / el * 60, r / k / 1024, a / k / 1024}'
done
echo "load average $load0 -> $(cut -d' ' -f1 /proc/loadavg), measured ${el}s; logs in $out"
