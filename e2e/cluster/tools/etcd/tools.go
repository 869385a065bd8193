//go:build tools

// Package tools pins etcd (a main package at its module root); it is never compiled.
package tools

import _ "go.etcd.io/etcd/server/v3"
