//go:build tools

// Package tools pins HAMi's scheduler and the HAMi mock device plugin, which the offline cluster builds from
// this module; it is never compiled.
package tools

import (
	_ "github.com/HAMi/mock-device-plugin/cmd/k8s-device-plugin"
	_ "github.com/Project-HAMi/HAMi/cmd/scheduler"
)
