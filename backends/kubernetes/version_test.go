package kubernetes

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// TestImageOfAnotherVersionRefused: a pod whose image's inside binary
// speaks another protocol version is refused at start with one line that
// says what to rebuild, whether its holder said ready (checked where every
// holder backend awaits it, holderexec.AwaitHolder) or refused our spec
// and ended (its status in the termination message, the log's tail).
func TestImageOfAnotherVersionRefused(t *testing.T) {
	terminated := func(msg string) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 125, Message: msg}}}}}}
	}
	var ours bytes.Buffer
	_ = protocol.WriteStatus(&ours, protocol.Status{State: protocol.StateHolderFailed, Detail: "no /proc"})
	for _, tt := range []struct {
		name, msg, want string
	}{
		{"a status without a version", "triage-sandbox: __hold: bad spec\n" +
			`triage-sandbox-status {"state":"holder_failed","detail":"x"}`, "the image's inside binary (the pod's holder) speaks protocol 0, this triage-sandbox speaks"},
		{"a later build", fmt.Sprintf(`triage-sandbox-status {"protocol":%d,"state":"holder_failed","detail":"the triage-sandbox that started __hold speaks protocol %d"}`, protocol.Version+1, protocol.Version) +
			"\ntriage-sandbox: ...", fmt.Sprintf("speaks protocol %d, this triage-sandbox speaks %d: rebuild both", protocol.Version+1, protocol.Version)},
		{"this build's failure", ours.String(), "(exit 125): the holder cannot run: no /proc"},
		{"no status", "exec format error", "(exit 125): exec format error"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := podStarted(terminated(tt.msg))
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("podStarted: %v, want one line containing %q", err, tt.want)
			}
		})
	}
}
