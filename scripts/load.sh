#!/usr/bin/env bash
# Load test: while the agent scrapes and evaluates LOAD_SERIES synthetic
# series (scripts/loadtarget on loopback), hey drives /api/v1/query with
# 10 x the API's slot count in concurrent clients, and the console (GET /)
# with a quarter as many more (at nice 19: in production they are on other
# machines), and a second, gentle hey measures /-/healthy, first alone
# (baseline: what the machine itself allows) and then during the load.
# With 2 or more CPUs the generators and the agent are pinned to separate
# CPUs (taskset; LOAD_PIN=0 turns it off), so that the generator cannot
# starve the agent; the output says which.
#
# LOAD_CONSOLE_SLOTS sets the console's own slots (http.console),
# LOAD_CONSOLE_QPS paces each console client.
#
# Prints the health latencies (p99 target < 50 ms), the answers by status
# (and the 503s each pool shed), rule evaluations done and missed during
# the run, CPU used by the agent and the load generators, the Go
# scheduler's run-queue wait and GC CPU of the agent (runtime/metrics, from
# its /metrics), the load average and the agent's RSS. Everything runs on 127.0.0.1 and is stopped at exit.
#
#   make load                      # or scripts/load.sh
#   LOAD_PIN=0 make load           # without pinning
#   LOAD_DURATION=120s LOAD_SERIES=20000 scripts/load.sh
#
# Needs go and hey (Debian package hey); taskset (util-linux) to pin. Not a
# pass/fail test: it reports figures; the exit status is 1 only if the run
# itself failed.
set -euo pipefail

cd "$(dirname "$0")/.."
DURATION=${LOAD_DURATION:-60s}
SERIES=${LOAD_SERIES:-10000}
SLOTS=${LOAD_SLOTS:-64}                   # http.max_concurrent_requests
CONCURRENCY=${LOAD_CONCURRENCY:-$((SLOTS * 10))}
# Console clients on GET / (the alerts page), besides the API clients; 0
# leaves the console alone.
CONSOLE_CONCURRENCY=${LOAD_CONSOLE_CONCURRENCY:-$((SLOTS * 10 / 4))}
CONSOLE_SLOTS=${LOAD_CONSOLE_SLOTS:-4}    # http.console.max_concurrent_requests
# Requests a second of each console client; 0: each asks again as soon as
# it is answered (a flood). LOAD_CONSOLE_CONCURRENCY=4 LOAD_CONSOLE_QPS=1
# is a few people watching the console during an incident.
CONSOLE_QPS=${LOAD_CONSOLE_QPS:-0}
INTERVAL=${LOAD_INTERVAL:-5s}             # scrape and evaluation interval
QUERY=${LOAD_QUERY:-'sum by (shard) (rate(load_requests_total[1m]))'}
WARMUP=${LOAD_WARMUP:-30}                 # seconds before measuring
# PIN=auto: with 2 or more CPUs, the load generators (and the synthetic
# target) run on the first half of the CPUs and the agent on the rest
# (taskset), so that the generator cannot starve the agent: in production
# they are on other machines. PIN=0 runs everything on every CPU.
PIN=${LOAD_PIN:-auto}

command -v hey >/dev/null || { echo "load: hey is not installed (apt-get install hey)" >&2; exit 1; }

ncpu=$(nproc)
gen_pin=() agent_pin=() pinned="not pinned (LOAD_PIN=$PIN)"
if [ "$PIN" != 0 ] && ((ncpu >= 2)) && command -v taskset >/dev/null; then
	half=$((ncpu / 2))
	# cpus FIRST LAST: a taskset CPU list.
	cpus() { if [ "$1" = "$2" ]; then echo "$1"; else echo "$1-$2"; fi; }
	gen_cpus=$(cpus 0 $((half - 1))) agent_cpus=$(cpus "$half" $((ncpu - 1)))
	gen_pin=(taskset -c "$gen_cpus") agent_pin=(taskset -c "$agent_cpus")
	pinned="agent on CPU $agent_cpus, load generators and target on CPU $gen_cpus (taskset)"
elif [ "$PIN" != 0 ]; then
	pinned="not pinned ($ncpu CPU(s) or no taskset)"
fi
echo "load: $pinned"

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

echo "load: building seismo and the synthetic target"
CGO_ENABLED=0 go build -o "$work/seismo" ./cmd/seismo # static, as make build makes it
go build -o "$work/loadtarget" ./scripts/loadtarget

"${gen_pin[@]}" "$work/loadtarget" -addr 127.0.0.1:0 -series "$SERIES" >"$work/target.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/target.out" ] && break; sleep 0.1; done
target=$(head -1 "$work/target.out")

cat >"$work/load.rules.yml" <<EOF
groups:
  - name: load
    interval: $INTERVAL
    rules:
      - alert: LoadShardFast
        expr: rate(load_requests_total[1m]) > 1000
      - anomaly: LoadLatencyAnomaly
        expr: load_latency_seconds
        detector: {type: ewma}
EOF
cat >"$work/seismo.yml" <<EOF
data_dir: data
http:
  listen_address: 127.0.0.1:0
  max_concurrent_requests: $SLOTS
  console: {max_concurrent_requests: $CONSOLE_SLOTS}
log: {level: info, format: json}
collectors:
  scrape_interval: $INTERVAL
  scrape_timeout: $INTERVAL
  scrape_configs:
    - job_name: load
      static_configs: [{targets: ["$target"]}]
rules:
  files: [load.rules.yml]
  builtin: {enabled: false}
EOF
"$work/seismo" check config "$work/seismo.yml" >/dev/null
"$work/seismo" check rules "$work/load.rules.yml" >/dev/null

"${agent_pin[@]}" "$work/seismo" run --config "$work/seismo.yml" 2>"$work/seismo.log" >/dev/null &
agent=$!
pids+=("$agent")
for _ in $(seq 300); do grep -q '"agent ready"' "$work/seismo.log" && break; sleep 0.1; done
addr=$(grep '"agent ready"' "$work/seismo.log" | sed -E 's/.*"listen_address":"([^"]+)".*/\1/')
[ -n "$addr" ] || { echo "load: the agent did not start:" >&2; cat "$work/seismo.log" >&2; exit 1; }
base="http://$addr"
echo "load: agent at $base, target $target with $SERIES series, warming up ${WARMUP}s"
sleep "$WARMUP"

urlencode() {
	local s=$1 out="" c i
	for ((i = 0; i < ${#s}; i++)); do
		c=${s:i:1}
		case $c in
		[a-zA-Z0-9._~-]) out+=$c ;;
		*) out+=$(printf '%%%02X' "'$c") ;;
		esac
	done
	printf %s "$out"
}

# metric NAME: the sum of every sample of NAME on /metrics.
metric() {
	curl -fsS "$base/metrics" | awk -v n="$1" '$1 == n || index($1, n "{") == 1 { s += $NF } END { printf "%.0f\n", s }'
}
# pool_metric NAME POOL: the sum of the samples of NAME with pool="POOL".
pool_metric() {
	curl -fsS "$base/metrics" | awk -v n="$1{" -v p="pool=\"$2\"" 'index($1, n) == 1 && index($1, p) { s += $NF } END { printf "%.0f\n", s }'
}
# metricf NAME: the same, with decimals (CPU seconds).
metricf() {
	curl -fsS "$base/metrics" | awk -v n="$1" '$1 == n || index($1, n "{") == 1 { s += $NF } END { printf "%.2f\n", s }'
}
# Baseline: health alone, as the machine is right now (other work on it
# shows here, not only the API load).
BASELINE=${LOAD_BASELINE:-15s}
loadavg=$(cut -d' ' -f1-3 /proc/loadavg)
echo "load: /-/healthy alone for $BASELINE (baseline)"
"${gen_pin[@]}" hey -z "$BASELINE" -c 2 -q 10 -t 30 "$base/-/healthy" >"$work/baseline.txt"

# cpu PID: user+system CPU seconds the process has used.
cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.1f\n", ($14 + $15) / hz }' "/proc/$1/stat"; }
# hist NAME: the cumulative buckets of histogram NAME on /metrics, "le
# count" per line (the Go runtime's /sched/latencies among them).
hist() {
	curl -fsS "$base/metrics" | awk -v n="$1_bucket" 'index($1, n "{") == 1 {
		match($1, /le="[^"]+"/); print substr($1, RSTART + 4, RLENGTH - 5), $2 }'
}
# hist_quantile Q BEFORE AFTER: the bucket bound below which a fraction Q
# of the observations made between the two snapshots fell.
hist_quantile() {
	paste -d' ' "$2" "$3" | awk -v q="$1" '{ le[NR] = $1; d[NR] = $4 - $2 } END {
		for (i = 1; i <= NR; i++) if (d[i] >= q * d[NR]) {
			if (le[i] == "+Inf") { print "> " le[i - 1] * 1000 " ms"; exit }
			printf "<= %.3g ms\n", le[i] * 1000; exit } }'
}
hist go_sched_latencies_seconds >"$work/sched0.txt"
gc0=$(metricf go_gc_cpu_seconds_total)
assist0=$(metricf go_gc_mark_assist_cpu_seconds_total)
evals0=$(metric seismo_rules_group_evaluations_total)
cpu0=$(cpu "$agent")
missed0=$(metric seismo_rules_group_iterations_missed_total)
failed0=$(metric seismo_rules_group_evaluation_failures_total)

echo "load: $CONCURRENCY clients on /api/v1/query and $CONSOLE_CONCURRENCY on the console for $DURATION ($SLOTS API slots, $CONSOLE_SLOTS console slots)"
(
	while kill -0 "$agent" 2>/dev/null; do
		awk '/^VmRSS/ { print $2 }' "/proc/$agent/status"
		sleep 1
	done
) >"$work/rss.txt" &
pids+=($!)
TIMEFORMAT='%U %S'
# The API clients run at the lowest CPU priority: in production they are on
# other machines, here they share the agent's cores.
{ time "${gen_pin[@]}" nice -n 19 hey -z "$DURATION" -c "$CONCURRENCY" -t 30 "$base/api/v1/query?query=$(urlencode "$QUERY")" >"$work/api.txt"; } 2>"$work/hey-cpu.txt" &
api=$!
console=
if ((CONSOLE_CONCURRENCY > 0)); then
	console_q=()
	[ "$CONSOLE_QPS" = 0 ] || console_q=(-q "$CONSOLE_QPS")
	{ time "${gen_pin[@]}" nice -n 19 hey -z "$DURATION" -c "$CONSOLE_CONCURRENCY" "${console_q[@]}" -t 30 "$base/" >"$work/console.txt"; } 2>"$work/hey-console-cpu.txt" &
	console=$!
fi
"${gen_pin[@]}" hey -z "$DURATION" -c 2 -q 10 -t 30 "$base/-/healthy" >"$work/health.txt"
wait "$api"
[ -z "$console" ] || wait "$console"

cpu1=$(cpu "$agent")
loadavg1=$(cut -d' ' -f1-3 /proc/loadavg)
hist go_sched_latencies_seconds >"$work/sched1.txt"
gc1=$(metricf go_gc_cpu_seconds_total)
assist1=$(metricf go_gc_mark_assist_cpu_seconds_total)
hey_cpu=$(cat "$work"/hey-*cpu.txt | awk '{ s += $1 + $2 } END { printf "%.1f", s }')
evals1=$(metric seismo_rules_group_evaluations_total)
missed1=$(metric seismo_rules_group_iterations_missed_total)
failed1=$(metric seismo_rules_group_evaluation_failures_total)
series=$(metric seismo_store_series)
shed_api=$(pool_metric seismo_http_requests_rejected_total api)
shed_console=$(pool_metric seismo_http_requests_rejected_total console)
rss_max=$(sort -n "$work/rss.txt" | tail -1)
hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$agent/status")

pct() { awk -v p="$1" '$1 == p "%" && $2 == "in" { printf "%.1f ms", $3 * 1000 }' "$2"; }
codes() { awk '/Status code distribution/ { on = 1; next } on && $1 ~ /^\[/ { printf "%s%s %s", sep, $1, $2; sep = ", "; next } on && sep { exit }' "$1"; }
rps() { awk '/Requests\/sec/ { printf "%.0f", $2 }' "$1"; }

cat <<EOF

seismo load test ($(date -u +%FT%TZ), $ncpu cores, $DURATION)
  CPUs                       $pinned
  load average               $loadavg before the run, $loadavg1 at its end
  series in store            $series (target serves $SERIES)
  /api/v1/query clients      $CONCURRENCY for $SLOTS API slots (nice 19), query: $QUERY
    answers                  $(codes "$work/api.txt")   ($(rps "$work/api.txt") req/s)
    latency p50 / p99        $(pct 50 "$work/api.txt") / $(pct 99 "$work/api.txt")
$(if [ -n "$console" ]; then
	echo "  console (GET /) clients    $CONSOLE_CONCURRENCY for $CONSOLE_SLOTS console slots (nice 19)$([ "$CONSOLE_QPS" = 0 ] || echo ", $CONSOLE_QPS req/s each")"
	echo "    answers                  $(codes "$work/console.txt")   ($(rps "$work/console.txt") req/s)"
	echo "    latency p50 / p99        $(pct 50 "$work/console.txt") / $(pct 99 "$work/console.txt")"
fi)
  shed by the agent (503)     API pool $shed_api, console pool $shed_console (seismo_http_requests_rejected_total{pool})
  /-/healthy alone, before   p50 $(pct 50 "$work/baseline.txt") / p99 $(pct 99 "$work/baseline.txt")   (baseline, $BASELINE)
  /-/healthy (2 clients, 10 req/s each) during the API load
    answers                  $(codes "$work/health.txt")
    latency p50 / p99        $(pct 50 "$work/health.txt") / $(pct 99 "$work/health.txt")   (target p99 < 50 ms)
  rule evaluations           $((evals1 - evals0)) done, $((missed1 - missed0)) missed, $((failed1 - failed0)) failed (interval $INTERVAL)
  CPU seconds used           agent $(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { printf "%.1f", b - a }'), load generators $hey_cpu (of $(nproc) cores x $DURATION)
  agent Go scheduler         run-queue wait (/sched/latencies) p50 $(hist_quantile 0.5 "$work/sched0.txt" "$work/sched1.txt"), p99 $(hist_quantile 0.99 "$work/sched0.txt" "$work/sched1.txt"), p99.9 $(hist_quantile 0.999 "$work/sched0.txt" "$work/sched1.txt")
  agent GC CPU seconds       $(awk -v a="$gc0" -v b="$gc1" 'BEGIN { printf "%.1f", b - a }') (mark assists $(awk -v a="$assist0" -v b="$assist1" 'BEGIN { printf "%.1f", b - a }'))
  agent RSS                  max $((rss_max / 1024)) MiB during the run, peak (VmHWM) $((hwm / 1024)) MiB
EOF
