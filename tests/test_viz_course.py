"""The course map: every lesson in notebooks/ is on it, in prerequisite order, and the figure draws what it lists."""

import re
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from course_lib.viz.course import LABS, LESSONS, TRACK_STYLE, notebook_tracks, plot_course_map

ROOT = Path(__file__).resolve().parents[1]


def test_every_lesson_is_on_the_map_and_every_entry_is_a_lesson():
    stems = [stem for stem, _, _ in LESSONS]
    on_disk = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb") if re.match(r"\d\d_", p.name))
    assert sorted(stems) == [stem for stem in on_disk if int(stem[:2]) >= 1], (
        "course_lib/viz/course.py LESSONS must list every lesson of notebooks/ after the map (00)"
    )
    assert stems == sorted(stems), "LESSONS are listed in the order of their numbers"


def test_prerequisites_are_earlier_lessons_and_labs_hang_on_lessons():
    seen = set()
    for stem, title, prerequisites in LESSONS:
        assert title.startswith(stem[:2] + " · "), title
        assert set(prerequisites) <= seen, f"{stem} needs {set(prerequisites) - seen}, not an earlier lesson"
        seen.add(stem)
    assert {lesson for _, _, lesson in LABS} <= seen
    prerequisites = {stem: set(needs) for stem, _, needs in LESSONS}
    assert prerequisites["09_capstone"] >= {
        "04_communication_budget",
        "05_plan_search",
        "07_measure",
        "08_model_meets_measurements",
    }


def test_the_map_draws_one_box_per_lesson_and_lab():
    ax = plot_course_map()
    texts = [" ".join(t.get_text().split()) for t in ax.texts]  # subtitles wrap to fit their box
    titles = [title for _, title, _ in LESSONS] + [title for _, title, _ in LABS]
    assert sorted(texts) == sorted(" ".join(title.split()) for title in titles)
    arrows = [p for p in ax.patches if type(p).__name__ == "FancyArrowPatch"]
    assert len(arrows) == sum(1 for _, _, prerequisites in LESSONS if prerequisites)
    plt.close("all")


def test_every_lab_on_the_map_is_a_lab():
    on_disk = sorted(p.stem for p in (ROOT / "labs").glob("[0-9][0-9]_*.ipynb"))
    assert sorted(stem for stem, _, _ in LABS) == on_disk, "course_lib/viz/course.py LABS must list every lab of labs/"


def test_the_map_draws_the_core_path_solid_and_the_depth_tracks_dashed():
    tracks = notebook_tracks(ROOT)
    ax = plot_course_map(tracks=tracks)
    boxes = {patch.get_gid(): patch for patch in ax.patches if type(patch).__name__ == "FancyBboxPatch"}
    drawn = sorted([stem for stem, _, _ in LESSONS] + [stem for stem, _, _ in LABS])
    assert sorted(boxes) == drawn and set(drawn) <= set(tracks), "one box per lesson and lab, named by its stem"
    for stem, box in boxes.items():
        drawn = (box.get_linestyle(), box.get_linewidth(), box.get_alpha())
        expected = TRACK_STYLE[tracks[stem]]
        assert drawn == (expected["linestyle"], expected["linewidth"], expected["alpha"]), (stem, tracks[stem], drawn)
    assert {tracks[stem] for stem in boxes if boxes[stem].get_linestyle() == "-"} == {"core"}
    assert [text.get_text() for text in ax.get_legend().get_texts()] == ["core path", "depth track"]
    plt.close("all")


def test_notebook_tracks_names_a_notebook_without_a_track(tmp_path):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "01_x.ipynb").write_text('{"metadata": {}, "cells": []}', encoding="utf-8")
    with pytest.raises(ValueError, match="01_x.ipynb: metadata course.track is None"):
        notebook_tracks(tmp_path)
    with pytest.raises(ValueError, match="tracks must map"):
        plot_course_map(tracks={"01_mac": "optional"})
    plt.close("all")
