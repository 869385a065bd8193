//go:build tools

// Package tools pins the Prometheus server's main package; it is never compiled.
package tools

import _ "github.com/prometheus/prometheus/cmd/prometheus"
