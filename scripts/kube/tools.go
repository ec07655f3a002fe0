//go:build tools

// Package kube pins the cluster binaries scripts/kube.sh builds; it is never
// compiled, only read by the go command to resolve their dependencies.
package kube

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
