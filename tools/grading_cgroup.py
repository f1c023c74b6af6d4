"""Limits for a whole grading sandbox, not per process: a cgroup per grading slot (memory, processes, CPU share).

The rlimits the runner sets (tools/grading_runner.py) hold per process: 4 GiB of address space each, so a notebook
with many processes can use many times that, and a notebook that spins on every core slows the one graded beside it.
A control group holds them for every process of the sandbox together. ``detect`` finds what the machine offers:

- cgroup v2: ``/sys/fs/cgroup/cgroup.controllers`` lists ``memory`` and ``pids``, and the group we are in (from
  /proc/self/cgroup) can have child groups with those controllers (its ``cgroup.subtree_control`` lists them, or
  accepts them: the kernel refuses while that group itself holds processes, unless it is the root);
- cgroup v1: the separate hierarchies ``/sys/fs/cgroup/memory`` and ``/pids`` (and ``/cpu`` when there is one),
  each with a child group that we can make under our own path in it;
- else none (not root, or a read-only /sys/fs/cgroup): grading keeps only the per-process rlimits.

Each slot (a notebook graded at once: ``make grade``'s ``--jobs``) gets a group ``grading-<grader's pid>-slot<N>``,
made before each notebook with the limits of ``GroupLimits`` and removed after it (``SlotGroup.finish``: every
process left in it killed, whether the memory limit was hit read back). The sandbox joins it without a race and
without ``preexec_fn`` (the grader runs its slots in threads): ``command_prefix`` is a shell that writes its own
pid into the group and then execs bwrap, so every process of the sandbox is born inside.

Kernel documentation: Documentation/admin-guide/cgroup-v2.rst (memory.max, memory.swap.max, memory.events, pids.max,
cpu.max, cgroup.kill) and Documentation/admin-guide/cgroup-v1/ (memory.rst: memory.limit_in_bytes,
memory.memsw.limit_in_bytes, memory.oom_control; pids.rst; scheduler/sched-bwc.rst: cpu.cfs_quota_us). Standard
library only.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_SELF_CGROUP = Path("/proc/self/cgroup")
REQUIRED = ("memory", "pids")  # without both, no group: the fallback is the per-process rlimits
OPTIONAL = ("cpu",)  # the CPU quota, where the machine has the controller
CPU_PERIOD_US = 100_000  # the kernel's default CFS period (sched-bwc.rst)
GROUP_PREFIX = "grading-"
# The shell that joins the group(s) and execs the sandbox: sh -c JOIN_SCRIPT NAME FILE... -- COMMAND...
JOIN_SCRIPT = (
    'for f; do [ "$f" = -- ] && break; '
    'echo $$ > "$f" || { echo "grading: cannot join the cgroup ($f)" >&2; exit 125; }; shift; done; '
    'shift; exec "$@"'
)
KILL_ROUNDS = 50  # SIGKILL every member, until the group is empty (a fork loop refills it between rounds)
KILL_PAUSE_S = 0.02


@dataclass(frozen=True)
class GroupLimits:
    """For the whole sandbox of one slot: memory (swap included where the controller accounts it), processes and
    threads, and CPU cores (a CFS quota: the sandbox's threads together get at most this share of the CPUs).

    >>> GroupLimits().memory_bytes == 4 * 2**30
    True
    >>> GroupLimits(processes=0)
    Traceback (most recent call last):
    ...
    ValueError: processes must be at least 1, got 0
    """

    memory_bytes: int = 4 * 2**30
    processes: int = 256
    cpu_cores: float = 1.0

    def __post_init__(self):
        if not 2**20 <= self.memory_bytes:
            raise ValueError(f"memory_bytes must be at least 1 MiB (1048576), got {self.memory_bytes}")
        if not 1 <= self.processes:
            raise ValueError(f"processes must be at least 1, got {self.processes}")
        if not 0.01 <= self.cpu_cores <= 1024:
            raise ValueError(f"cpu_cores must be between 0.01 and 1024, got {self.cpu_cores}")

    def describe(self) -> str:
        """The limits in words, for the grader's messages.

        >>> GroupLimits().describe()
        '4 GiB of memory, 256 processes, 1 CPU core'
        """
        cores = f"{self.cpu_cores:g} CPU core" + ("" if self.cpu_cores == 1 else "s")
        return f"{gib(self.memory_bytes)} of memory, {self.processes} processes, {cores}"


def gib(size_bytes: int) -> str:
    """A size in GiB for a message ('4 GiB', '0.5 GiB').

    >>> gib(4 * 2**30)
    '4 GiB'
    """
    return f"{size_bytes / 2**30:g} GiB"


SLOT_LIMITS = GroupLimits()  # make grade's, for every slot


@dataclass(frozen=True)
class Hierarchy:
    """Where slot groups are made: cgroup ``version`` 2 or 1, and the group to make them in per controller (v2: one
    group for all, under the key ""), whether they get a CPU quota (the cpu controller); version 0 (none) with
    ``reason`` saying why."""

    version: int
    parents: dict[str, Path] = field(default_factory=dict)
    cpu_quota: bool = False
    reason: str = ""


def own_groups(text: str) -> dict[str, str]:
    """{controller: our group's path} of /proc/self/cgroup's text; v2's unified entry under the key "".

    >>> own_groups("4:memory:/a/b\\n1:cpu,cpuacct:/\\n0::/user.slice\\n")
    {'memory': '/a/b', 'cpu': '/', 'cpuacct': '/', '': '/user.slice'}
    """
    groups = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for controller in parts[1].split(",") if parts[1] else [""]:
                groups[controller] = parts[2]
    return groups


def detect(root: Path = CGROUP_ROOT, proc_self_cgroup: Path = PROC_SELF_CGROUP) -> Hierarchy:
    """What this machine offers for slot groups: cgroup v2, else v1, else none (with the reasons)."""
    try:
        own = own_groups(proc_self_cgroup.read_text(encoding="utf-8"))
    except OSError as error:
        return Hierarchy(0, reason=f"cannot read {proc_self_cgroup}: {error.strerror or error}")
    v2 = v2_hierarchy(root, own)
    if v2.version:
        return v2
    v1 = v1_hierarchy(root, own)
    if v1.version:
        return v1
    return Hierarchy(0, reason=f"{v2.reason}; {v1.reason}")


def v2_hierarchy(root: Path, own: dict[str, str]) -> Hierarchy:
    """cgroup v2 where our group can have children with the memory and pids controllers (and cpu if offered)."""
    try:
        available = (root / "cgroup.controllers").read_text(encoding="utf-8").split()
    except OSError:
        return Hierarchy(0, reason=f"no cgroup v2 at {root}")
    if "" not in own or not set(REQUIRED) <= set(available):
        return Hierarchy(0, reason=f"cgroup v2 at {root} offers no {' and '.join(REQUIRED)} controllers")
    parent = root / own[""].lstrip("/")
    subtree_control = parent / "cgroup.subtree_control"
    try:
        enabled = subtree_control.read_text(encoding="utf-8").split()
        for controller in (*REQUIRED, *OPTIONAL):
            if controller not in enabled:
                try:  # a change to our own group that stays: its children may then have the controller
                    subtree_control.write_text(f"+{controller}\n", encoding="utf-8")
                except OSError:
                    if controller in REQUIRED:
                        raise
        probe(parent)
        cpu_quota = "cpu" in subtree_control.read_text(encoding="utf-8").split()
    except OSError as error:
        return Hierarchy(0, reason=f"cgroup v2: cannot make child groups with controllers in {parent}: {error}")
    return Hierarchy(2, {"": parent}, cpu_quota)


def v1_hierarchy(root: Path, own: dict[str, str]) -> Hierarchy:
    """cgroup v1 where each controller's hierarchy takes a child of our own group in it."""
    parents = {}
    for controller in (*REQUIRED, *OPTIONAL):
        parent = root / controller / own.get(controller, "/").lstrip("/")
        if controller not in own or not (parent / "cgroup.procs").is_file():
            if controller in REQUIRED:
                return Hierarchy(0, reason=f"no cgroup v1 {controller} hierarchy at {root / controller}")
            continue
        try:
            probe(parent)
        except OSError as error:
            return Hierarchy(0, reason=f"cgroup v1: cannot make a group in {parent}: {error}")
        parents[controller] = parent
    return Hierarchy(1, parents, "cpu" in parents)


def probe(parent: Path) -> None:
    """Make and remove a child group of ``parent``; raise OSError if we cannot."""
    path = parent / f"{GROUP_PREFIX}{os.getpid()}-probe"
    path.mkdir()
    path.rmdir()


@dataclass(frozen=True)
class SlotGroup:
    """The cgroup (one per controller in v1) that the sandbox of one slot runs in, made afresh for each notebook."""

    hierarchy: Hierarchy
    name: str
    limits: GroupLimits = SLOT_LIMITS

    @property
    def paths(self) -> dict[str, Path]:
        """{controller (v2: ""): the group's folder}."""
        return {controller: parent / self.name for controller, parent in self.hierarchy.parents.items()}

    def create(self) -> None:
        """Make the group with its limits (after removing a leftover of the same name); raise OSError if we cannot."""
        if any(path.exists() for path in self.paths.values()):
            self.finish()
        for path in self.paths.values():
            path.mkdir()
        for file, value in self.limit_files():
            file.write_text(f"{value}\n", encoding="utf-8")

    def limit_files(self) -> list[tuple[Path, str]]:
        """(file, value) for each limit, in the order they must be written: the memory and pids limits always;
        swap (memory.swap.max, memory.memsw.*) and CPU where the kernel accounts them (the file exists)."""
        limits, paths = self.limits, self.paths
        memory, processes = f"{limits.memory_bytes}", f"{limits.processes}"
        quota = f"{round(limits.cpu_cores * CPU_PERIOD_US)}"
        if self.hierarchy.version == 2:
            group = paths[""]
            required = [(group / "memory.max", memory), (group / "pids.max", processes)]
            optional = [(group / "memory.swap.max", "0"), (group / "cpu.max", f"{quota} {CPU_PERIOD_US}")]
        else:
            required = [(paths["memory"] / "memory.limit_in_bytes", memory), (paths["pids"] / "pids.max", processes)]
            optional = [(paths["memory"] / "memory.memsw.limit_in_bytes", memory)]  # not below limit_in_bytes
            if "cpu" in paths:
                cpu = paths["cpu"]
                optional += [(cpu / "cpu.cfs_period_us", f"{CPU_PERIOD_US}"), (cpu / "cpu.cfs_quota_us", quota)]
        return required + [(file, value) for file, value in optional if file.exists()]

    def command_prefix(self) -> list[str]:
        """The command prefix that moves itself into the group and then execs the rest of the command line."""
        files = [str(path / "cgroup.procs") for path in self.paths.values()]
        return ["/bin/sh", "-c", JOIN_SCRIPT, "grading-cgroup-join", *files, "--"]

    def members(self) -> set[int]:
        """The pids of every process in the group (any controller's)."""
        pids = set()
        for path in self.paths.values():
            try:
                pids.update(int(pid) for pid in (path / "cgroup.procs").read_text(encoding="utf-8").split())
            except OSError:
                continue
        return pids

    def memory_limit_hit(self) -> bool:
        """Whether the kernel's OOM killer killed a process of the group at its memory limit (v2 memory.events
        oom_kill; v1 memory.oom_control oom_kill, or memory.failcnt where the kernel has no such line)."""
        if self.hierarchy.version == 2:
            return counter(self.paths[""] / "memory.events", "oom_kill") > 0
        memory = self.paths["memory"]
        try:
            return counter(memory / "memory.oom_control", "oom_kill") > 0
        except KeyError:
            return int((memory / "memory.failcnt").read_text(encoding="utf-8")) > 0

    def finish(self) -> bool:
        """Kill every process left in the group, read whether its memory limit was hit, remove it: whether the
        limit was hit. Never raises: what it cannot clean up it reports on stderr."""
        if not any(path.exists() for path in self.paths.values()):
            return False
        left = self.kill_members()
        try:
            hit = self.memory_limit_hit()
        except (OSError, KeyError, ValueError):
            hit = False
        kept = [path for path in self.paths.values() if not remove_group(path)]
        if left or kept:
            where = ", ".join(str(path) for path in kept) or "-"
            message = f"warning: cgroup {self.name}: {len(left)} processes left, groups not removed: {where}"
            print(message, file=sys.stderr)
        return hit

    def kill_members(self) -> set[int]:
        """SIGKILL the group's processes, a few rounds, until it is empty: the pids still in it (none, normally)."""
        if self.hierarchy.version == 2:
            try:  # Linux >= 5.14: the kernel kills them all at once; the rounds below then find none
                (self.paths[""] / "cgroup.kill").write_text("1\n", encoding="utf-8")
            except OSError:
                pass
        members = self.members()
        for _ in range(KILL_ROUNDS):
            if not members:
                break
            for pid in members:
                kill_member(pid, self.name)
            time.sleep(KILL_PAUSE_S)
            members = self.members()
        return members


def counter(path: Path, key: str) -> int:
    """The value of the line ``key N`` of a cgroup file like memory.events; KeyError if there is none."""
    for line in path.read_text(encoding="utf-8").splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            return int(value)
    raise KeyError(key)


def kill_member(pid: int, name: str) -> None:
    """SIGKILL process ``pid`` if it is in a group named ``name``: through a pidfd, checked after it is opened,
    so that a pid the kernel has reused for a process outside the group is never signalled."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:  # gone already
        return
    try:
        groups = Path(f"/proc/{pid}/cgroup").read_text(encoding="utf-8").splitlines()
        if any(line.split(":", 2)[-1].endswith(f"/{name}") for line in groups):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except OSError:
        pass
    finally:
        os.close(pidfd)


def remove_group(path: Path) -> bool:
    """rmdir a cgroup, retrying while the kernel still counts dying processes in it: whether it is gone."""
    for _ in range(KILL_ROUNDS):
        try:
            path.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            time.sleep(KILL_PAUSE_S)
    return False


class SlotGroups:
    """The slot groups of one grading batch, a context manager: on entering, ``detect`` and register them (for
    ``slot_group``); on leaving, also after an exception, remove any that is left. Groups of graders that died
    (their pid is not running) are removed on entering too."""

    active: SlotGroups | None = None

    def __init__(self, slots: int, limits: GroupLimits = SLOT_LIMITS, hierarchy: Hierarchy | None = None):
        self.hierarchy = hierarchy or detect()
        self.limits = limits
        self.groups = {}
        if self.hierarchy.version:
            names = {slot: f"{GROUP_PREFIX}{os.getpid()}-slot{slot}" for slot in range(slots)}
            self.groups = {slot: SlotGroup(self.hierarchy, name, limits) for slot, name in names.items()}

    def description(self) -> str:
        """One line for the grader's output and report: the limits per notebook and how they are enforced."""
        if self.hierarchy.version:
            version, limits = self.hierarchy.version, self.limits.describe()
            if not self.hierarchy.cpu_quota:
                limits = limits.rsplit(", ", 1)[0] + " (no CPU quota: no cpu controller for the group here)"
            return f"limits per notebook (cgroup v{version}, all its processes together): {limits}"
        return (
            f"no cgroup to limit each notebook as a whole ({self.hierarchy.reason}): limits per process only, so a "
            f"notebook's processes together can use more than {gib(self.limits.memory_bytes)} of memory, and one "
            "that keeps every core busy slows the notebooks graded beside it"
        )

    def __enter__(self) -> SlotGroups:
        remove_stale_groups(self.hierarchy)
        SlotGroups.active = self
        return self

    def __exit__(self, *exc_info) -> None:
        SlotGroups.active = None
        for group in self.groups.values():
            group.finish()


def slot_group(slot: int) -> SlotGroup | None:
    """The group of ``slot`` in the batch being graded (``SlotGroups``), or None: no batch, or no cgroups here."""
    active = SlotGroups.active
    return active.groups.get(slot) if active is not None else None


def memory_limit_reason(slot: int) -> str:
    """What the grader says of a notebook whose sandbox, in ``slot``'s group, hit its memory limit.

    >>> memory_limit_reason(0)
    "the notebook used more than 4 GiB of memory (the sandbox's limit)"
    """
    group = slot_group(slot)
    limits = group.limits if group is not None else SLOT_LIMITS
    return f"the notebook used more than {gib(limits.memory_bytes)} of memory (the sandbox's limit)"


def remove_stale_groups(hierarchy: Hierarchy) -> None:
    """Remove the slot groups of graders that are no longer running (killed before they could remove them)."""
    stale = set()
    for parent in hierarchy.parents.values():
        for path in parent.glob(f"{GROUP_PREFIX}*-slot*"):
            pid = path.name.removeprefix(GROUP_PREFIX).split("-", 1)[0]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                stale.add(path.name)
    for name in sorted(stale):
        SlotGroup(hierarchy, name).finish()
