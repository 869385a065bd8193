//go:build tools

// Package tools pins Prometheus so promtool is built from the Go module proxy at a known version.
package tools

import _ "github.com/prometheus/prometheus/cmd/promtool"
