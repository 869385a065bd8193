//go:build tools

// Package tools pins the Pulumi CLI and the Python language host the engine phase builds; it is never compiled.
package tools

import (
	_ "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"
	_ "github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3"
)
