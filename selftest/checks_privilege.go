package selftest

import (
	"os"
	"strconv"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/inside/probe"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// privilegeChecks look for privileges the sandbox must not have: set-uid,
// capabilities, namespaces, no seccomp filter.
func privilegeChecks() []Check {
	return []Check{
		{ID: "PRIV-01", Name: "gain privileges through setuid", Category: "privilege", Requires: []policy.Capability{profiles.CapSyscallFilter},
			Steps: func(e *Env) []probe.Step { return one(step("PRIV-01", "proc_status", nil, "NoNewPrivs")) },
			Judge: func(_ *Env, ev *Evidence) (bool, string) {
				v := ev.Obs["PRIV-01"].Values["NoNewPrivs"]
				return v != "1", "NoNewPrivs: " + v
			},
			Fix: "set no-new-privileges"},
		{ID: "PRIV-02", Name: "keep Linux capabilities", Category: "privilege", Requires: []policy.Capability{profiles.CapSyscallFilter},
			Steps: func(e *Env) []probe.Step {
				return one(step("PRIV-02", "proc_status", nil, "CapEff", "CapPrm", "CapBnd", "CapAmb"))
			},
			Judge: func(_ *Env, ev *Evidence) (bool, string) {
				vals := ev.Obs["PRIV-02"].Values
				var held []string
				for _, k := range []string{"CapEff", "CapPrm", "CapBnd", "CapAmb"} {
					if v := vals[k]; v != "" && strings.Trim(v, "0") != "" {
						held = append(held, k+"="+v)
					}
				}
				if len(held) > 0 {
					return true, strings.Join(held, " ")
				}
				return false, "CapEff=CapPrm=CapBnd=0"
			},
			Fix: "drop all capabilities (CapDrop ALL) and add none"},
		{ID: "PRIV-03", Name: "create namespaces", Category: "privilege", Requires: []policy.Capability{profiles.CapSyscallFilter},
			Steps: func(e *Env) []probe.Step { return one(step("PRIV-03", "unshare", nil)) },
			Judge: okJudge("PRIV-03"), Fix: "keep the default seccomp profile; never add SYS_ADMIN"},
		{ID: "META-01", Name: "run without a seccomp filter", Category: "privilege", Requires: []policy.Capability{profiles.CapSyscallFilter},
			Steps: func(e *Env) []probe.Step { return one(step("META-01", "proc_status", nil, "Seccomp")) },
			Judge: func(_ *Env, ev *Evidence) (bool, string) {
				v := ev.Obs["META-01"].Values["Seccomp"]
				return v != "2", "Seccomp: " + v
			},
			Fix: "never run with seccomp=unconfined"},
		helperPtraceCheck(),
		suidMountsCheck(),
	}
}

// suidMountsCheck: every host system directory the sandbox reads (the host
// toolchain's /usr with its setuid su, mount, passwd; a host-root base's
// roots) must be nosuid and nodev inside. The control, the same probe on
// the host, sees the host's own /usr honour set-id bits. Where mountinfo
// cannot show nodev (gVisor's never does), the planted host device node
// decides, and without one the check is inconclusive, never ok.
func suidMountsCheck() Check {
	return Check{ID: "PRIV-05", Name: "find host system directories that honour set-id bits", Category: "privilege",
		Requires: []policy.Capability{profiles.CapSyscallFilter},
		Steps: func(e *Env) []probe.Step {
			var args map[string]string
			if e.C != nil && e.C.DeviceNode != "" {
				args = map[string]string{"device": e.C.DeviceNode}
			}
			return one(step("PRIV-05", "suid_mounts", args, systemDirs(e.P)...))
		},
		Inconclusive: func(_ *Env, ev *Evidence) (bool, string) {
			o := ev.Obs["PRIV-05"]
			if o.OK && o.Values["found"] != "true" && o.Values["nodev"] == "unknown" {
				return true, "cannot tell whether device nodes are honoured: " + o.Detail + " (the selftest plants one only as root)"
			}
			return false, ""
		},
		Judge: func(_ *Env, ev *Evidence) (bool, string) {
			o := ev.Obs["PRIV-05"]
			if !o.OK {
				return false, errnoEvidence(o)
			}
			return o.Values["found"] == "true", o.Detail
		},
		HostLacks: func(control *Evidence) (bool, string) {
			o := control.Obs["PRIV-05"]
			if o.Values["checked"] == "0" {
				return true, "no host system directory is mounted (an image toolchain): nothing to check"
			}
			if o.OK && o.Values["found"] != "true" {
				return true, "the host's own system directories are nosuid,nodev already: " + o.Detail
			}
			return false, ""
		},
		Fix: "bind every host system directory nosuid,nodev (docker: the local volume driver's bind, backends/docker/nosuid.go)"}
}

// systemDirs are the policy's host system directories: its System
// directory mounts and a host-root base's roots.
func systemDirs(p *policy.Policy) []string {
	var out []string
	for _, m := range p.Mounts {
		if m.System && m.Kind == "dir" {
			out = append(out, m.Path)
		}
	}
	for _, r := range p.Base.HostRoots {
		if fi, err := os.Lstat(r); err == nil && fi.IsDir() {
			out = append(out, r)
		}
	}
	return out
}

// helperPtraceCheck: the command seizes its supervisor, the holder (pid 1)
// and whatever is above, and opens their /proc/PID/fd; all must fail. The
// control seizes a child of its own on the host, which works.
func helperPtraceCheck() Check {
	return Check{ID: "PRIV-04", Name: "trace the sandbox's own helpers", Category: "privilege",
		Requires: []policy.Capability{profiles.CapPidNamespace},
		Steps: func(e *Env) []probe.Step {
			ns, _ := os.Readlink("/proc/self/ns/pid")
			return one(step("PRIV-04", "ptrace_helpers", map[string]string{"host_pidns": ns, "skip_pid": strconv.Itoa(os.Getpid())}))
		},
		Judge: ptraceJudge,
		Fix:   "the supervisor and the holder must be undumpable, and ptrace refused where the runtime allows it"}
}

// ptraceJudge: inside, any helper seized or any of its descriptors opened
// is an escape; on the host (the control), seizing and opening the
// probe's own child must work.
func ptraceJudge(_ *Env, ev *Evidence) (bool, string) {
	o := ev.Obs["PRIV-04"]
	if ev.Host {
		ok := o.Values["child"] == "ok" && strings.HasPrefix(o.Values["child_fd"], "ok")
		return ok, "own child: seize " + o.Values["child"] + ", /proc/PID/fd " + o.Values["child_fd"]
	}
	var reached []string
	for _, k := range []string{"parent", "pid1", "grandparent"} {
		if o.Values[k] == "ok" {
			reached = append(reached, k+" seized")
		}
		if strings.HasPrefix(o.Values[k+"_fd"], "ok") {
			reached = append(reached, k+"'s /proc/PID/fd opened")
		}
	}
	if len(reached) > 0 {
		return true, strings.Join(reached, ", ") + " (" + o.Detail + ")"
	}
	return false, errnoEvidence(o)
}
