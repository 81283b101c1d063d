#!/usr/bin/env bash
# cluster.sh: a local strata cluster in one command (`make cluster`): a real
# ZooKeeper on 127.0.0.1:2181 (scripts/zk.sh, Debian's zookeeper package,
# data in ./data-zk) and three brokers on 127.0.0.1:9092-9094 (broker.id
# 1-3, log dirs ./data-1..3, scripts/cluster/server-N.properties, logs in
# ./data-N.log, pid in ./data-N.pid). Ctrl-C (or SIGTERM) stops the
# brokers with SIGTERM (controlled shutdown: the last one to stop, with no
# broker left to take its leaderships, retries controlled.shutdown.max.retries
# times controlled.shutdown.retry.backoff.ms apart, as Kafka's), then
# ZooKeeper. A broker that dies is reported; the others keep running
# (restart it by hand with the command printed: it writes ./data-N.pid, so
# Ctrl-C stops it too).
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
# broker_pids lists the pids of ./data-N.pid whose process is a strata
# broker (a pid file may outlive its process).
broker_pids() {
	for n in 1 2 3; do
		[ -f "data-$n.pid" ] || continue
		pid=$(cat "data-$n.pid")
		if grep -q "server-$n.properties" "/proc/$pid/cmdline" 2>/dev/null; then
			echo "$pid"
		fi
	done
}
stop_all() {
	stopping=1
	echo
	echo "cluster.sh: stopping the brokers (SIGTERM: controlled shutdown)"
	live=$(broker_pids)
	for pid in $live; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in $live; do
		while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
	done
	rm -f data-1.pid data-2.pid data-3.pid
	bash scripts/zk.sh stop ./data-zk
	exit 0
}
trap stop_all INT TERM

bash scripts/zk.sh start ./data-zk 2181 || exit 1
for n in 1 2 3; do
	"$bin" broker --config "scripts/cluster/server-$n.properties" >>"data-$n.log" 2>&1 &
	pids+=($!)
	echo $! >"data-$n.pid"
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
			echo "cluster.sh: broker $n (pid $pid) exited ($rc); restart it with:"
			echo "  $bin broker --config scripts/cluster/server-$n.properties >>data-$n.log 2>&1 & echo \$! >data-$n.pid"
			pids[$i]=
		fi
	done
	[ -n "$stopping" ] && break
	sleep 1 &
	wait $! 2>/dev/null
done
