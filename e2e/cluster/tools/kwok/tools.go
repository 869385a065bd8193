//go:build tools

// Package tools pins the KWOK controller's main package; it is never compiled.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
