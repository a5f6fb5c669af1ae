#!/usr/bin/env bash
# Side-by-side cost of seismo and the classic setup it replaces, on the same
# synthetic targets, in one run on one machine.
#
# For every series count in SERIES it starts the synthetic targets
# (bench/peer/targets), then, at the same time and for the same wall time:
#   - seismo run with the built-in pack,
#   - Prometheus with bench/peer/zscore-rules.yml.in (the pack the classic
#     way: recording rules + z-scores over avg/stddev_over_time),
#   - victoria-metrics (scraping) + vmalert with the same rules,
# all scraping every INTERVAL and evaluating every INTERVAL. After WARM
# seconds it measures for MEASURE seconds: CPU seconds from /proc/PID/stat
# (utime+stime, not self-reported), steady RSS (mean VmRSS while measuring)
# and peak RSS (VmHWM), the anonymous part of RSS (RssAnon: the heap,
# without the binary's file-backed pages), bytes on disk of each data directory, and the rule
# evaluation time and missed evaluations each tool reports. It prints one
# table with seismo/peer ratios.
#
# Environment (defaults in brackets):
#   SERIES   series counts to run, space separated      [1000 10000 100000]
#   PEERS    peers beside seismo: prometheus, victoria-metrics, or none
#            (none: seismo alone, for the growth curve)   [prometheus victoria-metrics]
#   WARM     seconds before measuring                     [180]
#   MEASURE  seconds measured                             [180]
#   INTERVAL scrape and evaluation interval               [10s]
#   WINDOW   z-score window of the classic rules          [3m]  (30m in production)
#   OUT      directory for configs, data, logs, results   [a new directory under /tmp]
#   PORT     first port used on 127.0.0.1                 [23100]
#   BIN_SEISMO, BIN_TARGETS  prebuilt binaries (default: built into OUT;
#            not SEISMO_*: seismo reads that namespace as config)
#
# Example: SERIES=1000 WARM=30 MEASURE=30 bench/peer/run.sh
set -euo pipefail

cd "$(dirname "$0")/../.."
# shellcheck source=bench/peer/seismo-config.sh
. bench/peer/seismo-config.sh
root=$PWD

SERIES=${SERIES:-"1000 10000 100000"}
PEERS=${PEERS:-"prometheus victoria-metrics"}
WARM=${WARM:-180}
MEASURE=${MEASURE:-180}
INTERVAL=${INTERVAL:-10s}
WINDOW=${WINDOW:-3m}
PORT=${PORT:-23100}
OUT=${OUT:-$(mktemp -d /tmp/seismo-bench-peer.XXXXXX)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

hz=$(getconf CLK_TCK)
log() { echo "bench-peer: $*" >&2; }

if [[ -z ${BIN_SEISMO:-} ]]; then
	log "building seismo"
	# Static, as make build makes it.
	CGO_ENABLED=0 go build -trimpath -o "$OUT/seismo" ./cmd/seismo
	BIN_SEISMO=$OUT/seismo
fi
if [[ -z ${BIN_TARGETS:-} ]]; then
	log "building the synthetic targets"
	go build -trimpath -o "$OUT/targets" ./bench/peer/targets
	BIN_TARGETS=$OUT/targets
fi

peers=()
for p in $PEERS; do
	case $p in
	none) ;;
	prometheus)
		if command -v prometheus >/dev/null; then peers+=(prometheus); else log "prometheus not installed: skipped"; fi
		;;
	victoria-metrics)
		if command -v victoria-metrics >/dev/null && command -v vmalert >/dev/null; then
			peers+=(victoria-metrics)
		else
			log "victoria-metrics or vmalert not installed: skipped"
		fi
		;;
	*) log "unknown peer $p"; exit 2 ;;
	esac
done

# Ports: targets from PORT, the others below it.
p_sink=$((PORT - 10)) p_seismo=$((PORT - 9)) p_prom=$((PORT - 8)) p_vm=$((PORT - 7)) p_vmalert=$((PORT - 6))

pids=()
cleanup() {
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	pids=()
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# cpu_ticks PID: utime+stime of the process (fields 14 and 15 of stat;
# the command name may hold spaces, so count from the closing parenthesis).
cpu_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
# status_kb PID FIELD: a kB field of /proc/PID/status.
status_kb() { awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status"; }
# metric URL NAME-REGEX: sum of the matching samples of a /metrics page.
metric() {
	curl -fsS --max-time 20 "$1" 2>/dev/null | awk -v re="$2" '$1 ~ re {s += $NF} END {printf "%.6f\n", s + 0}'
}
wait_http() {
	for _ in $(seq 1 120); do
		curl -fsS --max-time 2 "$1" >/dev/null 2>&1 && return 0
		sleep 0.5
	done
	log "$1 did not answer"
	return 1
}

# start_tools N: start every tool for N series; sets tool_pids[tool] (space
# separated PIDs when a tool is two processes) and tool_dirs[tool].
declare -A tool_pids tool_dirs
start_tools() {
	local n=$1 dir=$OUT/$1 targets
	rm -rf "$dir"
	mkdir -p "$dir"
	"$BIN_TARGETS" -series "$n" -listen "127.0.0.1:$PORT" -sink "127.0.0.1:$p_sink" \
		-write-targets "$dir/targets.txt" >"$dir/targets.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 1 100); do [[ -s $dir/targets.txt ]] && break; sleep 0.2; done
	targets=$(awk '{printf "%s\"%s\"", (NR > 1 ? ", " : ""), $1}' "$dir/targets.txt")
	wait_http "http://$(head -1 "$dir/targets.txt")/metrics"

	sed -e "s/@INTERVAL@/$INTERVAL/g" -e "s/@WINDOW@/$WINDOW/g" bench/peer/zscore-rules.yml.in >"$dir/zscore-rules.yml"
	cat >"$dir/scrape.yml" <<-EOF
		global:
		  scrape_interval: $INTERVAL
		scrape_configs:
		  - job_name: svc
		    static_configs:
		      - targets: [$targets]
	EOF

	# seismo: the built-in pack at the same interval; host and cgroup
	# collectors off (the peers do not collect them); alerts to the sink.
	mkdir -p "$dir/seismo"
	seismo_config "$dir/seismo.yml" "$dir/seismo" "127.0.0.1:$p_seismo" "$INTERVAL" "$n" "$targets" "127.0.0.1:$p_sink"
	"$BIN_SEISMO" run --config "$dir/seismo.yml" >"$dir/seismo.log" 2>&1 &
	pids+=($!)
	tool_pids[seismo]=$!
	tool_dirs[seismo]=$dir/seismo

	for p in "${peers[@]}"; do
		case $p in
		prometheus)
			{
				sed "s/^global:/global:\n  evaluation_interval: $INTERVAL/" "$dir/scrape.yml"
				echo "rule_files: [$dir/zscore-rules.yml]"
				echo "alerting: {alertmanagers: [{static_configs: [{targets: [\"127.0.0.1:$p_sink\"]}]}]}"
			} >"$dir/prometheus.yml"
			prometheus --config.file "$dir/prometheus.yml" --storage.tsdb.path "$dir/prometheus" \
				--web.listen-address "127.0.0.1:$p_prom" --log.level warn >"$dir/prometheus.log" 2>&1 &
			pids+=($!)
			tool_pids[prometheus]=$!
			tool_dirs[prometheus]=$dir/prometheus
			;;
		victoria-metrics)
			victoria-metrics -promscrape.config "$dir/scrape.yml" -storageDataPath "$dir/victoria-metrics" \
				-httpListenAddr "127.0.0.1:$p_vm" -loggerLevel ERROR >"$dir/victoria-metrics.log" 2>&1 &
			pids+=($!)
			local vm=$!
			wait_http "http://127.0.0.1:$p_vm/health"
			vmalert -rule "$dir/zscore-rules.yml" -datasource.url "http://127.0.0.1:$p_vm" \
				-remoteWrite.url "http://127.0.0.1:$p_vm" -remoteRead.url "http://127.0.0.1:$p_vm" \
				-notifier.url "http://127.0.0.1:$p_sink" -evaluationInterval "$INTERVAL" \
				-httpListenAddr "127.0.0.1:$p_vmalert" -loggerLevel ERROR >"$dir/vmalert.log" 2>&1 &
			pids+=($!)
			tool_pids[victoria-metrics]="$vm $!"
			tool_dirs[victoria-metrics]=$dir/victoria-metrics
			;;
		esac
	done
	wait_http "http://127.0.0.1:$p_seismo/-/ready"
	[[ -z ${tool_pids[prometheus]:-} ]] || wait_http "http://127.0.0.1:$p_prom/-/ready"
	[[ -z ${tool_pids[victoria-metrics]:-} ]] || wait_http "http://127.0.0.1:$p_vmalert/metrics"
}

# alive: fail when a tool has exited (its log says why).
alive() {
	local t pid
	for t in "${!tool_pids[@]}"; do
		for pid in ${tool_pids[$t]}; do
			if ! kill -0 "$pid" 2>/dev/null; then
				log "$t exited early; see its log in $OUT"
				exit 1
			fi
		done
	done
}

# self_metrics TOOL: "eval_seconds_sum eval_count missed samples" as the
# tool reports them.
self_metrics() {
	local u sum cnt missed samples
	case $1 in
	seismo)
		u=http://127.0.0.1:$p_seismo/metrics
		sum=$(metric "$u" '^seismo_rules_group_evaluation_duration_seconds_sum')
		cnt=$(metric "$u" '^seismo_rules_group_evaluation_duration_seconds_count')
		missed=$(metric "$u" '^seismo_rules_group_iterations_missed_total')
		samples=$(metric "$u" '^seismo_store_samples_appended_total')
		;;
	prometheus)
		u=http://127.0.0.1:$p_prom/metrics
		sum=$(metric "$u" '^prometheus_rule_group_duration_seconds_sum')
		cnt=$(metric "$u" '^prometheus_rule_group_duration_seconds_count')
		missed=$(metric "$u" '^prometheus_rule_group_iterations_missed_total')
		samples=$(metric "$u" '^prometheus_tsdb_head_samples_appended_total')
		;;
	victoria-metrics)
		u=http://127.0.0.1:$p_vmalert/metrics
		sum=$(metric "$u" '^vmalert_iteration_duration_seconds_sum')
		cnt=$(metric "$u" '^vmalert_iteration_duration_seconds_count')
		missed=$(metric "$u" '^vmalert_iteration_missed_total')
		samples=$(metric "http://127.0.0.1:$p_vm/metrics" '^vm_rows_inserted_total')
		;;
	esac
	echo "$sum $cnt $missed $samples"
}

sum_ticks() { local t=0 pid; for pid in $1; do t=$((t + $(cpu_ticks "$pid"))); done; echo $t; }
sum_kb() { local t=0 pid; for pid in $1; do t=$((t + $(status_kb "$pid" "$2"))); done; echo $t; }

results=$OUT/results.tsv
printf 'series\ttool\tcpu_s_per_min\trss_mb\tpeak_mb\tanon_mb\tdisk_mb\teval_ms\tmissed\tus_per_sample\trss_b_per_series\n' >"$results"

for n in $SERIES; do
	log "$n series: starting seismo ${peers[*]}"
	tool_pids=() tool_dirs=()
	start_tools "$n"
	tools=(seismo "${peers[@]}")
	log "$n series: warming up ${WARM}s"
	sleep "$WARM"
	alive
	declare -A t0 m0 rss_sum anon_sum
	for t in "${tools[@]}"; do
		t0[$t]=$(sum_ticks "${tool_pids[$t]}")
		m0[$t]=$(self_metrics "$t")
		rss_sum[$t]=0 anon_sum[$t]=0
	done
	log "$n series: measuring ${MEASURE}s"
	samples=0 start=$(date +%s)
	while (($(date +%s) - start < MEASURE)); do
		for t in "${tools[@]}"; do
			rss_sum[$t]=$((rss_sum[$t] + $(sum_kb "${tool_pids[$t]}" VmRSS)))
			anon_sum[$t]=$((anon_sum[$t] + $(sum_kb "${tool_pids[$t]}" RssAnon)))
		done
		samples=$((samples + 1))
		sleep 5
	done
	elapsed=$(($(date +%s) - start))
	alive
	for t in "${tools[@]}"; do
		t1=$(sum_ticks "${tool_pids[$t]}")
		m1=$(self_metrics "$t")
		peak=$(sum_kb "${tool_pids[$t]}" VmHWM)
		disk=$(du -sb "${tool_dirs[$t]}" | cut -f1)
		read -r s0 c0 x0 a0 <<<"${m0[$t]}"
		read -r s1 c1 x1 a1 <<<"$m1"
		awk -v n="$n" -v t="$t" -v dt=$((t1 - t0[$t])) -v hz="$hz" -v el="$elapsed" \
			-v rss="${rss_sum[$t]}" -v anon="${anon_sum[$t]}" -v k="$samples" -v peak="$peak" -v disk="$disk" \
			-v s0="$s0" -v s1="$s1" -v c0="$c0" -v c1="$c1" -v x0="$x0" -v x1="$x1" -v a0="$a0" -v a1="$a1" \
			'BEGIN {
				cpu = dt / hz; rssmb = rss / k / 1024
				ev = (c1 > c0) ? (s1 - s0) / (c1 - c0) * 1000 : 0
				us = (a1 > a0) ? cpu / (a1 - a0) * 1e6 : 0
				printf "%d\t%s\t%.3f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t%.3f\t%.0f\n", n, t, cpu / el * 60, rssmb, peak / 1024, anon / k / 1024, disk / 1048576, ev, x1 - x0, us, rss / k * 1024 / n
			}' >>"$results"
	done
	log "$n series: stopping"
	cleanup
	sleep 2
done

# The table, with seismo/peer ratios on the peers' rows.
awk -F'\t' -v interval="$INTERVAL" -v window="$WINDOW" -v warm="$WARM" -v measure="$MEASURE" '
NR == 1 { next }
{ row[NR] = $0; if ($2 == "seismo") { cpu[$1] = $3; rss[$1] = $4; anon[$1] = $6 } }
END {
	printf "interval %s, z-score window %s, warm-up %ss, measured %ss; CPU from /proc/PID/stat, RSS from /proc/PID/status\n", interval, window, warm, measure
	printf "%-8s %-17s %9s %8s %8s %8s %8s %8s %7s %9s %9s %11s %11s %11s\n", "series", "tool", "CPU-s/min", "RSS MB", "peak MB", "anon MB", "disk MB", "eval ms", "missed", "us/sample", "B/series", "CPU seismo/", "RSS seismo/", "anon seis/"
	for (i = 2; i <= NR; i++) {
		split(row[i], f, "\t")
		rc = rr = ra = "-"
		if (f[2] != "seismo") {
			if (f[3] > 0) rc = sprintf("%.2f", cpu[f[1]] / f[3])
			if (f[4] > 0) rr = sprintf("%.2f", rss[f[1]] / f[4])
			if (f[6] > 0) ra = sprintf("%.2f", anon[f[1]] / f[6])
		}
		printf "%-8s %-17s %9.3f %8.1f %8.1f %8.1f %8.1f %8.1f %7d %9.2f %9d %11s %11s %11s\n", f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9], f[10], f[11], rc, rr, ra
	}
}' "$results" | tee "$OUT/results.txt"
log "configs, logs and results in $OUT"
