//go:build tools

// Package tools pins Karpenter's kwok main package; it is never compiled.
package tools

import _ "sigs.k8s.io/karpenter/kwok"
