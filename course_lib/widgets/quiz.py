"""Self-check questions: multiple choice with immediate feedback and an explanation.

The logic (:class:`Question`, :class:`Feedback`) is plain Python and testable without a browser; the widget
(:class:`MultipleChoice`) is a thin ipywidgets layer over it: a prompt, radio buttons with no option preselected,
a *Check* button and a feedback area that is updated synchronously when the button is clicked.

>>> q = Question("Which strategy splits work inside an individual layer?",
...              ("Pipeline parallelism", "Data parallelism", "Tensor parallelism"), answer=2,
...              explanation="Tensor parallelism divides a layer's tensor computations.")
>>> q.check(2).message
"Correct. Tensor parallelism divides a layer's tensor computations."
>>> widget = MultipleChoice(q)
>>> widget.submit(0).correct
False
>>> widget
MultipleChoice(prompt='Which strategy splits work inside an individual layer?', options=3)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from numbers import Integral

import ipywidgets as widgets

__all__ = ["Question", "Feedback", "MultipleChoice", "multiple_choice", "from_card"]

# Feedback colours (text on a light background; both pass WCAG AA contrast).
_STYLES = {
    True: "color: #0f5323; background: #e6f4ea; border-left: 4px solid #1a7f37;",
    False: "color: #7a1c12; background: #fdecea; border-left: 4px solid #b42318;",
    None: "color: #333333; background: #f2f2f2; border-left: 4px solid #888888;",
}


def _text(name: str, value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    return value


def _index(name: str, value, size: int) -> int:
    if not isinstance(value, Integral) or isinstance(value, bool) or not 0 <= value < size:
        raise ValueError(f"{name} must be an integer in 0..{size - 1} (an index into options), got {value!r}")
    return int(value)


@dataclass(frozen=True)
class Feedback:
    """The verdict on one choice: ``correct`` and the message shown to the learner."""

    correct: bool
    message: str


@dataclass(frozen=True)
class Question:
    """A multiple-choice question: ``options[answer]`` is right; ``explanation`` says why.

    Bad input raises ``ValueError`` naming the parameter:

    >>> Question("Pick one", ("A", "A"), 0, "Because.")
    Traceback (most recent call last):
    ...
    ValueError: options must be distinct; 'A' appears more than once
    >>> Question("Pick one", ("A", "B"), 2, "Because.")
    Traceback (most recent call last):
    ...
    ValueError: answer must be an integer in 0..1 (an index into options), got 2
    """

    prompt: str
    options: tuple[str, ...]
    answer: int
    explanation: str

    def __post_init__(self):
        _text("prompt", self.prompt)
        if isinstance(self.options, (str, bytes)) or not isinstance(self.options, Sequence):
            raise ValueError(f"options must be a sequence of strings, got {self.options!r}")
        options = tuple(self.options)
        if len(options) < 2:
            raise ValueError(f"options must hold at least 2 choices, got {len(options)}")
        for option in options:
            if not isinstance(option, str) or not option.strip():
                raise ValueError(f"options must be non-empty strings, got {option!r}")
        seen = set()
        for option in options:
            if option.strip() in seen:
                raise ValueError(f"options must be distinct; {option!r} appears more than once")
            seen.add(option.strip())
        object.__setattr__(self, "options", options)  # a list becomes a tuple: the question stays immutable
        object.__setattr__(self, "answer", _index("answer", self.answer, len(options)))
        _text("explanation", self.explanation)

    def check(self, choice: int) -> Feedback:
        """Judge ``choice`` (an index into ``options``); a wrong choice is told the right option.

        >>> q = Question("1 MAC is how many FLOPs?", ("1", "2", "4"), 1, "A multiply and an add.")
        >>> q.check(0)
        Feedback(correct=False, message='Not quite. The right answer is “2”. A multiply and an add.')
        """
        choice = _index("choice", choice, len(self.options))
        if choice == self.answer:
            return Feedback(True, f"Correct. {self.explanation}")
        return Feedback(False, f"Not quite. The right answer is “{self.options[self.answer]}”. {self.explanation}")


class MultipleChoice(widgets.VBox):
    """The widget for a :class:`Question`: prompt, radio buttons (none preselected), *Check*, feedback.

    Its parts are attributes, so a test can drive it without a browser: ``choice`` (the RadioButtons, whose
    value is the option's index), ``button``, ``feedback`` (HTML) and ``result`` (the latest :class:`Feedback`,
    or None). Choosing another option clears the feedback until *Check* is pressed again.

    >>> widget = multiple_choice("1 MAC is how many FLOPs?", ["1", "2", "4"], 1, "A multiply and an add.")
    >>> widget.choice.value is None
    True
    >>> widget.submit(1)
    Feedback(correct=True, message='Correct. A multiply and an add.')
    >>> "Correct." in widget.feedback.value
    True
    """

    def __init__(self, question: Question, **kwargs):
        if not isinstance(question, Question):
            raise ValueError(f"question must be a Question, got {question!r}")
        self.question = question
        self.result: Feedback | None = None
        self.prompt = widgets.HTML(f"<p><b>{escape(question.prompt)}</b></p>")
        self.choice = widgets.RadioButtons(
            options=[(option, index) for index, option in enumerate(question.options)],
            value=None,
            layout=widgets.Layout(width="auto"),
        )
        self.button = widgets.Button(description="Check", tooltip="Check your answer")
        self.feedback = widgets.HTML("")
        self.feedback.add_class("course-quiz-feedback")
        self.button.on_click(self._on_check)
        self.choice.observe(self._on_choose, names="value")
        super().__init__([self.prompt, self.choice, self.button, self.feedback], **kwargs)
        self.add_class("course-quiz")

    def _show(self, verdict: bool | None, message: str):
        self.feedback.value = (
            f'<div style="{_STYLES[verdict]} padding: 0.4em 0.8em; margin-top: 0.4em;">{escape(message)}</div>'
        )

    def _on_check(self, _button=None):
        if self.choice.value is None:
            self.result = None
            self._show(None, "Choose an option, then press Check.")
            return
        self.result = self.question.check(self.choice.value)
        self._show(self.result.correct, self.result.message)

    def _on_choose(self, _change):
        self.result = None
        self.feedback.value = ""

    def submit(self, index: int) -> Feedback:
        """Select option ``index`` and press *Check*, as a learner would; return the feedback."""
        self.choice.value = _index("index", index, len(self.question.options))
        self.button.click()
        return self.result

    def __repr__(self):
        return f"MultipleChoice(prompt={self.question.prompt!r}, options={len(self.question.options)})"


def multiple_choice(prompt: str, options: Sequence[str], answer: int, explanation: str) -> MultipleChoice:
    """Build the widget for a question given by its parts (see :class:`Question`)."""
    return MultipleChoice(Question(prompt, options, answer, explanation))


def from_card(card: Mapping) -> Question:
    """Build the :class:`Question` held in a seed card's ``check`` field ({question, options, answer, explanation}).

    >>> card = {"check": {"question": "Which split cuts one layer?", "options": ["Pipeline", "Tensor"],
    ...                   "answer": 1, "explanation": "Tensor parallelism partitions a layer's matrices."}}
    >>> from_card(card).options[from_card(card).answer]
    'Tensor'
    """
    check = card.get("check") if isinstance(card, Mapping) else None
    if not isinstance(check, Mapping):
        raise ValueError("card must be a seed card with a 'check' field {question, options, answer, explanation}")
    missing = [key for key in ("question", "options", "answer", "explanation") if key not in check]
    if missing:
        raise ValueError(f"card['check'] lacks {', '.join(missing)}")
    return Question(check["question"], check["options"], check["answer"], check["explanation"])
