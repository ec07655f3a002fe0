package kubernetes

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestOOMKilled: only the holder's own end by the memory limit is the
// whole sandbox's OOM kill.
func TestOOMKilled(t *testing.T) {
	ended := func(name, reason string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: 137}}}
	}
	running := corev1.ContainerStatus{Name: holderContainer, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	tests := []struct {
		name   string
		status []corev1.ContainerStatus
		want   bool
	}{
		{"running", []corev1.ContainerStatus{running}, false},
		{"holder OOMKilled", []corev1.ContainerStatus{ended(holderContainer, "OOMKilled")}, true},
		{"holder ended otherwise", []corev1.ContainerStatus{ended(holderContainer, "Error")}, false},
		{"another container", []corev1.ContainerStatus{ended("unpack", "OOMKilled"), running}, false},
	}
	for _, tt := range tests {
		pod := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: tt.status}}
		if got := oomKilled(pod); got != tt.want {
			t.Errorf("%s: oomKilled = %v, want %v", tt.name, got, tt.want)
		}
	}
}
