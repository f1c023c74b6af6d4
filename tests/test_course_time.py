"""The course's time, by one rule (tools/course_time.py; issue 41): every notebook says whether it is on the core path
or a depth track, states hours within 10 % of the rule, the course map and the README state the same hours and
totals, the core path takes at most 15 hours and the whole course at most 30. The rule itself is checked on a small
notebook counted by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools import course_time
from tools.assignments import lab_names
from tools.twins import twin_of

ROOT = Path(__file__).resolve().parents[1]
TIMES = course_time.course_times()
BY_PAGE = {time.page: time for time in TIMES}
COURSE_MAP = (ROOT / "notebooks_py" / "00_course_map.py").read_text(encoding="utf-8")
README = (ROOT / "README.md").read_text(encoding="utf-8")
TOLERANCE = 0.10  # the issue's: a stated time more than 10 % from the rule's is wrong
CORE_LIMIT_HOURS, WHOLE_LIMIT_HOURS = 15, 30
# The glossary is a reference, looked up term by term: it states no time of its own (the course map's table does).
STATES_NO_TIME = {"notebooks/glossary"}


def ids(times):
    return [time.page for time in times]


def within(stated: float, rule: float) -> bool:
    return abs(stated - rule) <= TOLERANCE * rule


# ---- the rule, on a notebook counted by hand -------------------------------------------------------------------------

SYNTHETIC = """# ---
# jupyter:
#   course:
#     track: depth
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 01 · Count it
#
# **Time to learn:** about 0.5 hours. Read [the map](00_map.ipynb#Notation): $2MNK$ FLOPs, 1,758 runs,
# $T = n\\alpha$.

# %%
print(1)

# %%
# IGNORE: otter drops this cell
import helpers

# %% [raw]
# # BEGIN QUESTION
# name: q1

# %% [markdown]
# ### Question 1 · a prompt of many words that the graded minutes already cover

# %%
answer = 2

# %% [raw]
# # END QUESTION

# %% [markdown]
# ## Exercises
#
# 1. First exercise, with
#    a second line.
# 2. Second exercise.
#
# <details>
# <summary>Answers</summary>
#
# 1. An answer.
# 2. Another.
#
# </details>

# %% [markdown]
# ## Sources
#
# - A source.
"""


def test_the_rule_on_a_notebook_counted_by_hand(tmp_path):
    twin = tmp_path / "notebooks_py" / "01_count.py"
    twin.parent.mkdir()
    twin.write_text(SYNTHETIC, encoding="utf-8")
    time = course_time.notebook_time(twin)
    # Words by hand: "01 Count it" 3; "Time to learn about 0.5 hours" 6; "Read the map" 3 (the link's text, not its
    # address); "2MNK" 1 symbol; "FLOPs 1,758 runs" 3; "T = nα" 3 symbols -> 19. "Sources A source" 3 -> 22. The
    # question's prompt and the exercises' text and answers are inside their minutes.
    assert (time.words, time.code_cells, time.questions, time.graded) == (22, 1, 2, 1)
    assert time.track == "depth" and time.stated_hours == 0.5 and time.page == "notebooks/01_count"
    assert time.minutes == pytest.approx(22 / 100 + 2 * 1 + 10 * 2 + 15 * 1)


def test_a_second_explore_section_under_a_lab_section_counts_its_questions(tmp_path):
    # Lab 6's concurrency sweep: "## The concurrency sweep", then "### Explore the sweep" with its own questions; the
    # next level-2 heading ends it. Before the fix its 4 questions were read as 26 words of prose.
    twin = tmp_path / "labs" / "09_x" / "09_x.py"
    twin.parent.mkdir(parents=True)
    cells = [
        "# ## Explore\n#\n# 1. **One.** Move it.\n# 2. **Two.** Move it again.",
        "# ## The sweep\n#\n# Some prose here.",
        "# ### Explore the sweep\n#\n# 3. **Three.** Move.\n# 4. **Four.** Move.\n#\n# ## Key figures\n#\n"
        "# Five words of prose here.",  # one cell: the level-2 heading closes the questions inside it
    ]
    twin.write_text("".join(f"# %% [markdown]\n{cell}\n\n" for cell in cells), encoding="utf-8")
    time = course_time.notebook_time(twin)
    assert (time.questions, time.words) == (4, 2 + 3 + 2 + 5)  # "The sweep", its prose, "Key figures", its prose


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("all-reduce, don't, 2.02 ms and 1,758", 6),  # joined runs are one word each: 6 words
        ("$T \\approx n\\alpha + Q/B_\\text{eff}$", 6),  # T, n, α, Q, B, eff
        ("$$\\frac{2(p-1)}{p} \\cdot \\frac{S}{B}$$", 6),  # 2, p, 1, p, S, B: layout commands count nothing
        ("![a figure](plot.png) <a id='x'></a> see <https://example.org/a-b>", 1),  # only "see"
        ("| a | b |\n|---|---|", 2),
    ],
)
def test_what_a_word_is(markdown, expected):
    assert course_time.words(markdown) == expected


def test_stated_hours_must_be_stated_once():
    assert course_time.stated_hours("no time here") is None
    with pytest.raises(ValueError, match="2 times"):
        course_time.stated_hours("**Time to learn:** about 1 hour\n**Time to learn:** about 2 hours")


# ---- every notebook: its track and its stated hours ------------------------------------------------------------------


def test_every_notebook_is_counted():
    lessons = sorted(path.stem for path in (ROOT / "notebooks").glob("*.ipynb"))
    assert sorted(page for page in BY_PAGE if page.startswith("notebooks/")) == [f"notebooks/{s}" for s in lessons]
    assert sorted(page for page in BY_PAGE if page.startswith("labs/")) == [f"labs/{lab}" for lab in lab_names()]


@pytest.mark.parametrize("time", TIMES, ids=ids(TIMES))
def test_every_notebook_says_its_track(time):
    assert time.track in course_time.TRACKS, (
        f"{time.page}: its metadata course.track is {time.track!r}; set it to 'core' or 'depth' in its twin's header "
        "(course:\n  track: ...) and in the notebook's metadata"
    )


@pytest.mark.parametrize("time", TIMES, ids=ids(TIMES))
def test_the_notebook_the_student_version_and_the_twin_agree_on_the_track(time):
    twins = {twin.as_posix(): twin for twin in course_time.twins()}
    twin = next(path for path in twins.values() if course_time.page_of(path) == time.page)
    copies = [twin_of(twin)] + ([ROOT / f"{time.page}.ipynb"] if time.page.startswith("labs/") else [])
    for notebook in copies:
        track = json.loads(notebook.read_text(encoding="utf-8"))["metadata"].get("course", {}).get("track")
        assert track == time.track, (
            f"{notebook.relative_to(ROOT)} says course.track {track!r}, its twin {time.track!r}: run `make notebooks` "
            "(and `make assignments` for a lab)"
        )


STATING = [time for time in TIMES if time.page not in STATES_NO_TIME]


@pytest.mark.parametrize("time", STATING, ids=ids(STATING))
def test_each_notebook_states_its_hours_within_10_percent_of_the_rule(time):
    assert time.stated_hours is not None, f"{time.page}: no '**Time to learn:** about N hours' near its top"
    assert within(time.stated_hours, time.hours), (
        f"{time.page} states {time.stated_hours:g} hours; by the rule it takes {time.hours:.2f} hours "
        f"({time.words} words, {time.code_cells} code cells, {time.questions} exercises, {time.graded} graded): "
        "run `python -m tools.course_time --write`"
    )


# ---- the course map and the README -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "text"), [("the course map", COURSE_MAP), ("the README", README)])
def test_the_course_map_and_the_readme_give_each_notebook_its_track_and_hours(name, text):
    rows = course_time.table_rows(text)
    assert sorted(rows) == sorted(BY_PAGE), (
        f"{name}'s tables have rows with a time for {sorted(rows)}; the course has {sorted(BY_PAGE)}"
    )
    for page, row in rows.items():
        time = BY_PAGE[page]
        assert row.track == time.track, f"{name}: {page} is {row.track!r} in its table, {time.track!r} in its metadata"
        assert row.hours is not None and within(row.hours, time.hours), (
            f"{name}: {page} takes {row.hours} h in its table, {time.hours:.2f} h by the rule"
        )


def test_the_course_map_and_the_readme_state_the_same_hours():
    course_map, readme = course_time.table_rows(COURSE_MAP), course_time.table_rows(README)
    differ = {page: (course_map[page].hours, readme[page].hours) for page in course_map if page in readme}
    differ = {page: hours for page, hours in differ.items() if hours[0] != hours[1]}
    assert not differ, f"(course map, README) hours differ: {differ}"
    assert course_time.stated_totals(COURSE_MAP) == course_time.stated_totals(README)


@pytest.mark.parametrize(("name", "text"), [("the course map", COURSE_MAP), ("the README", README)])
def test_the_stated_totals_match_the_rule(name, text):
    totals = course_time.stated_totals(text)
    assert totals, f"{name} states no 'the core path takes about **N hours** and the whole course about **M hours**'"
    core, whole = course_time.total_hours(TIMES, "core"), course_time.total_hours(TIMES)
    assert within(totals[0], core) and within(totals[1], whole), (
        f"{name} states {totals[0]:g} h for the core path and {totals[1]:g} h in all; by the rule {core:.1f} h and "
        f"{whole:.1f} h"
    )


def test_the_course_map_states_the_rule_and_the_tolerance_the_tests_use():
    rule = COURSE_MAP.split("## How long each part takes", 1)[1].split("# %%", 1)[0]
    assert f"within {TOLERANCE:.0%}".replace("%", " %") in rule
    for figure in (
        f"prose at {course_time.WORDS_PER_MINUTE} words a minute",
        f"{course_time.CODE_CELL_MINUTES} minutes for each code cell",
        f"{course_time.QUESTION_MINUTES} minutes for each exercise or explore",
        f"{course_time.GRADED_MINUTES} minutes for each graded question",
    ):
        assert figure in " ".join(line.removeprefix("# ") for line in rule.splitlines()), figure


def test_the_course_map_names_what_each_depth_notebook_adds():
    section = COURSE_MAP.split("## The core path and the depth tracks", 1)[1].split("\n# | ", 1)[0]
    for time in TIMES:
        if time.track == "depth":
            link = f"{time.page.split('/')[1]}.ipynb" if time.page.startswith("notebooks/") else f"../{time.page}.ipynb"
            assert f"]({link})" in section, f"the course map's depth tracks do not say what {time.page} adds"


# ---- the limits ------------------------------------------------------------------------------------------------------


def test_the_core_path_takes_at_most_15_hours():
    core = [time for time in TIMES if time.track == "core"]
    hours = course_time.total_hours(core)
    assert hours <= CORE_LIMIT_HOURS, (
        f"the core path takes {hours:.1f} h by the rule, over {CORE_LIMIT_HOURS} h: "
        + ", ".join(f"{time.page} {time.hours:.2f} h" for time in core)
    )


def test_the_whole_course_takes_at_most_30_hours():
    hours = course_time.total_hours(TIMES)
    assert hours <= WHOLE_LIMIT_HOURS, (
        f"the whole course takes {hours:.1f} h by the rule, over {WHOLE_LIMIT_HOURS} h: "
        + ", ".join(f"{time.page} {time.hours:.2f} h" for time in sorted(TIMES, key=lambda t: -t.hours))
    )


# Issue 41, item 2: a lesson long enough to need more than 1,000 lines is two lessons, or a lesson with a depth
# section to move out (lesson 02 was 1,016 before NCCL's protocols went to lesson 07).
MAX_TWIN_LINES = 1000


@pytest.mark.parametrize("twin", course_time.twins(), ids=lambda path: path.stem)
def test_no_notebook_is_longer_than_1000_lines(twin):
    lines = len(twin.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_TWIN_LINES, (
        f"{twin.relative_to(ROOT)} has {lines} lines, over {MAX_TWIN_LINES}: split it or move a depth section out"
    )
