package docker

import (
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestUnreachableSaysWhatFixesIt: a daemon that refuses the caller its
// socket is running; starting it again fixes nothing. A user outside the
// socket's group is told to join it (or use --backend local), a member
// whose login predates the membership to log in again; "start it" is for
// a daemon that is not there.
func TestUnreachableSaysWhatFixesIt(t *testing.T) {
	const host = "unix:///var/run/docker.sock"
	pingErr := errors.New("permission denied while trying to connect to the docker API at " + host)
	eacces := &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.EACCES)}
	enoent := &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.ENOENT)}
	tests := []struct {
		name string
		f    socketFacts
		want []string
		not  []string
	}{
		{"not in the group", socketFacts{dialErr: eacces, group: "docker", gid: 998, uid: 1000, groups: []int{1000}},
			[]string{"the daemon is running but refuses you its socket", "owned by group docker", "uid 1000 is not in it",
				"sudo usermod -aG docker $USER", "log in again", "--backend local"},
			[]string{"start it"}},
		{"joined, not logged in again", socketFacts{dialErr: eacces, group: "docker", gid: 998, uid: 1000, groups: []int{1000}, memberByName: true},
			[]string{"refuses you its socket", "you are in group docker but this login is not yet", "newgrp docker", "--backend local"},
			[]string{"start it", "usermod"}},
		{"in the group and still refused", socketFacts{dialErr: eacces, group: "docker", gid: 998, uid: 1000, groups: []int{1000, 998}},
			[]string{"refuses you its socket", "--backend local"}, []string{"start it"}},
		{"no socket", socketFacts{dialErr: enoent, uid: 1000},
			[]string{"start it (systemctl start docker, or dockerd &) or set DOCKER_HOST"}, []string{"usermod"}},
		{"not a unix socket", socketFacts{uid: 1000},
			[]string{"start it"}, []string{"usermod"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := unreachable(host, pingErr, tt.f).Error()
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(got, w) {
					t.Errorf("%q has %q", got, w)
				}
			}
			if !strings.HasPrefix(got, "cannot reach the Docker daemon at "+host+": ") || strings.Contains(got, "\n") {
				t.Errorf("want one line naming the daemon: %q", got)
			}
		})
	}
}
