"""The grader's own checks, without a batch: the integrity scan, score validation, the autograder checksums and the
refusal to grade without bubblewrap (tools/grading_scan.py, tools/grade.py). The hostile submissions themselves are
graded end to end in tests/test_grading.py, in the same batch as honest ones."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tools import assignments, grade
from tools import grading_scan as scan

ROOT = Path(__file__).resolve().parents[1]


# ---- the integrity scan ----------------------------------------------------------------------------------------------

FLAGGED = [
    ("import math\nmath.isclose = lambda *a, **k: True", "patches a module"),
    ("import numpy as np\nnp.allclose = lambda *a: True", "patches a module"),
    ("from course_lib import collectives\ncollectives.ring_allreduce_time = abs", "patches a module"),
    ("import course_lib.parallelism as p\nsetattr(p, 'zero_model_state_bytes', abs)", "patches a module"),
    ("import builtins\nbuiltins.isinstance = lambda *a: True", "patches a module"),
    ("__builtins__['type'] = lambda x: float", "patches a module"),
    ("grader.check = lambda *a: None", "patches a module"),
    ("from otter.test_files import TestFile", "otter internals"),
    ("import otter.execute", "otter internals"),
    ("import otter\notter.test_files.TestFile.score = 1", "otter internals"),
    ("import sys\nf = sys._getframe(1).f_locals", "introspection"),
    ("import inspect\ninspect.stack()", "introspection"),
    ("import gc\ngc.get_objects()", "introspection"),
    ("def f():\n    raise Exception\n", None),
    ("open('tests/q1.py', 'w').write('x')", "files"),
    ("from pathlib import Path\nPath('x').write_text('y')", "files"),
    ("import os\nos.remove('x')", "files"),
    ("import shutil\nshutil.rmtree('x')", "files"),
    ("%%writefile tests/q1.py\nOK = 1", "files"),
    ("import subprocess\nsubprocess.run(['ls'])", "processes"),
    ("import os\nos.system('ls')", "processes"),
    ("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)", "processes"),
    ("!ls ..", "processes"),
    ("import os\nos.environ['HOME']", "environment"),
    ("import os\nos.getenv('SUBMISSIONS')", "environment"),
    ("import sys\nprint(sys.argv)", "environment"),
    ("exec('import os')", "dynamic code"),
    ("import glob\nglob.glob('../**/tests/q1.py', recursive=True)", "otter internals"),
    ("import json\njson.load(open('../results/results.json'))", "otter internals"),
    ("m = __import__('o' + 's')", "dynamic code"),
    ("import importlib\nimportlib.import_module('subprocess')", "dynamic code"),
    # issue 23's red team: the same things through getattr with constant strings, vars(), get_ipython(), atexit
    ("import sys\nwant = getattr(sys, '_getframe')(1).f_locals['want']", "introspection"),
    ("import sys\nrunner = getattr(sys, 'modules')['otter.test_files.exception_test']", "introspection"),
    ("import sys\ngetattr(sys, 'setprofile')(None)", "introspection"),
    ("import builtins\ngetattr(builtins, 'exec')('x = 1')", "dynamic code"),
    ("import builtins\nvars(builtins)['abs'] = len", "dynamic code"),
    ("import builtins\ntable = builtins.__dict__\ntable['abs'] = len", "introspection"),
    ("get_ipython().system('ls ..')", "processes"),
    ("shell = get_ipython\nshell().run_cell_magic('bash', '', 'ls')", "processes"),
    ("import atexit\natexit.register(print)", "processes"),
    ("import threading\nthreading.Thread(target=print).start()", "processes"),
    ("import tempfile\ntempfile.mkdtemp()", "files"),
    ("import pickle\npickle.dump({}, open('results.pkl', 'wb'))", "introspection"),
    # shell escapes and magics in every form IPython runs (its TransformerManager reads them as the scan does)
    ("listing = !ls ..", "processes"),
    ("def f():\n    !rm -rf ..\n", "processes"),
    ("%load_ext some_extension", "processes"),
    ("%pip install something", "processes"),
    ("%%python3\nimport os", "processes"),
    ("%time import os; os.system('ls')", "processes"),
    ("%%capture\nimport subprocess", "processes"),
    ("%%time\nopen('tests/q1.py', 'w')", "files"),
    # issue 39: the scan reads what runs, every magic off the allow-list, aliases, computed names, frames
    ("x = (\nimport otter\n)\nimport os", "unreadable code"),
    ("# a comment\u2028_quiet = sys.setprofile", None),  # U+2028 is inside the comment for Python too: nothing runs
    ("# a comment\f\nimport sys\n_quiet = sys.setprofile", "introspection"),
    ("%config Foo.bar = globals().__setitem__('x', 1)", "dynamic code"),
    ("%autocall 2", "dynamic code"),
    ('exec "import os"', "unreadable code"),
    ("%time %config Foo.bar = 1", "dynamic code"),
    ("import operator, sys\noperator.attrgetter('set' + 'profile')(sys)(None)", "dynamic code"),
    ("from operator import attrgetter as a\na('f_back')", "introspection"),
    ("import os\nx = os\nx.system('ls')", "dynamic code"),
    ("_w = open\n_w('tests/q1.py', 'w')", "dynamic code"),
    ("def g():\n    yield 1\ngen = g()\nframe = getattr(gen, 'gi_' + 'frame')", "dynamic code"),
    ("frame = getattr(gen, 'gi_frame')", "introspection"),
    ("frame = gen.gi_frame.f_back", "introspection"),
    ("try:\n    1 / 0\nexcept Exception as e:\n    f = e.__traceback__.tb_frame", "introspection"),
    ("classes = ().__class__.__base__.__subclasses__()", "introspection"),
    ("x = object.__getattribute__(obj, name)", "dynamic code"),
    ("from course_lib import collectives\nfactors = collectives._BUSBW_FACTORS", "reference internals"),
    ("from course_lib.collectives import _BUSBW_FACTORS", "reference internals"),
    ("f = ring_allreduce_time.__code__", "introspection"),
    ("import __main__\n__main__.call = None", "otter internals"),
    ("import grading_helpers", "otter internals"),
]


@pytest.mark.parametrize("source, kind", FLAGGED, ids=[source.splitlines()[-1][:40] for source, _ in FLAGGED])
def test_the_scan_flags_what_a_cheat_tries(source, kind):
    kinds = {flag.kind for flag in scan.scan_sources([source])}
    if kind is None:
        assert kinds == set()
    else:
        assert kind in kinds, kinds


def test_the_scan_leaves_honest_code_alone():
    honest = [
        'import otter\ngrader = otter.Notebook("01_ring_allreduce.ipynb")',
        'grader.check("q1")\ngrader.check_all()',
        "import math\nfrom course_lib import collectives, parallelism, units",
        "def f(x):\n    return math.isclose(x, 1.0) and collectives.comm_time(8, 1e9, 1e9, 1e-6) > 0",
        "plan = parallelism.ParallelPlan().replace(micro_batch=2)\nname = 'a'.replace('a', 'b')",
        "import numpy as np\nx = np.zeros(3)\nx[0] = 1\nprint(np.stack([x, x]).sum())",
        "with open('data.csv') as stream:\n    text = stream.read()",
        "%matplotlib inline\nresult = 2 * 3",
        "%time total = sum(range(10))\n%timeit -n 1 sorted([3, 1, 2])",
        "%%time\nresult = math.sqrt(2.0)",
        "import sys, io\nprint(1, file=sys.stderr)\nok = isinstance(sys.stdout, io.StringIO)",
        "class Plan(object):\n    pass\nvalue = getattr(plan, 'micro_batch')",
        "x = 1  # a comment \u2028 with a line separator",
        "%%capture out\nresult = 2",
    ]
    assert scan.scan_sources(honest) == []


def test_the_scan_follows_aliases_across_cells_and_flags_invalid_cells():
    flags = scan.scan_sources(["import math as m", "this is not python(", "m.sqrt = abs"])
    assert [(flag.kind, flag.cell, flag.detail) for flag in flags] == [
        ("unreadable code", 2, "the cell does not parse (SyntaxError)"),
        ("patches a module", 3, "math.sqrt"),
    ]
    assert scan.summarise(flags) == (
        "unreadable code (cell 2: the cell does not parse (SyntaxError)); patches a module (cell 3: math.sqrt)"
    )


def test_the_scan_reads_the_sources_the_worker_runs():
    """One function (tools/grading_runner.py's code_cells) gives both: an otter line becomes a stub, never a gap
    that joins the two ends of a string; lines end where Python's tokenizer ends them."""
    from tools.grading_runner import OTTER_STUB, code_cells

    hiding = 'grader.check("""q1)\nimport os\nos.system("ls")\ngrader.check("""q1)'
    notebook = {"cells": [{"cell_type": "code", "source": hiding}, {"cell_type": "code", "source": "a = 1\u2028b"}]}
    assert code_cells(notebook) == [
        (1, f'{OTTER_STUB}\nimport os\nos.system("ls")\n{OTTER_STUB}'),
        (2, "a = 1\u2028b"),
    ]
    assert {flag.kind for flag in scan.scan_notebook(notebook)} == {"processes", "unreadable code"}


@pytest.mark.parametrize("lab", assignments.lab_names())
def test_the_student_versions_and_the_solutions_raise_no_flags(lab, assigned):
    for path in (ROOT / "labs" / f"{lab}.ipynb", assigned / lab / "autograder" / f"{lab}.ipynb"):
        assert scan.scan_bytes(path.read_bytes()) == [], path


# ---- feedback ---------------------------------------------------------------------------------------------------


def test_feedback_withholds_a_public_message_that_quotes_the_hidden_tests(assigned):
    zip_path = assignments.autograder_zip(assignments.lab_names()[0], assigned)
    secrets = grade.hidden_lines(zip_path)
    assert "test_q1_other_rings" in secrets and len(secrets) >= 10
    quoted = {"q1": ("q1 results:\n RuntimeError: " + "\n".join(sorted(secrets)), False), "q2": ("q2 ok", True)}
    assert grade.quotes_hidden_tests(quoted, secrets) == ["q1"]
    body = grade.results_body(quoted, ["q1"])
    assert not [line for line in secrets if line in body] and "message withheld" in body


def test_feedback_is_cut_to_its_limit():
    text = grade.feedback_text("ada", "01_lab", {"q1": (0.0, 3.0)}, "x" * 10**6)
    assert len(text.encode("utf-8")) <= grade.FEEDBACK_BYTES and text.startswith("01_lab: 0 / 3 points (ada)")


# ---- refusing to grade -----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def assigned(assigned_out):
    """Autograder zips of every lab: the session's one build (tests that change a zip change a copy of it)."""
    return assigned_out


def submissions_with_one_notebook(tmp_path: Path, out: Path) -> Path:
    lab = assignments.lab_names()[0]
    folder = tmp_path / "submissions" / "ada"
    folder.mkdir(parents=True)
    shutil.copy(out / lab / "autograder" / f"{lab}.ipynb", folder / f"{lab}.ipynb")  # the solutions
    return folder.parent


def test_make_assignments_records_each_zips_sha256(assigned):
    for lab in assignments.lab_names():
        recorded, name = assignments.checksum_path(lab, assigned).read_text(encoding="utf-8").split()
        zip_path = assignments.autograder_zip(lab, assigned)
        assert name == zip_path.name and recorded == grade.sha256(zip_path)


def test_a_changed_autograder_zip_stops_the_run(assigned, tmp_path):
    out = tmp_path / "assignments"
    shutil.copytree(assigned, out)
    zip_path = assignments.autograder_zip(assignments.lab_names()[-1], out)
    zip_path.write_bytes(zip_path.read_bytes() + b"\0")
    submissions = submissions_with_one_notebook(tmp_path, out)
    done = subprocess.run(
        [sys.executable, "-m", "tools.grade", str(submissions), "--assignments", str(out)],
        capture_output=True,
        cwd=ROOT,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "changed since `make assignments`" in done.stderr and "grading stopped" in done.stderr
    assert not (tmp_path / "grades.csv").exists()


def test_without_bubblewrap_grading_refuses_and_says_how_to_install_it(assigned, tmp_path):
    submissions = submissions_with_one_notebook(tmp_path, assigned)
    done = subprocess.run(
        [sys.executable, "-m", "tools.grade", str(submissions), "--assignments", str(assigned)],
        capture_output=True,
        cwd=ROOT,
        text=True,
        timeout=300,
        env={"PATH": str(tmp_path / "no-bwrap-here"), "HOME": str(tmp_path)},
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "apt-get install bubblewrap" in done.stderr and "UNSAFE=1" in done.stderr
    assert not (tmp_path / "grades.csv").exists()


def test_unsafe_grades_without_the_sandbox_and_says_so(assigned, tmp_path):
    submissions = submissions_with_one_notebook(tmp_path, assigned)
    done = subprocess.run(
        [sys.executable, "-m", "tools.grade", str(submissions), "--assignments", str(assigned), "--unsafe"],
        capture_output=True,
        cwd=ROOT,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "UNSAFE" in done.stderr
    rows = (tmp_path / "grades.csv").read_text(encoding="utf-8").splitlines()
    assert rows[0] == ",".join(grade.COLUMNS) and len(rows) == 5
    assert all(row.split(",")[3] == row.split(",")[4] and row.split(",")[5] == "graded" for row in rows[1:]), rows
    assert "UNSAFE: graded without the sandbox" in (tmp_path / grade.REPORT_NAME).read_text(encoding="utf-8")


# ---- the sandbox's own /tmp and /dev/shm (issue 23, item 2) ------------------------------------------------------


def test_the_sandbox_fills_its_own_work_folder_tmp_and_shm_not_the_hosts(tmp_path):
    from tools import grading_sandbox as sandbox

    if sandbox.bwrap_works() is not None:
        pytest.skip(sandbox.bwrap_works())
    work = Path(grade.scratch_root() or tmp_path) / f"grade-test-{tmp_path.name}"
    work.mkdir()
    try:
        sandbox.prepare_work_folder(work)
        # Write 64 MiB at a time into each until it fails; print how much fitted.
        code = (
            "import sys\n"
            "for folder in ('/tmp', '/dev/shm', '.'):\n"
            "    written = 0\n"
            "    try:\n"
            "        with open(folder + '/fill', 'wb') as f:\n"
            "            while written < 2**30:\n"
            "                f.write(b'x' * 2**26); f.flush(); written += 2**26\n"
            "    except OSError as error:\n"
            "        print(folder, written, error.errno)\n"
        )
        host_before = shutil.disk_usage("/dev/shm").used
        outcome = sandbox.run_sandboxed(work, {"PATH": "/usr/bin"}, [sys.executable, "-c", code], 60, tmp_path / "log")
        log = (tmp_path / "log").read_text()
        assert outcome.status == 0 and not outcome.timed_out, log
        limit = sandbox.PRIVATE_TMPFS_BYTES
        for line, folder in zip(log.split("\n")[:3], ("/tmp", "/dev/shm", "."), strict=True):
            name, written, errno = line.split()
            assert name == folder and int(written) <= limit and errno == "28", log  # ENOSPC at its own limit
        assert shutil.disk_usage("/dev/shm").used - host_before < 2**26  # the host's /dev/shm did not fill
        assert not (work / "fill").exists()  # nor the host's work folder (it holds the grader's files only)
    finally:
        grade.remove_tree(work)


def test_the_sandbox_sees_only_the_etc_files_python_needs(tmp_path):
    """Issue 39: all of /etc was readable (/etc/pip.conf may hold an index's credentials)."""
    from tools import grading_sandbox as sandbox

    if sandbox.bwrap_works() is not None:
        pytest.skip(sandbox.bwrap_works())
    work = Path(grade.scratch_root() or tmp_path) / f"grade-test-etc-{tmp_path.name}"
    work.mkdir()
    try:
        sandbox.prepare_work_folder(work)
        code = "import os, numpy\nprint(' '.join(sorted(os.listdir('/etc'))))"
        outcome = sandbox.run_sandboxed(work, {"PATH": "/usr/bin"}, [sys.executable, "-c", code], 60, tmp_path / "log")
        log = (tmp_path / "log").read_text()
        assert outcome.status == 0, log  # Python and numpy start with these alone
        seen = set(log.split())
        assert seen <= {Path(path).name for path in sandbox.ETC_FILES}, seen
        assert not seen & {"pip.conf", "passwd", "shadow", "hostname", "hosts", "environment"}
    finally:
        grade.remove_tree(work)


def test_concurrent_batches_claim_different_sandbox_users():
    """Issue 39: two `make grade` at once used the same slot users (the kernel counts processes per user)."""
    from tools import grading_sandbox as sandbox

    if not sandbox.privileged():
        pytest.skip("sandbox users are claimed only when the grader runs as root")
    code = (
        "import time\nfrom tools import grading_sandbox as s\n"
        "with s.SlotUsers(3):\n    print(sorted(s.sandbox_uid(slot) for slot in range(3)), flush=True)\n"
        "    time.sleep(3)\n"
    )
    batches = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=ROOT) for _ in range(2)
    ]
    claimed = [set(eval(batch.communicate(timeout=60)[0])) for batch in batches]
    assert len(claimed[0]) == len(claimed[1]) == 3 and not claimed[0] & claimed[1], claimed
    assert all(uid >= sandbox.SLOT_UID_BASE for uid in claimed[0] | claimed[1])
