//go:build tools

// Package tools pins HAMi's scheduler, which the offline cluster builds from this module with rig-gpu-node
// (./gpunode); it is never compiled.
package tools

import (
	_ "github.com/Project-HAMi/HAMi/cmd/scheduler"
)
