//go:build tools

// Package kuberouter pins the policy controller scripts/kuberouter.sh
// builds for the kubernetes test cluster; it is never compiled, only read
// by the go command to resolve the binary's dependencies.
package kuberouter

import (
	_ "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router"
)
