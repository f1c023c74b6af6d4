"""The sandbox one notebook is graded in: bubblewrap (Debian's `bubblewrap`), resource limits, a hard timeout.

``start_sandboxed`` starts tools/grading_runner.py (the worker) in a sandbox made with ``bwrap``:

- a read-only view of the system (/usr, /lib..., and of /etc only the few files ETC_FILES lists), of the Python
  installation and virtual environment, of
  course_lib and of the worker's three files (WORKER_FILES); nothing else of the host: not the submissions, not
  the grades, not the build folder with the autograders and their hidden tests, not $HOME;
- three writable folders, each a private tmpfs of ``PRIVATE_TMPFS_BYTES``: ``work`` (at the path of the fresh host
  folder the caller made, whose files, a private copy of the submission, are bound into it read-only; nothing
  written there reaches the host), /tmp and /dev/shm;
- no network (a new network namespace with only loopback), its own PID namespace (when its first process ends,
  at the timeout or because the grader died, the kernel kills every process of the sandbox, double-forked ones
  included), a new session (no terminal), every capability dropped, and an unprivileged user (as root: a host
  user of its own per job, from SLOT_UID_BASE on, claimed by ``SlotUsers`` so that concurrent batches never share
  one; otherwise nobody in a user namespace);
- a clean environment: only the variables ``environment`` gives (nothing of the grader's command line or
  environment is visible);
- limits (``Limits``): address space, processes, CPU time and file size, set by the runner with setrlimit; and,
  where the machine has cgroups, limits for the whole sandbox (memory, processes, a CPU core) in a cgroup of its
  slot (tools/grading_cgroup.py), which ``start_sandboxed`` makes and ``stop_sandboxed`` removes.

With ``unsafe=True`` (make grade UNSAFE=1) the runner runs without bubblewrap, as the grader's user: the limits
and the timeout still apply, but the notebook can read and write whatever that user can, and a process it
detaches can outlive the batch.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from . import grading_cgroup

ROOT = Path(__file__).resolve().parents[1]
RUNNER = Path(__file__).resolve().parent / "grading_runner.py"
# The worker and the two files it imports: all of the grader the sandbox sees (never tools/grade.py's tests).
WORKER_FILES = tuple(RUNNER.parent / name for name in ("grading_runner.py", "grading_wire.py", "grading_helpers.py"))
SANDBOX_UID = 65534  # nobody: the user inside the sandbox's user namespace (when the grader is not root)
# When the grader is root, each sandbox graded at once runs as its own unprivileged host user, SLOT_UID_BASE + slot
# (no such user exists): the kernel counts processes per user, so one notebook's fork bomb cannot use up another's
# process limit, and no sandbox can signal another's processes.
SLOT_UID_BASE = 61000
INSTALL_HINT = (
    "bubblewrap (bwrap) is needed to grade in a sandbox: install it with `sudo apt-get install bubblewrap` "
    "(Debian/Ubuntu) or `sudo dnf install bubblewrap` (Fedora), or pass UNSAFE=1 to grade without a sandbox "
    "(the notebooks can then read and change your files: see the README)"
)
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64")
# Of /etc, only what the dynamic linker, Python, numpy and matplotlib read (issue 39: all of /etc was readable, e.g.
# /etc/pip.conf, which may hold a package index's credentials): no passwd, no host name, no configuration of tools.
ETC_FILES = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/mime.types",
    "/etc/fonts",
    "/etc/alternatives",
)
# The sandbox's own /tmp and /dev/shm: private tmpfs of this size each (bwrap --size), so that a notebook that fills
# them fills its own, not the host's that the next notebooks need.
PRIVATE_TMPFS_BYTES = 256 * 2**20


@dataclass(frozen=True)
class Limits:
    """Per notebook: address space of each process, processes (and threads) of the sandbox, CPU seconds of each
    process, and the largest file it may write."""

    address_space_bytes: int = 4 * 2**30
    processes: int = 256
    cpu_s: int = 300
    file_bytes: int = 64 * 2**20


def bwrap_path() -> str | None:
    """The bwrap executable, or None if bubblewrap is not installed."""
    return shutil.which("bwrap")


def bwrap_works() -> str | None:
    """None if bubblewrap can make the sandbox here, else why not (one line)."""
    path = bwrap_path()
    if path is None:
        return INSTALL_HINT
    done = subprocess.run(
        [path, *namespace_options(), "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.returncode != 0:
        return f"bubblewrap is installed but cannot make a sandbox here: {done.stderr.strip()[-300:]}"
    return None


def privileged() -> bool:
    """True when the grader runs as root: bwrap then runs privileged and the runner drops to nobody itself."""
    return os.geteuid() == 0


def namespace_options() -> list[str]:
    """bwrap's isolation options. As root, without a user namespace: the sandbox's processes then run as the
    host's nobody (setpriv, ``drop_privileges``), whose process limit the kernel enforces (it exempts root, also
    root mapped into a user namespace). Otherwise in a user namespace, as nobody inside it."""
    common = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
    common += ["--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    if privileged():
        return [*common, "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    return ["--unshare-user", *common, "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]


SLOT_UIDS = 256  # SLOT_UID_BASE ... SLOT_UID_BASE + 255: the sandbox users of every batch running on the machine
_claimed: dict[int, int] = {}  # slot -> uid, claimed by this process's batch (SlotUsers)


def sandbox_uid(slot: int = 0) -> int:
    """The host user the sandbox of job ``slot`` runs as (its processes are counted against this user): the uid
    ``SlotUsers`` claimed for it, so that two batches at once never share one."""
    return _claimed.get(slot, SLOT_UID_BASE + slot) if privileged() else os.getuid()


def slot_lock_folder() -> Path:
    """Where batches lock the sandbox users they use: a folder only root can write (checked, not trusted)."""
    base = Path("/run/lock") if Path("/run/lock").is_dir() else Path(tempfile.gettempdir())
    folder = base / "course-grading-users"
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o022:
        raise RuntimeError(f"{folder} is not a folder that only root can write: remove it")
    return folder


class SlotUsers:
    """As root, a context manager that claims a host uid of its own for each of ``slots`` slots: an exclusive lock on
    a file per uid in ``slot_lock_folder()``, held for the batch and let go on leaving or when the process ends, so
    that concurrent ``make grade`` runs never share a sandbox user (the kernel counts processes per user, and a user
    can signal its own processes). Not root: nothing to claim (each sandbox is nobody in a user namespace)."""

    def __init__(self, slots: int):
        self.slots = slots
        self.locks: list[int] = []

    def __enter__(self) -> SlotUsers:
        if not privileged():
            return self
        folder = slot_lock_folder()
        for uid in range(SLOT_UID_BASE, SLOT_UID_BASE + SLOT_UIDS):
            if len(_claimed) == self.slots:
                break
            descriptor = os.open(folder / f"uid-{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(descriptor)
                continue
            self.locks.append(descriptor)
            _claimed[len(_claimed)] = uid
        if len(_claimed) < self.slots:
            self.__exit__()
            raise RuntimeError(f"no free sandbox user: {SLOT_UIDS} are in use by other grading batches")
        return self

    def __exit__(self, *exc_info) -> None:
        _claimed.clear()
        for descriptor in self.locks:
            os.close(descriptor)  # closing the file lets go of its lock
        self.locks.clear()


def drop_privileges(slot: int = 0) -> list[str]:
    """The command prefix that makes a privileged sandbox's first process an unprivileged user, for good."""
    if not privileged():
        return []
    user = str(sandbox_uid(slot))
    setpriv = shutil.which("setpriv") or "/usr/bin/setpriv"
    return [setpriv, f"--reuid={user}", f"--regid={user}", "--clear-groups", "--inh-caps=-all", "--no-new-privs"]


def prepare_work_folder(work: Path, slot: int = 0) -> None:
    """Make ``work`` (and everything in it) the sandbox user's, when the grader is root."""
    if privileged():
        uid = sandbox_uid(slot)
        for path in [work, *work.rglob("*")]:
            os.chown(path, uid, uid, follow_symlinks=False)
        work.chmod(0o711)


def processes_limit(limits: Limits, slot: int = 0) -> int:
    """RLIMIT_NPROC for the sandbox: the kernel counts every task of the user, so add the ones it has already."""
    import psutil

    uid = sandbox_uid(slot)
    tasks = 0
    for process in psutil.process_iter(["uids", "num_threads"]):
        try:
            if process.info["uids"] and process.info["uids"].real == uid:
                tasks += process.info["num_threads"] or 1
        except (psutil.Error, TypeError):
            continue
    return tasks + limits.processes


def read_only_paths() -> list[Path]:
    """What the sandbox sees of the host besides its work folder: the system (of /etc only ETC_FILES), Python, the
    venv, course_lib."""
    paths = [Path(p) for p in (*SYSTEM_PATHS, *ETC_FILES) if os.path.lexists(p)]
    for prefix in {sys.base_prefix, sys.prefix, sys.exec_prefix, sys.base_exec_prefix}:
        paths.append(Path(prefix).resolve())
    paths.append(Path(sys.executable).resolve().parent)
    paths.append(ROOT / "course_lib")  # the editable install's target
    paths.extend(WORKER_FILES)
    unique = []
    for path in sorted(set(paths), key=lambda p: len(p.parts)):
        if not any(path.is_relative_to(kept) for kept in unique):
            unique.append(path)
    return unique


def sandbox_command(work: Path, environment: dict[str, str], command: list[str], slot: int = 0) -> list[str]:
    """The bwrap command line that runs ``command`` in the sandbox, in ``work`` (a private tmpfs there, holding the
    host folder's files read-only)."""
    argv = [bwrap_path() or "bwrap", *namespace_options(), "--clearenv"]
    for key, value in sorted(environment.items()):
        argv += ["--setenv", key, value]
    size = ["--size", str(PRIVATE_TMPFS_BYTES)]
    argv += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", *size, "--tmpfs", "/tmp"]
    argv += ["--perms", "1777", *size, "--tmpfs", "/dev/shm"]
    made = {Path("/"), Path("/dev"), Path("/dev/shm"), Path("/tmp"), Path("/proc")}
    for path in [*read_only_paths(), work]:
        for parent in reversed(path.parents):  # mount points' parents, readable by the sandbox's user
            if parent not in made and str(parent) not in SYSTEM_PATHS:
                argv += ["--perms", "0755", "--dir", str(parent)]
                made.add(parent)
        made.add(path)
    for path in read_only_paths():
        argv += ["--ro-bind", str(path), str(path)]
    # The work folder: a private tmpfs of its own size at the same path, with the files the caller put in the host's
    # folder (the submission) bound read-only into it; whatever the notebook writes there dies with the sandbox.
    argv += ["--perms", "1777", *size, "--tmpfs", str(work)]
    for path in sorted(work.iterdir()):
        argv += ["--ro-bind", str(path), str(path)]
    argv += ["--chdir", str(work), "--", *drop_privileges(slot), *command]
    return argv


def runner_command(limits: Limits, notebook: Path, files: list[str] = ()) -> list[str]:
    """The worker's command line (tools/grading_runner.py): it notes the functions of the course_lib ``files`` the
    tests forbid, runs ``notebook``, then answers on stdin/stdout."""
    return [sys.executable, "-B", str(RUNNER), json.dumps(asdict(limits)), str(notebook), *files]  # -B: no .pyc


@dataclass
class Outcome:
    """How the runner ended: its exit status (negative: killed by that signal), or timed out; and whether the
    sandbox hit the memory limit of its slot's cgroup (the kernel then killed one of its processes)."""

    status: int | None
    timed_out: bool
    memory_limit_hit: bool = False


def start_sandboxed(
    work: Path,
    environment: dict[str, str],
    command: list[str],
    log_path: Path,
    unsafe: bool = False,
    slot: int = 0,
    pipes: bool = False,
) -> subprocess.Popen:
    """Start ``command`` in the sandbox (or, ``unsafe``, as a plain process group), its stderr (and, without
    ``pipes``, its stdout) into ``log_path``; with ``pipes`` its stdin and stdout are pipes to the caller. In a batch
    with cgroups (tools/grading_cgroup.py's ``SlotGroups``) it starts in its slot's group, made for it: end it with
    ``stop_sandboxed``."""
    argv = command if unsafe else sandbox_command(work, environment, command, slot)
    group = grading_cgroup.slot_group(slot)
    if group is not None:
        group.create()
        argv = [*group.command_prefix(), *argv]  # joins the group, then execs bwrap: all the sandbox is born in it
    with open(log_path, "wb") as log:
        return subprocess.Popen(
            argv,
            cwd=work,
            env=environment if unsafe else {"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            stdout=subprocess.PIPE if pipes else log,
            stderr=log if pipes else subprocess.STDOUT,
            stdin=subprocess.PIPE if pipes else subprocess.DEVNULL,
            start_new_session=True,  # a process group of its own, killed as a whole
        )


def run_sandboxed(
    work: Path,
    environment: dict[str, str],
    command: list[str],
    timeout_s: float,
    log_path: Path,
    unsafe: bool = False,
    slot: int = 0,
) -> Outcome:
    """Run ``command`` in the sandbox (or, ``unsafe``, as a plain process group), stop it at ``timeout_s``."""
    process = start_sandboxed(work, environment, command, log_path, unsafe, slot)
    try:
        status = process.wait(timeout=timeout_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        status, timed_out = None, True
    finally:
        memory_limit_hit = stop_sandboxed(process, slot)
    return Outcome(status, timed_out, memory_limit_hit)


def stop_sandboxed(process: subprocess.Popen, slot: int = 0) -> bool:
    """Kill what is left of a sandbox ``start_sandboxed`` started, wait for it and remove its slot's cgroup (if it
    has one): whether the sandbox hit the cgroup's memory limit."""
    try:
        # bwrap's PID namespace dies with its first process; the group kill covers UNSAFE runs and bwrap itself.
        kill_group(process)
    finally:
        group = grading_cgroup.slot_group(slot)
        memory_limit_hit = group.finish() if group is not None else False  # kills what the cgroup still holds
    return memory_limit_hit


def kill_group(process: subprocess.Popen) -> None:
    """Kill ``process``'s process group (and, through its PID namespace, the sandbox); wait for ``process``."""
    import psutil

    try:
        family = psutil.Process(process.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        family = []
    for member in family:  # in UNSAFE runs, the kernel may have a session of its own
        try:
            member.kill()
        except psutil.NoSuchProcess:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()
