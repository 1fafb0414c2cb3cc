/**
 * What the seccomp filter of sandboxed builds and apps refuses, modelled on Docker's default
 * profile for a process without capabilities: everything is allowed except the calls below, which
 * fail with EPERM (clone3 with ENOSYS, so libc falls back to clone, whose flags can be checked).
 * Most of them need a capability the sandbox never has; the filter stops them before the kernel's
 * own checks run, which is what closes bugs in that code (keyctl, bpf, userfaultfd, user
 * namespaces) to tenants.
 */

/** Refused whatever their arguments. */
export const DENIED_SYSCALLS: readonly string[] = [
  // Kernel keyrings: not namespaced, a frequent source of exploits.
  "keyctl",
  "add_key",
  "request_key",
  // Kernel programs, tracing and page-fault handling from user space: exploit primitives.
  "bpf",
  "perf_event_open",
  "userfaultfd",
  "io_uring_setup",
  "io_uring_enter",
  "io_uring_register",
  // File systems and mounts.
  "mount",
  "umount",
  "umount2",
  "pivot_root",
  "chroot",
  "fsopen",
  "fsconfig",
  "fsmount",
  "fspick",
  "move_mount",
  "open_tree",
  "mount_setattr",
  "open_by_handle_at",
  "name_to_handle_at",
  "quotactl",
  "quotactl_fd",
  "swapon",
  "swapoff",
  "acct",
  "nfsservctl",
  "lookup_dcookie",
  // The machine itself: reboot, kernels, modules, clocks, names, raw I/O, the kernel log.
  "reboot",
  "kexec_load",
  "kexec_file_load",
  "init_module",
  "finit_module",
  "delete_module",
  "create_module",
  "get_kernel_syms",
  "query_module",
  "uselib",
  "_sysctl",
  "settimeofday",
  "stime",
  "clock_settime",
  "clock_adjtime",
  "adjtimex",
  "sethostname",
  "setdomainname",
  "iopl",
  "ioperm",
  "syslog",
  "vhangup",
  // Other processes' memory, and entering their namespaces.
  "ptrace",
  "process_vm_readv",
  "process_vm_writev",
  "kcmp",
  "setns",
];

/** Namespace flags of clone(2) (bit values from linux/sched.h). */
export const CLONE_NAMESPACE_FLAGS: Readonly<Record<string, number>> = {
  CLONE_NEWNS: 0x00020000,
  CLONE_NEWCGROUP: 0x02000000,
  CLONE_NEWUTS: 0x04000000,
  CLONE_NEWIPC: 0x08000000,
  CLONE_NEWUSER: 0x10000000,
  CLONE_NEWPID: 0x20000000,
  CLONE_NEWNET: 0x40000000,
};

/** unshare(2) also takes the time namespace (in clone(2) that bit is part of the exit signal). */
export const UNSHARE_NAMESPACE_FLAGS: Readonly<Record<string, number>> = {
  ...CLONE_NAMESPACE_FLAGS,
  CLONE_NEWTIME: 0x00000080,
};

/** What the generator is given: refused calls, and calls refused when their first argument has a flag. */
export interface FilterSpec {
  deny: readonly string[];
  denyWithFlag: { syscall: string; flag: number }[];
  /** Refused with ENOSYS: flags live behind a pointer, so libc is made to fall back to clone(2). */
  unsupported: readonly string[];
}

export function defaultFilterSpec(): FilterSpec {
  const denyWithFlag = [
    ...Object.values(CLONE_NAMESPACE_FLAGS).map((flag) => ({ syscall: "clone", flag })),
    ...Object.values(UNSHARE_NAMESPACE_FLAGS).map((flag) => ({ syscall: "unshare", flag })),
  ];
  return { deny: DENIED_SYSCALLS, denyWithFlag, unsupported: ["clone3"] };
}
