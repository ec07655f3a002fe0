//go:build !linux

package oci

import "errors"

func setSubreaper() error { return errors.New("no child subreapers here") }
