package protocol

import "os"

// Donation hands descriptors to a child process by name (as gVisor's
// runsc donates its boot process's files): each file added gets the next
// descriptor after stderr, and the caller puts that number in the spec's
// field that names it (plan_fd, control_fd, trace_fd…), so no descriptor
// number is agreed on anywhere else. Files is the child's ExtraFiles.
type Donation struct{ files []*os.File }

// Add donates f and returns the descriptor the child will find it at.
func (d *Donation) Add(f *os.File) int {
	d.files = append(d.files, f)
	return 2 + len(d.files)
}

// Files are the donated files in descriptor order (exec.Cmd.ExtraFiles).
func (d *Donation) Files() []*os.File { return d.files }
