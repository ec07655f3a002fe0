// Package images embeds the default sandbox image's Dockerfile so the binary
// can build it (`triage-sandbox image build`) without a source checkout.
package images

import _ "embed"

// Dockerfile is images/Dockerfile.
//
//go:embed Dockerfile
var Dockerfile []byte
