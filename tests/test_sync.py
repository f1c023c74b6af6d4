"""`make sync` (tools/sync.py): which notebooks it executes again and which labs it rebuilds, decided without running
either (the notebooks and the builds themselves are the notebook and grading tiers' work)."""

from __future__ import annotations

import shutil

from tools import assignments, changed_notebooks, sync

ROOT = sync.ROOT
LESSON = ROOT / "notebooks" / "01_mac.ipynb"
SERVING = assignments.master_path("06_serving")
TWINS = {
    notebook: twin for notebook, twin in changed_notebooks.notebook_twins().items() if notebook in {LESSON, SERVING}
}


def nothing_since(_notebook):
    return set()


def test_with_no_stamp_a_committed_notebook_is_up_to_date_and_gets_stamped():
    stamps: dict[str, str] = {}
    assert sync.stale_notebooks(TWINS, stamps, changed=set(), since=nothing_since) == []
    assert sorted(stamps) == ["labs/06_serving/06_serving.ipynb", "notebooks/01_mac.ipynb"]


def test_with_no_stamp_a_change_committed_after_the_notebook_makes_it_stale():
    # A course_lib module committed after the notebook's outputs were stored, without executing it again.
    def serving_since(notebook):
        return {"course_lib/serving/replica.py"} if notebook == SERVING else set()

    assert sync.stale_notebooks(TWINS, {}, changed=set(), since=serving_since) == [SERVING]
    # git answers for the real history: each notebook's inputs committed after it (a set of repository paths)
    assert all(isinstance(path, str) for path in sync.committed_since(LESSON))


def test_an_uncommitted_change_to_what_a_notebook_runs_makes_it_stale_until_it_is_stamped():
    changed = {"course_lib/widgets/serving.py"}
    assert sync.stale_notebooks(TWINS, {}, changed, since=nothing_since) == [SERVING]
    # the master imports the grading helpers
    assert sync.stale_notebooks(TWINS, {}, {"tools/grading_helpers.py"}, since=nothing_since) == [SERVING]
    stamps: dict[str, str] = {}
    sync.stale_notebooks(TWINS, stamps, changed=set(), since=nothing_since)  # as after executing it: its inputs' stamp
    assert sync.stale_notebooks(TWINS, stamps, changed) == []
    stamps[sync.rel(SERVING)] = "0" * 64  # a stamp of other inputs: git decides again
    assert sync.stale_notebooks(TWINS, stamps, changed, since=nothing_since) == [SERVING]


def test_a_lab_is_rebuilt_unless_its_recorded_hash_and_student_copy_match(tmp_path):
    out, students, lab = tmp_path / "out", tmp_path / "labs", "06_serving"
    assert sync.stale_labs([lab], out, students) == [lab]  # nothing built yet
    built = out / lab / "student" / f"{lab}.ipynb"
    built.parent.mkdir(parents=True)
    shutil.copy(ROOT / "labs" / f"{lab}.ipynb", built)
    assignments.inputs_hash_path(lab, out).write_text(assignments.inputs_hash([lab]) + "\n", encoding="utf-8")
    assert sync.stale_labs([lab], out, None) == []
    assert sync.stale_labs([lab], out, students) == [lab]  # no student copy
    students.mkdir()
    shutil.copy(built, students / f"{lab}.ipynb")
    assert sync.stale_labs([lab], out, students) == []
    (students / f"{lab}.ipynb").write_text("{}", encoding="utf-8")
    assert sync.stale_labs([lab], out, students) == [lab]  # the copy was changed
    shutil.copy(built, students / f"{lab}.ipynb")
    assignments.inputs_hash_path(lab, out).write_text(
        assignments.inputs_hash(["05_partition_explorer"]) + "\n", encoding="utf-8"
    )
    assert sync.stale_labs([lab], out, students) == [lab]  # built from other inputs
