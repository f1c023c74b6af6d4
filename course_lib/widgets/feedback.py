"""Otter's feedback in glyphs every font has.

``grader.check("q1")`` shows otter's result as HTML that marks each test case "✅ Test case passed" or "❌ Test case
failed" and a passed question with a random emoji ("passed! 🎉"). Those are emoji code points (U+2705, U+274C, ...)
that the DejaVu fonts, often the only ones on a Linux machine or a container, do not have: the browser then draws a
missing-glyph box before "Test case failed" (issue 15). ``readable_feedback()`` asks IPython to show otter's
results with the dingbats ✔ (U+2714) and ✘ (U+2718) instead, which DejaVu Sans has; the text and the grading are
unchanged.

>>> plain_marks("<pre>❌ Test case failed</pre><p>q1 passed! 🎉</p>")
'<pre>✘ Test case failed</pre><p>q1 passed! ✔</p>'
"""

from __future__ import annotations

__all__ = ["MARKS", "plain_marks", "readable_feedback"]

# otter-grader 7: otter/test_files/exception_test.py and ok_test.py ("✅ Test case passed", "❌ Test case failed"),
# abstract_test.py (the emoji after "passed!").
_PASSED_EMOJI = ("🍀", "🎉", "🌈", "🙌", "🚀", "🌟", "✨", "💯")
MARKS = {"✅": "✔", "❌": "✘", **dict.fromkeys(_PASSED_EMOJI, "✔")}
_OTTER_TEST_FILE = ("otter.test_files.abstract_test", "TestFile")  # the class of what grader.check returns


def plain_marks(html: str) -> str:
    """``html`` with otter's emoji marks replaced by ✔ and ✘ (see ``MARKS``)."""
    for emoji, mark in MARKS.items():
        html = html.replace(emoji, mark)
    return html


def readable_feedback(shell=None) -> None:
    """Show otter's results (``grader.check``) with ``plain_marks`` in this IPython ``shell`` (default: the running
    one; outside IPython there is nothing to show, and nothing happens). Registered by the class's module and name,
    so otter is not imported here.

    >>> from types import SimpleNamespace
    >>> from IPython.core.formatters import DisplayFormatter
    >>> shell = SimpleNamespace(display_formatter=DisplayFormatter())   # a stand-in for the running shell
    >>> readable_feedback(shell)
    >>> shell.display_formatter.formatters["text/html"].deferred_printers[_OTTER_TEST_FILE].__name__
    '_plain_otter_html'
    """
    if shell is None:
        from IPython import get_ipython

        shell = get_ipython()
    if shell is not None:
        shell.display_formatter.formatters["text/html"].for_type_by_name(*_OTTER_TEST_FILE, _plain_otter_html)


def _plain_otter_html(result) -> str:
    return plain_marks(result._repr_html_())  # IPython's display protocol, which otter's TestFile implements
