#!/usr/bin/env bash
# Finds or installs what the tests need on a fresh machine. Under CI=true a missing
# external tool is a failure, not a skip.
set -uo pipefail
cd "$(dirname "$0")/.."
go mod download || { echo "deps: go mod download failed"; exit 1; }

# kcat (librdkafka) is the real C client the server tests drive (server/kcat_test.go).
# Install Debian's package when it is missing and we can (root, apt-get), quietly and
# with a time bound. Outside CI a missing kcat only makes those tests skip.
if ! command -v kcat >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "deps: kcat missing; installing Debian's kcat"
		log=$(mktemp /tmp/strata-deps-apt.XXXXXX)
		export DEBIAN_FRONTEND=noninteractive
		if ! { timeout 300 apt-get update -qq &&
			timeout 300 apt-get install -y -qq --no-install-recommends kcat; } >"$log" 2>&1; then
			echo "deps: installing kcat failed; last lines of the apt log ($log):"
			tail -n 5 "$log"
		else
			rm -f "$log"
		fi
	fi
	if ! command -v kcat >/dev/null 2>&1; then
		if [ "${CI:-}" = true ]; then
			echo "deps: kcat not found and could not be installed (needs root and apt-get: apt-get install -y kcat); CI=true requires it" >&2
			exit 1
		fi
		echo "deps: kcat not found; the kcat tests will skip (install it with: apt-get install -y kcat)"
	fi
fi
exit 0
