package selftest

import (
	"os"
	"strconv"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/probe"
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
	}
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
