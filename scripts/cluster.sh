#!/usr/bin/env bash
# cluster.sh: a local strata cluster in one command (`make cluster`): a real
# ZooKeeper on 127.0.0.1:2181 (scripts/zk.sh, Debian's zookeeper package,
# data in ./data-zk) and three brokers on 127.0.0.1:9092-9094 (broker.id
# 1-3, log dirs ./data-1..3, scripts/cluster/server-N.properties, logs in
# ./data-N.log). Ctrl-C (or SIGTERM) stops the brokers with SIGTERM
# (controlled shutdown), then ZooKeeper. A broker that dies is reported;
# the others keep running (restart it by hand with the command printed).
set -uo pipefail
cd "$(dirname "$0")/.."
bin=./strata
if [ ! -x "$bin" ]; then
	echo "cluster.sh: $bin not found: run make build (make cluster does)" >&2
	exit 1
fi
if [ ! -f /usr/share/java/zookeeper.jar ] || ! command -v java >/dev/null 2>&1; then
	bash scripts/deps.sh || true
fi

pids=()
stopping=
stop_all() {
	stopping=1
	echo
	echo "cluster.sh: stopping the brokers (SIGTERM: controlled shutdown)"
	for pid in "${pids[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	bash scripts/zk.sh stop ./data-zk
	exit 0
}
trap stop_all INT TERM

bash scripts/zk.sh start ./data-zk 2181 || exit 1
for n in 1 2 3; do
	"$bin" broker --config "scripts/cluster/server-$n.properties" >>"data-$n.log" 2>&1 &
	pids+=($!)
	echo "cluster.sh: broker $n (pid $!) on 127.0.0.1:$((9091 + n)), data in ./data-$n, log in ./data-$n.log"
done
for n in 1 2 3; do
	port=$((9091 + n))
	for _ in $(seq 300); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			break
		fi
		if ! kill -0 "${pids[$((n - 1))]}" 2>/dev/null; then
			echo "cluster.sh: broker $n exited at start; the end of ./data-$n.log:" >&2
			tail -n 5 "data-$n.log" >&2
			stop_all
		fi
		sleep 0.1
	done
done
echo "cluster.sh: ready: --bootstrap-server 127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094 (Ctrl-C stops everything)"
while :; do
	for i in "${!pids[@]}"; do
		pid=${pids[$i]}
		if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid" 2>/dev/null
			rc=$?
			n=$((i + 1))
			echo "cluster.sh: broker $n (pid $pid) exited ($rc); restart it with: $bin broker --config scripts/cluster/server-$n.properties >>data-$n.log 2>&1 &"
			pids[$i]=
		fi
	done
	[ -n "$stopping" ] && break
	sleep 1 &
	wait $! 2>/dev/null
done
