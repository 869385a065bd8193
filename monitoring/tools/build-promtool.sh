#!/usr/bin/env bash
# Build Prometheus's promtool (pinned in go.mod/go.sum) and promqlnames (our PromQL checker on Prometheus's
# parser) into a cache keyed by those files and this script, and print the bin directory. Rebuilds only when they
# change. The tag `remove_all_sd` leaves out Prometheus's service discoveries (rules and queries need none), as the
# offline cluster's Prometheus does (e2e/cluster/build.py), so the two builds share Go's build cache.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if ! command -v go >/dev/null 2>&1; then
	echo "rules-test needs Go (https://go.dev/dl/) to build promtool from monitoring/tools/go.mod" >&2
	exit 2
fi
key="$(cat "$here/go.mod" "$here/go.sum" "$here/promqlnames/main.go" "$0" | sha256sum | cut -c1-16)"
bin="${GPUSHARE_PROMTOOL_CACHE:-$HOME/.cache/gpushare-promtool}/$key/bin"
if [ ! -x "$bin/promtool" ] || [ ! -x "$bin/promqlnames" ]; then
	mkdir -p "$bin.tmp"
	(cd "$here" && CGO_ENABLED=0 go build -trimpath -tags=remove_all_sd -o "$bin.tmp/" github.com/prometheus/prometheus/cmd/promtool ./promqlnames)
	rm -rf "$bin" && mv "$bin.tmp" "$bin"
fi
echo "$bin"
