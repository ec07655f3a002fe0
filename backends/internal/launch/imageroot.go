package launch

import (
	"errors"
	"fmt"

	"github.com/triage-sandbox/triage-sandbox/policy"
)

// CheckImageRoot refuses what no image-root renderer (docker, oci) may
// render: allow_all (nothing to contain), uid 0 inside, and a root other
// than an image. Both renderers call it, so they refuse alike. who names
// the renderer in the error ("the docker backend").
func CheckImageRoot(p *policy.Policy, who string) error {
	if p.AllowAll {
		return errors.New("allow_all has no container to render: it runs unconfined on the host")
	}
	if p.User.UID == 0 {
		return errors.New("refusing to run as uid 0 inside the sandbox")
	}
	if p.Base.Kind != policy.BaseImage {
		return fmt.Errorf("%s needs an image as the root filesystem, the policy has %q", who, p.Base.Kind)
	}
	return nil
}
