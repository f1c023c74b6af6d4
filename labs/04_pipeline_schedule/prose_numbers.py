"""The quantities in lab 4's prose that no output prints (CHECKED: what each is, what checks it) and check(), which
works out the explore answer by moving the lab's controls; tests/test_lesson_numbers.py runs it."""

from course_lib import units

CHECKED = {
    "100 %": "the threshold of a bubble above the ideal time, m < p − 1: check()",
    "18.8 %": "the explore answer",
    "9.38 %": "the explore answer",
    "26.25": "the explore answer: the step at v = 4 in t_F: check()",
    "5.5": "the explore answer: micro-batches held at v = 2: check()",
    "4.75": "the explore answer: micro-batches held at v = 4: check()",
    "5 %": "the example budget, max_bubble=0.05, a setting, not a result",
}


def check():
    from course_lib.widgets import pipeline_lab

    def run(**settings):  # the lab at its defaults (1F1B, p = 4, m = 8), then the controls moved as the question says
        lab = pipeline_lab()
        for name, value in settings.items():
            lab.controls[name].value = value
        r = lab.result
        return units.format_percent(r["bubble_fraction"]), r["bubble_time"], r["total_time"], r["peak_in_flight"]

    # the explore question: interleaving, v = 2 then 4
    assert run(virtual_stages=2)[0] == "18.8 %" and run(virtual_stages=2)[2:] == (28.5, 5.5)
    assert run(virtual_stages=4) == ("9.38 %", 2.25, 26.25, 4.75)
    # the bubble passes 100 % of the ideal time below m = p − 1: at p = 8, m = 6 it is 7/6, at m = 7 exactly 1
    for microbatches, above in ((6, True), (7, False)):
        lab = pipeline_lab()
        lab.controls["stages"].value, lab.controls["microbatches"].value = 8, microbatches
        assert (lab.result["bubble_fraction"] > 1) == above
