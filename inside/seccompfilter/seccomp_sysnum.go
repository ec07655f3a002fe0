package seccompfilter

// auditArches are the AUDIT_ARCH_* values (include/uapi/linux/audit.h) of
// the architectures the filter supports, by GOARCH.
var auditArches = map[string]uint32{
	"amd64": 0xC000003E, // AUDIT_ARCH_X86_64
	"arm64": 0xC00000B7, // AUDIT_ARCH_AARCH64
}

// syscallNumbers are the numbers of the syscalls the rules name, per
// architecture: arch/x86/entry/syscalls/syscall_64.tbl and
// include/uapi/asm-generic/unistd.h. They are written out, not taken from
// golang.org/x/sys/unix, so the filter for either architecture can be built
// and tested on any host; a test checks the host's against x/sys. A name
// missing from an architecture (iopl, ioperm and uselib on arm64) does not
// exist there, and its rules are left out of that filter.
var syscallNumbers = map[string]map[string]uint32{
	"amd64": {
		"ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312, "pidfd_getfd": 438,
		"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
		"keyctl": 250, "add_key": 248, "request_key": 249,
		"bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
		"unshare": 272, "setns": 308, "clone": 56, "clone3": 435,
		"mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161,
		"fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "move_mount": 429,
		"open_tree": 428, "open_tree_attr": 467, "mount_setattr": 442,
		"kexec_load": 246, "kexec_file_load": 320, "init_module": 175, "finit_module": 313,
		"delete_module": 176, "swapon": 167, "swapoff": 168, "reboot": 169, "acct": 163,
		"quotactl": 179, "quotactl_fd": 443, "syslog": 103, "settimeofday": 164, "clock_settime": 227,
		"iopl": 172, "ioperm": 173, "lookup_dcookie": 212, "uselib": 134,
		"name_to_handle_at": 303, "open_by_handle_at": 304,
		"pkey_mprotect": 329, "pkey_alloc": 330, "pkey_free": 331,
		"mbind": 237, "move_pages": 279, "process_madvise": 440,
		"personality": 135, "socket": 41, "socketpair": 53, "ioctl": 16,
		"rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297, "pidfd_send_signal": 424,
		"fcntl": 72,
	},
	"arm64": {
		"ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272, "pidfd_getfd": 438,
		"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
		"keyctl": 219, "add_key": 217, "request_key": 218,
		"bpf": 280, "perf_event_open": 241, "userfaultfd": 282,
		"unshare": 97, "setns": 268, "clone": 220, "clone3": 435,
		"mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51,
		"fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "move_mount": 429,
		"open_tree": 428, "open_tree_attr": 467, "mount_setattr": 442,
		"kexec_load": 104, "kexec_file_load": 294, "init_module": 105, "finit_module": 273,
		"delete_module": 106, "swapon": 224, "swapoff": 225, "reboot": 142, "acct": 89,
		"quotactl": 60, "quotactl_fd": 443, "syslog": 116, "settimeofday": 170, "clock_settime": 112,
		"lookup_dcookie":    18,
		"name_to_handle_at": 264, "open_by_handle_at": 265,
		"pkey_mprotect": 288, "pkey_alloc": 289, "pkey_free": 290,
		"mbind": 235, "move_pages": 239, "process_madvise": 440,
		"personality": 92, "socket": 198, "socketpair": 199, "ioctl": 29,
		"rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240, "pidfd_send_signal": 424,
		"fcntl": 25,
	},
}

// SyscallNumber is the number of a syscall the rules name on arch (a
// GOARCH), for tests that make the call.
func SyscallNumber(arch, name string) (uint32, bool) {
	nr, ok := syscallNumbers[arch][name]
	return nr, ok
}
