//go:build tools

// Package tools pins Helm's command; it is never compiled.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
