"""The self-check widget: right/wrong feedback with the explanation, the widget flow in-process, bad input."""

import json
from pathlib import Path

import pytest

from course_lib.quiz import Feedback, MultipleChoice, Question, from_card, multiple_choice

SEEDS = Path(__file__).resolve().parents[2] / "shared" / "seeds"

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


def seed_cards():
    if not SEEDS.is_dir():
        pytest.skip(f"the seed cards are not here: {SEEDS} does not exist (CI checks out ../shared next to the repo)")
    cards = sorted(SEEDS.glob("*.json"))
    assert cards, f"no seed cards in {SEEDS}"
    return cards


def test_from_card_on_every_seed_card():
    for path in seed_cards():
        card = json.loads(path.read_text(encoding="utf-8"))
        check = card["check"]
        question = from_card(card)
        assert question.prompt == check["question"], path.name
        assert question.options == tuple(check["options"]), path.name
        assert question.options[question.answer] == check["options"][check["answer"]], path.name
        assert question.check(check["answer"]).correct, path.name
        wrong = next(i for i in range(len(check["options"])) if i != check["answer"])
        assert not question.check(wrong).correct, path.name
        assert question.check(wrong).message.endswith(check["explanation"]), path.name
        assert MultipleChoice(question).submit(check["answer"]).correct, path.name
