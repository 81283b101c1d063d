#!/usr/bin/env bash
# zk.sh start|stop|status DIR [PORT]: a standalone ZooKeeper (Debian's
# zookeeper package, Java's QuorumPeerMain) on 127.0.0.1:PORT (default 2181)
# with zoo.cfg, data/, logs/ and zk.pid in DIR. The same zoo.cfg and java
# command line as the tests' internal/zktest (TestZKScript checks they match).
# start returns once the server serves requests (ruok answers imok and srvr
# its mode), or fails with the end of the log after 60 s.
set -euo pipefail
cmd=${1:-}; dir=${2:-}; port=${3:-2181}
if [ -z "$cmd" ] || [ -z "$dir" ]; then
	echo "usage: $0 start|stop|status DIR [PORT]" >&2
	exit 2
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
pidfile="$dir/zk.pid"

four() { # four-letter command; prints the answer
	exec 3<>"/dev/tcp/127.0.0.1/$port" 2>/dev/null || return 1
	printf '%s' "$1" >&3
	timeout 2 cat <&3 || true
	exec 3<&- 3>&-
}

running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

case "$cmd" in
start)
	if running; then
		echo "zk.sh: already running (pid $(cat "$pidfile")) in $dir"
		exit 0
	fi
	for f in /usr/share/java/zookeeper.jar /usr/share/java/slf4j-simple.jar; do
		[ -f "$f" ] || { echo "zk.sh: $f missing (apt-get install -y zookeeper)" >&2; exit 1; }
	done
	command -v java >/dev/null || { echo "zk.sh: java missing (apt-get install -y zookeeper)" >&2; exit 1; }
	mkdir -p "$dir/data" "$dir/logs"
	cat >"$dir/zoo.cfg" <<CFG
tickTime=500
minSessionTimeout=1000
maxSessionTimeout=60000
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat,mntr,conf,envi,cons,dump
forceSync=no
preAllocSize=1024
CFG
	nohup java -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData \
		-Dzookeeper.log.dir="$dir/logs" \
		-cp /etc/zookeeper/conf:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar \
		org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg" \
		>>"$dir/logs/zk.out" 2>&1 </dev/null &
	echo $! >"$pidfile"
	deadline=$((SECONDS + 60))
	until [ "$(four ruok 2>/dev/null)" = imok ] && four srvr 2>/dev/null | grep -q '^Mode: '; do
		if ! running; then
			echo "zk.sh: ZooKeeper exited at start; last lines of $dir/logs/zk.out:" >&2
			tail -n 15 "$dir/logs/zk.out" >&2
			rm -f "$pidfile"
			exit 1
		fi
		if [ $SECONDS -ge $deadline ]; then
			echo "zk.sh: ZooKeeper did not serve within 60 s; last lines of $dir/logs/zk.out:" >&2
			tail -n 15 "$dir/logs/zk.out" >&2
			kill -9 "$(cat "$pidfile")" 2>/dev/null || true
			rm -f "$pidfile"
			exit 1
		fi
		sleep 0.1
	done
	echo "zk.sh: ZooKeeper serving on 127.0.0.1:$port (pid $(cat "$pidfile"), $dir)"
	;;
stop)
	if ! running; then
		rm -f "$pidfile"
		echo "zk.sh: not running in $dir"
		exit 0
	fi
	pid=$(cat "$pidfile")
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
	rm -f "$pidfile"
	echo "zk.sh: stopped"
	;;
status)
	if running; then
		echo "zk.sh: running (pid $(cat "$pidfile")) on 127.0.0.1:$port: $(four ruok 2>/dev/null)"
	else
		echo "zk.sh: not running in $dir"
		exit 1
	fi
	;;
*)
	echo "usage: $0 start|stop|status DIR [PORT]" >&2
	exit 2
	;;
esac
