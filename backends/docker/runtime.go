package docker

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"

	"github.com/triage-sandbox/triage-sandbox/backends/internal/runtimes"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// daemonInfo is what resolving the default runtime needs of the daemon.
type daemonInfo interface {
	Info(ctx context.Context, o client.InfoOptions) (client.SystemInfoResult, error)
}

// resolveRuntime names the runtime the daemon runs a container under when
// none is configured: its default (runsc on a daemon set up for gVisor),
// whose traits (helpers that start as root, gVisor's process limits,
// exec-only commands) the sandbox must get. It fails closed: a sandbox
// built for the wrong runtime is weaker than none.
func resolveRuntime(ctx context.Context, d daemonInfo) (string, error) {
	const fix = "; set [sandbox] runtime to the runtime the daemon runs containers under"
	ctx, cancel := context.WithTimeout(ctx, infoTimeout)
	defer cancel()
	res, err := d.Info(ctx, client.InfoOptions{})
	if err != nil {
		return "", fmt.Errorf("asking the Docker daemon for its default runtime: %w%s", err, fix)
	}
	if res.Info.DefaultRuntime == "" {
		return "", errors.New("the Docker daemon does not say its default runtime" + fix)
	}
	return res.Info.DefaultRuntime, nil
}

// infoTimeout bounds the daemon's /info, slow on a busy daemon (seconds).
const infoTimeout = 30 * time.Second

// runtimeCache remembers the daemon's default runtime once resolved. The
// resolved name goes into every create request, so a daemon whose default
// changes later still runs the sandbox under the runtime it was built for.
type runtimeCache struct {
	mu   sync.Mutex
	name string
}

// withRuntime is p with the runtime its sandbox runs under named: p's
// own, or the daemon's default (asked once per Backend).
func (b *Backend) withRuntime(ctx context.Context, p *policy.Policy) (*policy.Policy, error) {
	if p.Runtime != "" {
		return p, nil
	}
	b.runtime.mu.Lock()
	defer b.runtime.mu.Unlock()
	if b.runtime.name == "" {
		name, err := resolveRuntime(ctx, b.cli)
		if err != nil {
			return nil, err
		}
		b.runtime.name = name
	}
	return withRuntimeName(p, b.runtime.name), nil
}

// knownRuntime is p with its runtime named when that is known without
// asking the daemon (p's own, or the default this Backend asked for
// before); nil when not.
func (b *Backend) knownRuntime(p *policy.Policy) *policy.Policy {
	if p.Runtime != "" {
		return p
	}
	b.runtime.mu.Lock()
	defer b.runtime.mu.Unlock()
	if b.runtime.name == "" {
		return nil
	}
	return withRuntimeName(p, b.runtime.name)
}

// rememberRuntime keeps name as the daemon's default for this Backend's
// later starts, unless one is kept already.
func (b *Backend) rememberRuntime(name string) {
	b.runtime.mu.Lock()
	defer b.runtime.mu.Unlock()
	if b.runtime.name == "" {
		b.runtime.name = name
	}
}

// sameTraits says whether two runtimes want the same sandbox.
func sameTraits(a, b runtimes.Traits) bool {
	a.Name, b.Name = "", ""
	return reflect.DeepEqual(a, b)
}

func withRuntimeName(p *policy.Policy, name string) *policy.Policy {
	q := *p
	q.Runtime = name
	return &q
}

// containerRuntime asks the daemon which runtime container id got. Only
// HostConfig.Runtime of its inspection is decoded: the SDK's inspect
// decodes all of it, the seccomp profile's 25 KB in its security options
// too, a millisecond of CPU between a cold run's create and its start.
func (b *Backend) containerRuntime(ctx context.Context, id string) (string, error) {
	b.rawOnce.Do(func() {
		dial := b.cli.Dialer()
		b.raw = &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx) },
		}}
	})
	u := "http://engine/containers/" + url.PathEscape(id) + "/json"
	if v := b.cli.ClientVersion(); v != "" {
		u = "http://engine/v" + strings.TrimPrefix(v, "v") + "/containers/" + url.PathEscape(id) + "/json"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := b.raw.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Message string }
		_ = json.Unmarshal(body, &e)
		return "", fmt.Errorf("the daemon answered %s: %s", resp.Status, cmp.Or(e.Message, strings.TrimSpace(string(body))))
	}
	var ins struct{ HostConfig *struct{ Runtime string } }
	if err := json.Unmarshal(body, &ins); err != nil {
		return "", fmt.Errorf("the daemon's inspection of the container: %w", err)
	}
	if ins.HostConfig == nil {
		return "", nil
	}
	return ins.HostConfig.Runtime, nil
}
