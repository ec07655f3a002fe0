package local

import "github.com/triage-sandbox/triage-sandbox/inside/confine"

type (
	confineMask = confine.Mask
	confineSym  = confine.Symlink
	confineBind = confine.Bind
)
