"""course_lib.widgets.quiz, the self-check widget: right/wrong feedback with the explanation, the widget flow
in-process, bad input, and every self-check question the lessons ask."""

import ast
from pathlib import Path

import pytest

from course_lib.widgets.quiz import Feedback, MultipleChoice, Question, from_card, multiple_choice

# The lessons' py:percent twins (jupytext.toml pairs notebooks/X.ipynb with notebooks_py/X.py).
LESSON_SOURCES = sorted((Path(__file__).resolve().parents[1] / "notebooks_py").glob("[0-9][0-9]_*.py"))

# The `check` field of the course's two seed cards, "parallelism" and "parallelism-communication-budget" (the
# course brief's cards; copied verbatim, curly apostrophe included): lessons 03 and 04 ask these two questions.
SEED_CARDS = {
    "parallelism": {
        "check": {
            "question": "Which strategy splits work inside an individual layer?",
            "options": ["Pipeline parallelism only", "Data replication only", "Tensor parallelism"],
            "answer": 2,
            "explanation": "Tensor parallelism divides a layer’s tensor computations; pipeline parallelism instead "
            "partitions groups of layers.",
        }
    },
    "parallelism-communication-budget": {
        "check": {
            "question": "Which partition commonly splits a single matrix operation across devices?",
            "options": ["Tensor parallelism", "Only dataset shuffling", "Recovery checkpoint compression"],
            "answer": 0,
            "explanation": "Tensor parallelism partitions operator dimensions and requires communication to assemble "
            "or combine the resulting values.",
        }
    },
}

MAC = Question("A multiply-accumulate is how many FLOPs?", ("1", "2", "4"), 1, "One multiply and one add.")


def test_right_choice_says_correct_and_explains():
    assert MAC.check(1) == Feedback(True, "Correct. One multiply and one add.")


@pytest.mark.parametrize("wrong", [0, 2])
def test_wrong_choice_names_the_right_option_and_explains(wrong):
    feedback = MAC.check(wrong)
    assert not feedback.correct
    assert feedback.message.startswith("Not quite.")
    assert "“2”" in feedback.message and "“1”" not in feedback.message and "“4”" not in feedback.message
    assert feedback.message.endswith("One multiply and one add.")


def test_options_list_becomes_a_tuple_and_question_is_immutable():
    question = Question("Pick", ["a", "b"], 0, "Because.")
    assert question.options == ("a", "b")
    with pytest.raises(AttributeError):
        question.answer = 1  # type: ignore[misc]


@pytest.mark.parametrize(
    "arguments, parameter",
    [
        (("", ("a", "b"), 0, "x"), "prompt"),
        (("p", ("a",), 0, "x"), "options"),
        (("p", (), 0, "x"), "options"),
        (("p", "ab", 0, "x"), "options"),
        (("p", ("a", "a"), 0, "x"), "options"),
        (("p", ("a", "a "), 0, "x"), "options"),
        (("p", ("a", ""), 0, "x"), "options"),
        (("p", ("a", 3), 0, "x"), "options"),
        (("p", ("a", "b"), 2, "x"), "answer"),
        (("p", ("a", "b"), -1, "x"), "answer"),
        (("p", ("a", "b"), 1.0, "x"), "answer"),
        (("p", ("a", "b"), True, "x"), "answer"),
        (("p", ("a", "b"), 0, ""), "explanation"),
    ],
)
def test_bad_question_raises_naming_the_parameter(arguments, parameter):
    with pytest.raises(ValueError, match=f"^{parameter} "):
        Question(*arguments)


@pytest.mark.parametrize("choice", [3, -1, None, "1", 1.0])
def test_bad_choice_raises(choice):
    with pytest.raises(ValueError, match="^choice must be an integer in 0..2"):
        MAC.check(choice)


def test_widget_starts_with_no_option_selected_and_empty_feedback():
    widget = MultipleChoice(MAC)
    assert widget.choice.value is None and widget.choice.index is None
    assert widget.choice.options == (("1", 0), ("2", 1), ("4", 2))
    assert widget.feedback.value == "" and widget.result is None
    assert widget.button.description == "Check"
    assert widget.children == (widget.prompt, widget.choice, widget.button, widget.feedback)
    assert MAC.prompt in widget.prompt.value


def test_widget_click_shows_feedback_synchronously():
    widget = MultipleChoice(MAC)
    widget.choice.value = 2
    widget.button.click()
    assert widget.result == MAC.check(2)
    assert "Not quite." in widget.feedback.value and "One multiply and one add." in widget.feedback.value
    assert "#b42318" in widget.feedback.value  # red

    widget.choice.value = 1  # a new choice clears the stale verdict
    assert widget.feedback.value == "" and widget.result is None
    widget.button.click()
    assert "Correct." in widget.feedback.value and "#1a7f37" in widget.feedback.value  # green


def test_widget_submit_selects_and_checks():
    widget = multiple_choice(MAC.prompt, MAC.options, MAC.answer, MAC.explanation)
    assert widget.question == MAC
    assert widget.submit(1).correct and widget.choice.value == 1
    assert not widget.submit(0).correct and widget.choice.label == "1"
    with pytest.raises(ValueError, match="^index "):
        widget.submit(3)


def test_widget_check_without_a_choice_asks_for_one():
    widget = MultipleChoice(MAC)
    widget.button.click()
    assert widget.result is None and "Choose an option" in widget.feedback.value


def test_widget_escapes_html():
    widget = multiple_choice("Is <b> a tag?", ["yes & no", "no"], 0, "It is <b>.")
    assert "&lt;b&gt;" in widget.prompt.value
    widget.submit(0)
    assert "&lt;b&gt;" in widget.feedback.value and "<b>." not in widget.feedback.value


def test_widget_repr_is_deterministic():
    first, second = MultipleChoice(MAC), MultipleChoice(MAC)
    assert repr(first) == repr(second) == "MultipleChoice(prompt='A multiply-accumulate is how many FLOPs?', options=3)"
    assert "0x" not in repr(first)
    assert first._repr_mimebundle_()["text/plain"] == repr(first)


def test_widget_needs_a_question():
    with pytest.raises(ValueError, match="^question must be a Question"):
        MultipleChoice({"question": "x"})


def test_from_card_rejects_a_card_without_a_check():
    with pytest.raises(ValueError, match="'check' field"):
        from_card({"description": "no check here"})
    with pytest.raises(ValueError, match="lacks explanation"):
        from_card({"check": {"question": "q", "options": ["a", "b"], "answer": 0}})


def lesson_questions():
    """(lesson, line, keyword arguments) of every ``quiz.Question(...)`` call in the lessons' twins, read without
    running the lessons (each argument is a literal)."""
    found = []
    for path in LESSON_SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and ast.unparse(node.func) in ("quiz.Question", "Question"):
                assert not node.args, f"{path.name}:{node.lineno}: pass Question's fields by keyword"
                fields = {keyword.arg: ast.literal_eval(keyword.value) for keyword in node.keywords}
                found.append((path.stem, node.lineno, fields))
    return found


LESSON_QUESTIONS = lesson_questions()


def test_the_lessons_ask_self_check_questions():
    lessons = {lesson for lesson, _, _ in LESSON_QUESTIONS}
    every_lesson = {path.stem for path in LESSON_SOURCES if not path.stem.startswith("00_")}  # 00 is the course map
    assert lessons == every_lesson and len(lessons) >= 5, lessons
    written = sum(path.read_text(encoding="utf-8").count("quiz.Question(") for path in LESSON_SOURCES)
    assert len(LESSON_QUESTIONS) == written >= 4, "a lesson's Question is not a call with literal keyword arguments"


@pytest.mark.parametrize(
    "fields", [pytest.param(fields, id=f"{lesson}:{line}") for lesson, line, fields in LESSON_QUESTIONS]
)
def test_every_lesson_question_is_valid_and_judged(fields):
    question = Question(**fields)  # raises ValueError naming the field if the lesson's question is malformed
    widget = MultipleChoice(question)
    assert widget.submit(question.answer) == Feedback(True, f"Correct. {question.explanation}")
    for wrong in set(range(len(question.options))) - {question.answer}:
        feedback = widget.submit(wrong)
        right = question.options[question.answer]
        assert feedback == Feedback(False, f"Not quite. The right answer is “{right}”. {question.explanation}")


@pytest.mark.parametrize("name", SEED_CARDS)
def test_from_card_builds_the_seed_cards_check_and_a_lesson_asks_it(name):
    check = SEED_CARDS[name]["check"]
    question = from_card(SEED_CARDS[name])
    assert question == Question(check["question"], tuple(check["options"]), check["answer"], check["explanation"])
    assert question.check(check["answer"]).correct
    asked = [Question(**fields) for _, _, fields in LESSON_QUESTIONS]
    # The prompt, the right answer and the explanation word for word; the wrong options may be the course's own, so
    # that each is a plausible mistake (issue 15: "Only dataset shuffling" tests nothing).
    same = [
        q
        for q in asked
        if (q.prompt, q.options[q.answer], q.explanation)
        == (question.prompt, question.options[question.answer], question.explanation)
    ]
    assert same, f"no lesson asks the {name!r} card's check question word for word"
    weak = {"Only dataset shuffling", "Recovery checkpoint compression"}
    assert not any(weak & set(q.options) for q in same), "a distractor that is no plausible mistake"
