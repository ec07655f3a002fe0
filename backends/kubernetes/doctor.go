package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

var (
	_ backends.EngineReporter = (*Backend)(nil)
	_ backends.LayerReporter  = (*Backend)(nil)
)

// EngineInfo implements backends.EngineReporter: the API server's version,
// where it is, and the namespace sandboxes go to.
func (b *Backend) EngineInfo(ctx context.Context) (string, error) {
	cli, err := b.client()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	raw, err := cli.version(ctx)
	if err != nil {
		return "", fmt.Errorf("cannot reach the Kubernetes API server at %s: %v; check KUBECONFIG and the cluster", b.cfg.Host, err)
	}
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	_ = json.Unmarshal(raw, &v)
	return fmt.Sprintf("Kubernetes %s at %s", v.GitVersion, b.cfg.Host), nil
}

// Layers implements backends.LayerReporter: LayersFor the kubeconfig's
// namespace.
func (b *Backend) Layers() []backends.Layer { return b.LayersFor(nil) }

// LayersFor is what the configured cluster shows of what the backend
// relies on or cannot know, asked of its API, for the namespace p's
// sandboxes go to (nothing when it cannot be reached; EngineInfo says
// why). doctor asks it for the configured policy.
var _ backends.PolicyLayerReporter = (*Backend)(nil)

func (b *Backend) LayersFor(p *policy.Policy) []backends.Layer {
	cli, err := b.client()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	defer cancel()
	if _, err := cli.version(ctx); err != nil {
		return nil
	}
	ns := b.namespace(p)
	return []backends.Layer{
		b.podSecurityLayer(ctx, cli, ns),
		runtimeClassLayer(ctx, cli),
		{Name: "NetworkPolicy enforcement", Available: false,
			Detail: "the API cannot tell whether the cluster's network plugin enforces NetworkPolicy; not checked here: a namespace's first loopback-only start proves it with canary pods under the deny-all policy (again after 10 min) and refuses where a target is reached",
			Cost:   "a loopback-only sandbox's deny-all NetworkPolicy holds only where the network plugin enforces it"},
		{Name: "per-pod process limit", Available: false,
			Detail: "a pod spec has no process limit (the kubelet's podPidsLimit is per node); not checked here: each start reads its node's (configz, again after 10 min) and refuses where it is unset, above the policy's pids or unreadable",
			Cost:   "a fork bomb is bounded by the node's podPidsLimit only"},
	}
}

// podSecurityLayer: whether the namespace enforces the restricted Pod
// Security profile (the API server then refuses any weaker pod).
func (b *Backend) podSecurityLayer(ctx context.Context, cli *api, ns string) backends.Layer {
	l := backends.Layer{Name: "restricted Pod Security in " + ns,
		Cost: "the API server would admit a weaker pod made by anyone else in the namespace (ours are restricted either way)"}
	raw, err := cli.core.Get().AbsPath("/api/v1/namespaces/" + ns).DoRaw(ctx)
	if err != nil {
		l.Detail = fmt.Sprintf("cannot read namespace %s: %v", ns, firstLine(err.Error()))
		return l
	}
	var obj struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(raw, &obj)
	level := obj.Metadata.Labels["pod-security.kubernetes.io/enforce"]
	l.Available = level == "restricted"
	if level == "" {
		level = "none"
	}
	l.Detail = "pod-security.kubernetes.io/enforce: " + level
	return l
}

// runtimeClassLayer lists the cluster's RuntimeClasses ([sandbox] runtime
// names one, e.g. gVisor's).
func runtimeClassLayer(ctx context.Context, cli *api) backends.Layer {
	l := backends.Layer{Name: "RuntimeClasses", Cost: "pods run under the node's default runtime (runc: the host kernel's syscall surface)"}
	raw, err := cli.core.Get().AbsPath("/apis/node.k8s.io/v1/runtimeclasses").DoRaw(ctx)
	if err != nil {
		l.Detail = "cannot list them: " + firstLine(err.Error())
		return l
	}
	var list struct {
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Handler string `json:"handler"`
		} `json:"items"`
	}
	_ = json.Unmarshal(raw, &list)
	var names []string
	for _, rc := range list.Items {
		names = append(names, rc.Metadata.Name+" (handler "+rc.Handler+")")
	}
	l.Available = len(names) > 0
	l.Detail = "none; [sandbox] runtime names one (e.g. gVisor's) where the cluster has it"
	if len(names) > 0 {
		l.Detail = strings.Join(names, ", ")
	}
	return l
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
