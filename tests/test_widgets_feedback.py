"""course_lib.widgets.feedback: otter's real results shown with ✔/✘, glyphs DejaVu Sans has (issue 15)."""

import warnings
from pathlib import Path
from types import SimpleNamespace

import matplotlib
from fontTools.ttLib import TTFont
from IPython.core.formatters import DisplayFormatter

from course_lib.widgets.feedback import MARKS, readable_feedback

TESTS = """
from otter.test_files import test_case

OK_FORMAT = False
name = "q1"
points = 1

@test_case(points=None, hidden=False)
def test_q1_value(answer):
    assert answer == 2, "expected 2"
"""


def otter_result(answer):
    with warnings.catch_warnings():  # otter's imports trip a traitlets DeprecationWarning that is not ours to fix
        warnings.simplefilter("ignore", DeprecationWarning)
        from otter.test_files import ExceptionTestFile

    test_file = ExceptionTestFile.from_string(TESTS, path="q1.py")
    test_file.run({"answer": answer})
    return test_file


def test_otter_results_show_plain_marks():
    shell = SimpleNamespace(display_formatter=DisplayFormatter())
    failed, passed = otter_result(3), otter_result(2)
    before = shell.display_formatter.format(failed)[0]["text/html"]
    assert "❌ Test case failed" in before  # what otter shows by itself
    readable_feedback(shell)
    html = shell.display_formatter.format(failed)[0]["text/html"]
    assert "✘ Test case failed" in html and "expected 2" in html and not any(e in html for e in MARKS)
    html = shell.display_formatter.format(passed)[0]["text/html"]
    assert "q1</pre></strong> passed! ✔" in html and not any(e in html for e in MARKS)


def test_the_marks_are_in_dejavu_sans_and_the_emoji_are_not():
    font = TTFont(Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf")
    glyphs = font.getBestCmap()
    assert all(ord(mark) in glyphs for mark in set(MARKS.values()))
    assert not any(ord(emoji) in glyphs for emoji in MARKS)  # why otter's own marks showed as boxes


def test_outside_ipython_nothing_to_do():
    readable_feedback()  # pytest runs no IPython shell: no error, nothing registered
