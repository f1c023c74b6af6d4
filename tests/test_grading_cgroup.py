"""The cgroup of a grading slot (tools/grading_cgroup.py) in real cgroups of this machine: memory, processes and CPU
are limited for all the processes of a sandbox together, and nothing is left behind. Skipped where the machine offers
no cgroup we can make groups in (not root, or a read-only /sys/fs/cgroup): grading then falls back to rlimits."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
import psutil
import pytest

from tools import grade
from tools import grading_cgroup as cgroup
from tools import grading_sandbox as sandbox
from tools.assignments import autograder_zip

MiB = 2**20
# Holds 300 MB (written, so the pages are really charged), long enough for the four to overlap.
HOG = "import time\nblock = b'\\x01' * (300 * 2**20)\ntime.sleep(2)\n"
# Forks until the kernel refuses, prints how many children it made, then waits.
FORK_LOOP = (
    "import os, time\n"
    "made = 0\n"
    "try:\n"
    "    while made < 1000:\n"
    "        if os.fork() == 0:\n"
    "            time.sleep(60)\n"
    "            os._exit(0)\n"
    "        made += 1\n"
    "except OSError:\n"
    "    pass\n"
    "print(made, flush=True)\n"
    "time.sleep(60)\n"
)
# Four threads hashing (hashlib releases the GIL on large buffers): wants four cores.
SPINNER = (
    "import hashlib, threading\n"
    "data = b'x' * 2**20\n"
    "def spin():\n"
    "    while True:\n"
    "        hashlib.sha256(data).digest()\n"
    "for _ in range(4):\n"
    "    threading.Thread(target=spin).start()\n"
)
# Ignores SIGTERM, and every process of it keeps forking (a new session each) until the group's pids.max stops it.
STUBBORN = (
    "import os, signal, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "while True:\n"
    "    try:\n"
    "        if os.fork() == 0:\n"
    "            os.setsid()\n"
    "    except OSError:\n"
    "        pass\n"
    "    time.sleep(0.01)\n"
)


@pytest.fixture(scope="module")
def hierarchy() -> cgroup.Hierarchy:
    found = cgroup.detect()
    if not found.version:
        pytest.skip(f"no cgroup to make groups in here: {found.reason}")
    return found


@pytest.fixture
def make_group(hierarchy):
    """Makes slot groups for a test (named after this process, as a grader's are); finishes them all afterwards."""
    made = []

    def make(limits: cgroup.GroupLimits) -> cgroup.SlotGroup:
        group = cgroup.SlotGroup(hierarchy, f"{cgroup.GROUP_PREFIX}{os.getpid()}-test{len(made)}", limits)
        group.create()
        made.append(group)
        return group

    yield make
    for group in made:
        group.finish()


def controller_file(group: cgroup.SlotGroup, controller: str, name: str) -> Path:
    """A file of the group's ``controller`` (v1: its own hierarchy; v2: the one group)."""
    paths = group.paths
    return paths.get(controller, paths.get("", Path("/nonexistent"))) / name


def start_in(group: cgroup.SlotGroup, code: str, **options) -> subprocess.Popen:
    return subprocess.Popen([*group.command_prefix(), sys.executable, "-c", code], **options)


def gone(pid: int) -> bool:
    """The process has ended (a zombie waiting for its parent counts as ended)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_the_memory_limit_holds_for_all_the_groups_processes_together(make_group):
    small = make_group(cgroup.GroupLimits(memory_bytes=512 * MiB))
    statuses = [process.wait(timeout=120) for process in [start_in(small, HOG) for _ in range(4)]]
    assert -9 in statuses and small.memory_limit_hit(), statuses  # 4 x 300 MB > 512 MiB: the OOM killer chose
    large = make_group(cgroup.GroupLimits(memory_bytes=2 * 2**30))
    statuses = [process.wait(timeout=120) for process in [start_in(large, HOG) for _ in range(4)]]
    assert statuses == [0, 0, 0, 0] and not large.memory_limit_hit()
    assert small.finish() and not large.finish()  # what run_sandboxed reports in Outcome.memory_limit_hit


def test_a_fork_loop_stops_at_the_groups_process_limit(make_group):
    group = make_group(cgroup.GroupLimits(processes=32))
    process = start_in(group, FORK_LOOP, stdout=subprocess.PIPE, text=True)
    try:
        made = int(process.stdout.readline())
        assert made == 31  # 31 children and the loop itself
        assert int(controller_file(group, "pids", "pids.current").read_text()) == 32
    finally:
        group.finish()
        process.wait(timeout=30)
        process.stdout.close()


def cpu_share(group: cgroup.SlotGroup) -> tuple[float, int]:
    """(CPU seconds per wall second that SPINNER gets in ``group``, over 1 s; the group's nr_throttled then)."""
    process = start_in(group, SPINNER)
    try:
        time.sleep(0.5)  # the threads are spinning
        spinner = psutil.Process(process.pid)
        cpu_start, wall_start = sum(spinner.cpu_times()[:2]), time.monotonic()
        time.sleep(1.0)
        cpu_s = sum(spinner.cpu_times()[:2]) - cpu_start
        share = cpu_s / (time.monotonic() - wall_start)
        return share, cgroup.counter(controller_file(group, "cpu", "cpu.stat"), "nr_throttled")
    finally:
        group.finish()
        process.wait(timeout=30)


def test_the_cpu_quota_holds_four_spinning_threads_to_the_groups_share(make_group):
    one_core = make_group(cgroup.GroupLimits(cpu_cores=1.0))  # the grader's
    if not controller_file(one_core, "cpu", "cpu.stat").exists():
        pytest.skip("no cpu controller for the group here: the quota is not set")
    assert controller_file(one_core, "cpu", "cpu.max" if "" in one_core.paths else "cpu.cfs_quota_us").read_text() in (
        "100000 100000\n",  # v2: quota and period, in microseconds
        "100000\n",  # v1 (the period, cpu.cfs_period_us, is 100000 by default and as written)
    )
    share, _ = cpu_share(one_core)
    assert share < 1.3, share  # four threads, but no more than about one core
    # A quarter of a core: the four threads reach it even on a machine busy with other work, so the group must have
    # waited for its quota (nr_throttled): the limit, not a busy machine, held them back.
    share, throttled = cpu_share(make_group(cgroup.GroupLimits(cpu_cores=0.25)))
    assert share < 0.4 and throttled > 0, (share, throttled)


def test_cleanup_leaves_no_group_and_no_process_even_when_they_ignore_sigterm_and_fork(make_group):
    group = make_group(cgroup.GroupLimits(processes=64))
    process = start_in(group, STUBBORN)
    deadline = time.monotonic() + 30
    while len(group.members()) < 20 and time.monotonic() < deadline:
        time.sleep(0.05)
    members = group.members()
    assert len(members) >= 20
    group.finish()
    process.wait(timeout=30)
    assert not any(path.exists() for path in group.paths.values())
    assert all(gone(pid) for pid in members)


@pytest.mark.usefixtures("hierarchy")
def test_slot_groups_are_registered_for_the_batch_and_removed_after_it():
    with cgroup.SlotGroups(2) as groups:
        assert cgroup.slot_group(0) is groups.groups[0] and cgroup.slot_group(1) is groups.groups[1]
        assert cgroup.slot_group(2) is None
        cgroup.slot_group(1).create()  # left by a notebook whose grading raised: removed on leaving
        description = groups.description()
        assert f"cgroup v{groups.hierarchy.version}" in description and "4 GiB of memory, 256 processes" in description
    assert cgroup.slot_group(0) is None
    assert not any(path.exists() for group in groups.groups.values() for path in group.paths.values())


def test_a_dead_graders_groups_are_removed_by_the_next_batch(hierarchy):
    ended = subprocess.Popen(["true"])
    ended.wait()
    dead_pid = ended.pid  # a grader that is no longer running
    assert not psutil.pid_exists(dead_pid)
    stale = cgroup.SlotGroup(hierarchy, f"{cgroup.GROUP_PREFIX}{dead_pid}-slot0")
    stale.create()
    process = start_in(stale, "import time\ntime.sleep(60)\n")
    deadline = time.monotonic() + 30
    while not stale.members() and time.monotonic() < deadline:
        time.sleep(0.05)
    with cgroup.SlotGroups(1):
        assert not any(path.exists() for path in stale.paths.values())
    assert process.wait(timeout=30) == -9


def test_without_a_cgroup_hierarchy_the_batch_falls_back_and_says_what_it_does_not_cover(tmp_path):
    found = cgroup.detect(root=tmp_path)  # an empty folder: neither v2 nor v1
    assert found.version == 0 and "no cgroup v2" in found.reason and "no cgroup v1 memory" in found.reason
    with cgroup.SlotGroups(2, hierarchy=found) as groups:
        assert groups.groups == {} and cgroup.slot_group(0) is None
        assert "limits per process only" in groups.description()
        assert "more than 4 GiB of memory" in groups.description()


# ---- through the sandbox (bubblewrap) --------------------------------------------------------------------------------


@pytest.fixture
def work(tmp_path):
    if sandbox.bwrap_works() is not None:
        pytest.skip(sandbox.bwrap_works())
    folder = Path(grade.scratch_root() or tmp_path) / f"grade-test-{tmp_path.name}"
    folder.mkdir()
    sandbox.prepare_work_folder(folder)
    yield folder
    grade.remove_tree(folder)


@pytest.mark.usefixtures("hierarchy")
def test_the_sandbox_runs_in_its_slots_group(work, tmp_path):
    outcomes = []
    with cgroup.SlotGroups(1) as groups:
        group = groups.groups[0]
        command = [sys.executable, "-c", "import time\ntime.sleep(3)\n"]
        run = threading.Thread(
            target=lambda: outcomes.append(
                sandbox.run_sandboxed(work, {"PATH": "/usr/bin"}, command, 60, tmp_path / "log")
            )
        )
        run.start()
        deadline, sleeping = time.monotonic() + 30, []
        while not sleeping and time.monotonic() < deadline:  # seen from the host: bwrap's view may be namespaced
            time.sleep(0.1)
            for pid in group.members():
                try:
                    if "time.sleep(3)" in " ".join(psutil.Process(pid).cmdline()):
                        sleeping.append(pid)
                except psutil.NoSuchProcess:
                    continue
        run.join(timeout=60)
    assert sleeping, "the sandbox's python was never seen in the slot's group"
    assert outcomes[0].status == 0 and not outcomes[0].timed_out and not outcomes[0].memory_limit_hit
    assert not any(path.exists() for path in group.paths.values())


@pytest.mark.usefixtures("hierarchy")
def test_a_sandbox_over_its_memory_limit_says_so(work, tmp_path):
    command = [sys.executable, "-c", "block = b'\\x01' * (400 * 2**20)\n"]
    with cgroup.SlotGroups(1, cgroup.GroupLimits(memory_bytes=256 * MiB)):
        outcome = sandbox.run_sandboxed(work, {"PATH": "/usr/bin"}, command, 60, tmp_path / "log")
    assert outcome.status != 0 and outcome.memory_limit_hit


# The worker holds 600 MiB and starts a process that takes 600 MiB more: over a 1 GiB limit the kernel kills the
# largest process of the group, the worker.
HOARD = (
    "import subprocess, sys\n"
    "hoard = b'\\x01' * (600 * 2**20)\n"
    "subprocess.run([sys.executable, '-c', 'import time; more = b\"\\x01\" * (600 * 2**20); time.sleep(10)'])\n"
)


@pytest.mark.usefixtures("hierarchy")
def test_a_notebook_over_its_memory_limit_is_not_graded_and_the_reason_says_so(assigned_out, tmp_path):
    if sandbox.bwrap_works() is not None:
        pytest.skip(sandbox.bwrap_works())
    lab = "01_ring_allreduce"
    notebook = nbformat.read(assigned_out / lab / "student" / f"{lab}.ipynb", as_version=4)
    notebook.cells.insert(3, nbformat.v4.new_code_cell(HOARD))
    submission = tmp_path / "ada" / f"{lab}.ipynb"
    submission.parent.mkdir()
    nbformat.write(notebook, submission)
    with cgroup.SlotGroups(1, cgroup.GroupLimits(memory_bytes=2**30)):
        graded = grade.grade_notebook(submission, autograder_zip(lab, assigned_out), "ada", lab, timeout_s=120)
    reason = "the notebook used more than 1 GiB of memory (the sandbox's limit)"
    assert graded.reason == reason and f"Not graded: {reason}." in graded.feedback
    assert graded.points == 0 and graded.status in ("not graded", "flagged")  # flagged: the scan sees subprocess
