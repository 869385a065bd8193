#!/usr/bin/env bash
# Build Prometheus's promtool (pinned in go.mod/go.sum) and promqlnames (our PromQL checker on Prometheus's
# parser) into a cache keyed by those files, and print the bin directory. Rebuilds only when they change.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if ! command -v go >/dev/null 2>&1; then
	echo "rules-test needs Go (https://go.dev/dl/) to build promtool from monitoring/tools/go.mod" >&2
	exit 2
fi
key="$(cat "$here/go.mod" "$here/go.sum" "$here/promqlnames/main.go" | sha256sum | cut -c1-16)"
bin="${GPUSHARE_PROMTOOL_CACHE:-$HOME/.cache/gpushare-promtool}/$key/bin"
if [ ! -x "$bin/promtool" ] || [ ! -x "$bin/promqlnames" ]; then
	mkdir -p "$bin.tmp"
	(cd "$here" && CGO_ENABLED=0 go build -trimpath -o "$bin.tmp/" github.com/prometheus/prometheus/cmd/promtool ./promqlnames)
	rm -rf "$bin" && mv "$bin.tmp" "$bin"
fi
echo "$bin"
