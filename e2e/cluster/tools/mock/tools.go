//go:build tools

// Package tools pins the HAMi mock device plugin, which the offline cluster builds from this module; it is never
// compiled.
package tools

import (
	_ "github.com/HAMi/mock-device-plugin/cmd/k8s-device-plugin"
)
