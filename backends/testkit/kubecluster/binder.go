//go:build linux

package kubecluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// bindUnscheduled stands in for kube-scheduler (not built here): until
// ctx ends it binds the pods that name no node to node, oldest first,
// each only once the node has room for its requests (CPU and memory), so
// a pod waits as it would for a scheduler instead of being rejected by
// the kubelet. A sandbox started by the CLI (which knows no node) runs on
// the test node this way. Pods a test bound itself (fake nodes,
// spec.nodeName) are never touched.
func (c *Cluster) bindUnscheduled(ctx context.Context, node string) {
	for ctx.Err() == nil {
		c.bindRound(ctx, node)
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// bindRound binds what fits now; what fails is logged in DIR/binder.log.
func (c *Cluster) bindRound(ctx context.Context, node string) {
	if err := c.tryBind(ctx, node); err != nil && ctx.Err() == nil {
		if f, ferr := os.OpenFile(filepath.Join(c.Dir, "binder.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); ferr == nil {
			fmt.Fprintf(f, "%s %v\n", time.Now().Format(time.RFC3339), err)
			f.Close()
		}
	}
}

func (c *Cluster) tryBind(ctx context.Context, node string) error {
	pending, err := c.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName="})
	if err != nil || len(pending.Items) == 0 {
		return err
	}
	n, err := c.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	bound, err := c.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return err
	}
	free := n.Status.Allocatable.DeepCopy()
	for _, p := range bound.Items {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			take(free, requests(&p))
		}
	}
	sort.Slice(pending.Items, func(i, j int) bool {
		return pending.Items[i].CreationTimestamp.Before(&pending.Items[j].CreationTimestamp)
	})
	for _, p := range pending.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		req := requests(&p)
		if !fits(free, req) {
			return nil // oldest first: a later, smaller pod does not overtake it
		}
		b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID},
			Target: corev1.ObjectReference{Kind: "Node", Name: node}}
		if err := c.Client.CoreV1().Pods(p.Namespace).Bind(ctx, b, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("binding %s/%s: %w", p.Namespace, p.Name, err)
		}
		take(free, req)
	}
	return nil
}

// requests is what a pod asks of a node: its containers' requests, or an
// init container's where that is more (they run before, one at a time).
func requests(p *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, c := range p.Spec.Containers {
		for k, q := range c.Resources.Requests {
			sum := out[k]
			sum.Add(q)
			out[k] = sum
		}
	}
	for _, c := range p.Spec.InitContainers {
		for k, q := range c.Resources.Requests {
			if cur, ok := out[k]; !ok || q.Cmp(cur) > 0 {
				out[k] = q.DeepCopy()
			}
		}
	}
	return out
}

func fits(free, req corev1.ResourceList) bool {
	for _, k := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		q, ok := req[k]
		if !ok {
			continue
		}
		f, ok := free[k]
		if ok && q.Cmp(f) > 0 {
			return false
		}
	}
	return true
}

func take(free, req corev1.ResourceList) {
	for k, q := range req {
		if f, ok := free[k]; ok {
			f.Sub(q)
			free[k] = f
		}
	}
}
