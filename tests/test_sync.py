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


def test_with_no_stamp_a_committed_notebook_is_up_to_date_and_gets_stamped():
    stamps: dict[str, str] = {}
    assert sync.stale_notebooks(TWINS, stamps, changed=set()) == []
    assert sorted(stamps) == ["labs/06_serving/06_serving.ipynb", "notebooks/01_mac.ipynb"]


def test_an_uncommitted_change_to_what_a_notebook_runs_makes_it_stale_until_it_is_stamped():
    changed = {"course_lib/widgets/serving.py"}
    assert sync.stale_notebooks(TWINS, {}, changed) == [SERVING]
    assert sync.stale_notebooks(TWINS, {}, {"tools/grading_helpers.py"}) == [SERVING]  # the master imports them
    stamps: dict[str, str] = {}
    sync.stale_notebooks(TWINS, stamps, changed=set())  # as after executing it: the stamp of its inputs now
    assert sync.stale_notebooks(TWINS, stamps, changed) == []
    stamps[sync.rel(SERVING)] = "0" * 64  # a stamp of other inputs: git decides again
    assert sync.stale_notebooks(TWINS, stamps, changed) == [SERVING]


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
