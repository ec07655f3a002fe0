package kubernetes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// The selftest's targets on the pod network (backends.NetProber): a
// listener pod (TCP, and UDP standing in for a DNS server where the
// cluster has none), the API server's and the cluster DNS's endpoint
// addresses, and a control pod
// that connects to them with no policy of ours selecting it. The pods are
// the start-time proof's (proof.go), living for the selftest's length: a
// CLI killed meanwhile leaves them to a sweep by their deadline.
const (
	// selftestTargetLife bounds the pods: a selftest of both roles on a
	// cluster takes minutes.
	selftestTargetLife = 20 * time.Minute
	// apiAsk is written to the API server's endpoint: plain HTTP to its
	// TLS port, which Go's server answers with a 400 in plain HTTP, so
	// the answer shows the API server itself was reached.
	apiAsk    = "GET /version HTTP/1.0\r\n\r\n"
	apiAnswer = "HTTP/1."
)

// NetTargets implements backends.NetProber.
func (b *Backend) NetTargets(ctx context.Context, p *policy.Policy) (_ backends.NetProbe, err error) {
	if _, err := b.client(); err != nil {
		return nil, err
	}
	var id [4]byte
	_, _ = rand.Read(id[:])
	suffix := hex.EncodeToString(id[:])
	token := "triage-selftest-" + suffix
	listener, err := b.servePod(p, "selftest-listener-"+suffix, token, false, selftestTargetLife)
	if err != nil {
		return nil, err
	}
	control, err := b.servePod(p, "selftest-control-"+suffix, token, false, selftestTargetLife)
	if err != nil {
		return nil, err
	}
	np := &netProbe{b: b, pods: []*Rendered{listener, control}, control: control}
	defer func() {
		if err != nil {
			err = errors.Join(err, np.Close(context.WithoutCancel(ctx)))
		}
	}()
	for _, r := range np.pods {
		if err := b.create(ctx, r); err != nil {
			return nil, fmt.Errorf("the selftest's pod: %w", err)
		}
	}
	ip, err := b.awaitProofPod(ctx, listener)
	if err != nil {
		return nil, err
	}
	if _, err := b.awaitProofPod(ctx, control); err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(ip, proofPort)
	np.targets = append(np.targets, backends.NetTarget{ID: "listener", Kind: "pod", What: "the selftest's listener pod " + addr, Addr: addr, Expect: token})
	api, err := b.apiEndpoints(ctx)
	if err != nil {
		return nil, err
	}
	np.targets = append(np.targets, api...)
	dns, err := b.dnsEndpoints(ctx)
	if err != nil {
		return nil, err
	}
	if len(dns) == 0 {
		// No cluster DNS to query: the listener's UDP side stands in, so
		// the check still sends a datagram across the pod network.
		dns = []backends.NetTarget{{ID: "dns-standin", Kind: "dns", Proto: "udp", Addr: addr, Expect: token,
			What: "the selftest's listener pod over UDP " + addr + " (standing in: no UDP endpoint of a DNS service kube-system/kube-dns here)"}}
	}
	np.targets = append(np.targets, dns...)
	return np, nil
}

// dnsEndpoints are the cluster DNS's addresses (the Endpoints
// kube-system/kube-dns, UDP), each asked for the API server's name.
func (b *Backend) dnsEndpoints(ctx context.Context) ([]backends.NetTarget, error) {
	eps, err := b.cli.getEndpoints(ctx, "kube-system", "kube-dns")
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes: reading the Endpoints kube-system/kube-dns (the cluster DNS's addresses): %w", err)
	}
	var out []backends.NetTarget
	for _, s := range eps.Subsets {
		for _, port := range s.Ports {
			if port.Protocol != corev1.ProtocolUDP {
				continue
			}
			for _, a := range s.Addresses {
				addr := net.JoinHostPort(a.IP, strconv.Itoa(int(port.Port)))
				out = append(out, backends.NetTarget{ID: "dns-" + strconv.Itoa(len(out)), Kind: "dns", Proto: "udp",
					What: "the cluster DNS's endpoint " + addr, Addr: addr, DNS: "kubernetes.default.svc.cluster.local", Expect: "dns answer"})
			}
		}
	}
	return out, nil
}

// apiEndpoints are the addresses the API server answers on (the
// `kubernetes` Endpoints in default), not its ClusterIP, which only a
// service proxy answers. None shown: no target, and NET-41 cannot tell.
func (b *Backend) apiEndpoints(ctx context.Context) ([]backends.NetTarget, error) {
	eps, err := b.cli.getEndpoints(ctx, "default", "kubernetes")
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes: reading the Endpoints default/kubernetes (the API server's addresses): %w", err)
	}
	var out []backends.NetTarget
	for _, s := range eps.Subsets {
		for _, port := range s.Ports {
			if port.Protocol != "" && port.Protocol != corev1.ProtocolTCP {
				continue
			}
			for _, a := range s.Addresses {
				addr := net.JoinHostPort(a.IP, strconv.Itoa(int(port.Port)))
				out = append(out, backends.NetTarget{ID: "api-" + strconv.Itoa(len(out)), Kind: "apiserver",
					What: "the API server's endpoint " + addr, Addr: addr, Send: apiAsk, Expect: apiAnswer})
			}
		}
	}
	return out, nil
}

// netProbe is one selftest's targets and control pod.
type netProbe struct {
	b       *Backend
	pods    []*Rendered
	control *Rendered
	targets []backends.NetTarget
}

func (np *netProbe) Targets() []backends.NetTarget { return np.targets }

// Control connects to every target from the control pod (no policy of
// ours selects it) and returns what each answered.
func (np *netProbe) Control(ctx context.Context) (map[string]string, error) {
	obs, err := np.b.execProbe(ctx, np.control.Pod.Namespace, np.control.Pod.Name, tokenPlan(np.targets))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, t := range np.targets {
		out[t.ID] = obs[t.ID].Values["read"]
	}
	return out, nil
}

// tokenPlan is one tcp_token step per target.
func tokenPlan(targets []backends.NetTarget) protocol.ProbePlan {
	var plan protocol.ProbePlan
	for _, t := range targets {
		plan.Steps = append(plan.Steps, protocol.ProbeStep{ID: t.ID, Op: t.Op(), Args: t.Args(), List: []string{t.Addr}})
	}
	return plan
}

// Close removes the pods, whatever ctx says (bounded by remove's own
// waits).
func (np *netProbe) Close(ctx context.Context) error {
	var err error
	for _, r := range np.pods {
		err = errors.Join(err, np.b.remove(context.WithoutCancel(ctx), r))
	}
	return err
}
