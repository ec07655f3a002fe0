package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// api is the little of the Kubernetes API the backend uses: pods (and
// their attach, exec and log) and NetworkPolicies, through REST clients
// over a scheme of those two groups only. client-go's typed Clientset
// would register every API group at start-up (its scheme package's init,
// ~30 ms and 2 MB here) in every command of the binary, not only this
// backend's.
type api struct {
	core, net *rest.RESTClient
	params    runtime.ParameterCodec
}

func newAPI(cfg *rest.Config) (*api, error) {
	// client-go reports what it cannot return (a stream's copier that
	// failed) through klog on stderr; the library never prints. A logger
	// takes every severity (klog's stderr threshold would still copy
	// errors to stderr through SetOutput).
	klog.SetLogger(logr.Discard())
	klog.SetOutput(io.Discard)
	klog.LogToStderr(false)
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := networkingv1.AddToScheme(s); err != nil {
		return nil, err
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	codecs := serializer.NewCodecFactory(s)
	client := func(gv schema.GroupVersion, path string) (*rest.RESTClient, error) {
		c := rest.CopyConfig(cfg)
		c.GroupVersion, c.APIPath = &gv, path
		c.NegotiatedSerializer = codecs.WithoutConversion()
		if c.UserAgent == "" {
			c.UserAgent = "triage-sandbox"
		}
		return rest.RESTClientFor(c)
	}
	core, err := client(corev1.SchemeGroupVersion, "/api")
	if err != nil {
		return nil, err
	}
	net, err := client(networkingv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, err
	}
	return &api{core: core, net: net, params: runtime.NewParameterCodec(s)}, nil
}

func (a *api) version(ctx context.Context) ([]byte, error) {
	return a.core.Get().AbsPath("/version").DoRaw(ctx)
}

func (a *api) createPod(ctx context.Context, p *corev1.Pod) error {
	return a.core.Post().Namespace(p.Namespace).Resource("pods").Body(p).Do(ctx).Error()
}

func (a *api) getPod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	out := &corev1.Pod{}
	return out, a.core.Get().Namespace(ns).Resource("pods").Name(name).Do(ctx).Into(out)
}

func (a *api) deletePod(ctx context.Context, ns, name string) error {
	zero := int64(0)
	return a.core.Delete().Namespace(ns).Resource("pods").Name(name).
		Body(&metav1.DeleteOptions{GracePeriodSeconds: &zero}).Do(ctx).Error()
}

func (a *api) listPods(ctx context.Context, ns, selector string) (*corev1.PodList, error) {
	out := &corev1.PodList{}
	return out, a.core.Get().Namespace(ns).Resource("pods").
		VersionedParams(&metav1.ListOptions{LabelSelector: selector}, a.params).Do(ctx).Into(out)
}

func (a *api) podLogs(ctx context.Context, ns, name string) ([]byte, error) {
	return a.core.Get().Namespace(ns).Resource("pods").Name(name).SubResource("log").
		VersionedParams(&corev1.PodLogOptions{Container: holderContainer}, a.params).DoRaw(ctx)
}

// podStreamURL is the URL of a pod's attach or exec with opts.
func (a *api) podStreamURL(ns, name, sub string, opts runtime.Object) *url.URL {
	return a.core.Post().Namespace(ns).Resource("pods").Name(name).SubResource(sub).VersionedParams(opts, a.params).URL()
}

func (a *api) createNetworkPolicy(ctx context.Context, np *networkingv1.NetworkPolicy) error {
	return a.net.Post().Namespace(np.Namespace).Resource("networkpolicies").Body(np).Do(ctx).Error()
}

func (a *api) getNetworkPolicy(ctx context.Context, ns, name string) error {
	return a.net.Get().Namespace(ns).Resource("networkpolicies").Name(name).Do(ctx).Error()
}

func (a *api) deleteNetworkPolicy(ctx context.Context, ns, name string) error {
	return a.net.Delete().Namespace(ns).Resource("networkpolicies").Name(name).Do(ctx).Error()
}

func (a *api) listNetworkPolicies(ctx context.Context, ns, selector string) (*networkingv1.NetworkPolicyList, error) {
	out := &networkingv1.NetworkPolicyList{}
	return out, a.net.Get().Namespace(ns).Resource("networkpolicies").
		VersionedParams(&metav1.ListOptions{LabelSelector: selector}, a.params).Do(ctx).Into(out)
}

// runtimeClassHandler is the handler of RuntimeClass name (node.k8s.io,
// read raw: the scheme holds core and networking only).
func (a *api) runtimeClassHandler(ctx context.Context, name string) (string, error) {
	raw, err := a.core.Get().AbsPath("/apis/node.k8s.io/v1/runtimeclasses", name).DoRaw(ctx)
	if err != nil {
		return "", err
	}
	var rc struct {
		Handler string `json:"handler"`
	}
	if err := json.Unmarshal(raw, &rc); err != nil {
		return "", fmt.Errorf("RuntimeClass %s: %w", name, err)
	}
	return rc.Handler, nil
}

func (a *api) getService(ctx context.Context, ns, name string) (*corev1.Service, error) {
	out := &corev1.Service{}
	return out, a.core.Get().Namespace(ns).Resource("services").Name(name).Do(ctx).Into(out)
}

func (a *api) getEndpoints(ctx context.Context, ns, name string) (*corev1.Endpoints, error) {
	out := &corev1.Endpoints{}
	return out, a.core.Get().Namespace(ns).Resource("endpoints").Name(name).Do(ctx).Into(out)
}
