"""Each lesson and lab states its time near its top, the course map's tables repeat them, and their sum lies in the
range the course map states for the whole course (issue 25: "a course that can be finished")."""

import re
from pathlib import Path

from tools.assignments import lab_names

ROOT = Path(__file__).resolve().parents[1]
MAP = (ROOT / "notebooks_py" / "00_course_map.py").read_text(encoding="utf-8")
STATED = re.compile(r"\*\*Time to learn:\*\* about (\d+(?:\.\d+)?) hours?\b")
LESSONS = sorted(path.stem for path in (ROOT / "notebooks_py").glob("[0-9][0-9]_*.py") if path.stem[:2] != "00")


def stated_hours(path: Path) -> float:
    """The one "**Time to learn:** about N hours" of a twin, in its first 60 lines (near its top)."""
    head = "\n".join(path.read_text(encoding="utf-8").splitlines()[:60])
    found = STATED.findall(head)
    assert len(found) == 1, f"{path.relative_to(ROOT)}: states its time {len(found)} times near its top, not once"
    return float(found[0])


def map_hours(link: str) -> float:
    """The time the course map's table gives the row that links to ``link``."""
    row = re.search(r"^# \|[^\n]*\(" + re.escape(link) + r"\)[^\n]*\| (\d+(?:\.\d+)?) h \|$", MAP, re.MULTILINE)
    assert row, f"the course map has no row with a time for {link}"
    return float(row.group(1))


def test_every_lesson_and_lab_states_the_time_the_map_gives():
    for lesson in LESSONS:
        assert stated_hours(ROOT / "notebooks_py" / f"{lesson}.py") == map_hours(f"{lesson}.ipynb"), lesson
    for lab in lab_names():
        assert stated_hours(ROOT / "labs" / lab / f"{lab}.py") == map_hours(f"../labs/{lab}.ipynb"), lab


def test_the_stated_times_add_up_to_the_course_maps_estimate():
    low, high = map(int, re.search(r"an estimated \*\*(\d+)–(\d+) hours\*\*", MAP).groups())
    lessons = sum(stated_hours(ROOT / "notebooks_py" / f"{lesson}.py") for lesson in LESSONS)
    labs = sum(stated_hours(ROOT / "labs" / lab / f"{lab}.py") for lab in lab_names())
    assert low <= lessons + labs <= high, (lessons, labs, (low, high))
    hours = r"(\d+(?:\.\d+)?)"  # whole or half hours
    sentence = re.search(rf"add up to {hours} hours for the lessons and {hours} for\n# the labs, {hours} in all", MAP)
    assert sentence and tuple(map(float, sentence.groups())) == (lessons, labs, lessons + labs)
