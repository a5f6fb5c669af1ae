# shellcheck shell=bash
# seismo_config FILE DATA_DIR LISTEN INTERVAL SERIES TARGETS SINK writes the
# config bench/peer/run.sh and bench/peer/ab.sh give "seismo run": the
# built-in pack at INTERVAL, host and cgroup collectors off (the peers do
# not collect them), scraping TARGETS (a YAML list body of "host:port"
# strings) and sending alerts to the webhook sink at SINK (host:port).
seismo_config() {
	local file=$1 data=$2 listen=$3 interval=$4 n=$5 targets=$6 sink=$7
	cat >"$file" <<-EOF
		data_dir: $data
		http: {listen_address: $listen}
		log: {level: warn}
		rules:
		  builtin: {interval: $interval}
		storage: {max_series: $((n * 2 + 1000))}
		collectors:
		  scrape_interval: $interval
		  host: {enabled: false}
		  cgroup: {enabled: false}
		  scrape_configs:
		    - job_name: svc
		      static_configs:
		        - targets: [$targets]
		notify:
		  route: {receiver: sink}
		  receivers:
		    - name: sink
		      webhook_configs: [{url: "http://$sink/"}]
	EOF
}
