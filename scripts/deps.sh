#!/usr/bin/env bash
# Finds or installs what the tests need on a fresh machine. Under CI=true a missing
# external tool is a failure, not a skip.
set -uo pipefail
cd "$(dirname "$0")/.."
go mod download || { echo "deps: go mod download failed"; exit 1; }

# apt_install PKG... installs Debian packages quietly with a time bound when we
# can (root, apt-get); it returns non-zero and shows the end of the apt log when
# that fails.
apt_updated=
apt_install() {
	[ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 || return 1
	echo "deps: installing Debian's $*"
	local log
	log=$(mktemp /tmp/strata-deps-apt.XXXXXX)
	export DEBIAN_FRONTEND=noninteractive
	if { [ -n "$apt_updated" ] || timeout 300 apt-get update -qq; } &&
		timeout 300 apt-get install -y -qq --no-install-recommends "$@"; then
		apt_updated=1
		rm -f "$log"
		return 0
	fi >"$log" 2>&1
	echo "deps: installing $* failed; last lines of the apt log ($log):"
	tail -n 5 "$log"
	return 1
}

# kcat (librdkafka) is the real C client the server tests drive (server/kcat_test.go).
# Outside CI a missing kcat only makes those tests skip.
if ! command -v kcat >/dev/null 2>&1; then
	apt_install kcat || true
	if ! command -v kcat >/dev/null 2>&1; then
		if [ "${CI:-}" = true ]; then
			echo "deps: kcat not found and could not be installed (needs root and apt-get: apt-get install -y kcat); CI=true requires it" >&2
			exit 1
		fi
		echo "deps: kcat not found; the kcat tests will skip (install it with: apt-get install -y kcat)"
	fi
fi

# ZooKeeper (Debian's zookeeper package, with its Java) is the real
# coordination service the cluster tests start through internal/zktest, and
# scripts/zk.sh for people; netcat-openbsd lets people send it four-letter
# commands (echo ruok | nc -q 1 127.0.0.1 2181). Outside CI a missing ZooKeeper
# only makes those tests skip; under CI=true it must install and start.
zk_ok() { [ -f /usr/share/java/zookeeper.jar ] && command -v java >/dev/null 2>&1; }
if ! zk_ok || ! command -v nc >/dev/null 2>&1; then
	apt_install zookeeper netcat-openbsd || true
fi
if ! zk_ok; then
	if [ "${CI:-}" = true ]; then
		echo "deps: ZooKeeper not found and could not be installed (needs root and apt-get: apt-get install -y zookeeper netcat-openbsd); CI=true requires it" >&2
		exit 1
	fi
	echo "deps: ZooKeeper not found; the cluster tests will skip (install it with: apt-get install -y zookeeper netcat-openbsd)"
elif [ "${CI:-}" = true ]; then
	# prove it starts: a ZooKeeper that will not start fails the run here
	zkdir=$(mktemp -d /tmp/strata-deps-zk.XXXXXX)
	zkport=$((20000 + RANDOM % 20000))
	if ! bash scripts/zk.sh start "$zkdir" "$zkport"; then
		echo "deps: ZooKeeper is installed but does not start; CI=true requires it" >&2
		exit 1
	fi
	bash scripts/zk.sh stop "$zkdir" >/dev/null
	rm -rf "$zkdir"
fi
# promtool (Debian's prometheus package) lints the /metrics exposition
# (server/metrics_test.go: TestMetricsPromtool). Outside CI a missing one
# only makes that test skip.
if ! command -v promtool >/dev/null 2>&1; then
	apt_install prometheus || true
	if ! command -v promtool >/dev/null 2>&1; then
		if [ "${CI:-}" = true ]; then
			echo "deps: promtool not found and could not be installed (needs root and apt-get: apt-get install -y prometheus); CI=true requires it" >&2
			exit 1
		fi
		echo "deps: promtool not found; the metrics lint test will skip (install it with: apt-get install -y prometheus)"
	fi
fi
# chromium (Debian's) loads the status page headless in
# server/metrics_browser_test.go. Outside CI a missing one only makes that
# test skip.
if ! command -v chromium >/dev/null 2>&1; then
	apt_install chromium || true
	if ! command -v chromium >/dev/null 2>&1; then
		if [ "${CI:-}" = true ]; then
			echo "deps: chromium not found and could not be installed (needs root and apt-get: apt-get install -y chromium); CI=true requires it" >&2
			exit 1
		fi
		echo "deps: chromium not found; the status page browser test will skip (install it with: apt-get install -y chromium)"
	fi
fi
exit 0
