// Package greet is a third-party dependency of the godeps fixture, served
// to the test from a local module proxy (a directory), never the network.
package greet

// Hello greets name.
func Hello(name string) string { return "hello, " + name }
