//go:build tools

// Package tools pins the pulumi-kubernetes provider's main package; it is never compiled.
package tools

import _ "github.com/pulumi/pulumi-kubernetes/provider/v4/cmd/pulumi-resource-kubernetes"
