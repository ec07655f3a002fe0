package launch

import (
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/policy"
)

func TestCheckImageRoot(t *testing.T) {
	image := func() *policy.Policy {
		return &policy.Policy{User: policy.Identity{UID: 1000, GID: 1000}, Base: policy.Base{Kind: policy.BaseImage, Image: "img"}}
	}
	for _, tt := range []struct {
		name    string
		mutate  func(*policy.Policy)
		wantErr string
	}{
		{"an image, uid 1000", func(*policy.Policy) {}, ""},
		{"allow_all", func(p *policy.Policy) { p.AllowAll = true }, "allow_all has no container to render"},
		{"uid 0", func(p *policy.Policy) { p.User.UID = 0 }, "refusing to run as uid 0 inside the sandbox"},
		{"host root", func(p *policy.Policy) { p.Base = policy.Base{Kind: policy.BaseHost} }, "the x renderer needs an image as the root filesystem"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := image()
			tt.mutate(p)
			err := CheckImageRoot(p, "the x renderer")
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}
