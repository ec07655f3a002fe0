package kubecluster

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// bindUnscheduled stands in for kube-scheduler (not built here): until
// ctx ends it binds every pod that names no node to node, so a sandbox
// started by the CLI (which knows no node) runs on the test node. Pods a
// test bound itself (fake nodes, spec.nodeName) are never touched.
func (c *Cluster) bindUnscheduled(ctx context.Context, node string) {
	for ctx.Err() == nil {
		pods, err := c.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName="})
		if err == nil {
			for _, p := range pods.Items {
				if p.DeletionTimestamp != nil {
					continue
				}
				b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID},
					Target: corev1.ObjectReference{Kind: "Node", Name: node}}
				_ = c.Client.CoreV1().Pods(p.Namespace).Bind(ctx, b, metav1.CreateOptions{})
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}
