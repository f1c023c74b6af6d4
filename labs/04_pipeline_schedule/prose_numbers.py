"""The quantities in lab 4's prose that no output prints (CHECKED: what each is, what checks it) and check(), which
works out the explore answers by moving the lab's controls; tests/test_lesson_numbers.py runs it."""

from course_lib import units

CHECKED = {
    "100 %": "explore 4's threshold (a bubble above the ideal time), not a result",
    "75 %": "explore 1",
    "18.8 %": "explore 1 and 3",
    "9.38 %": "explore 3",
    "175 %": "explore 4",
    "63.6 %": "explore 4",
    "23.4 %": "explore 5",
    "5.86 %": "explore 5",
    "16": "explore 1's micro-batches and explore 5's stages, settings, not results",
    "12": "explore 4: each device's work, 12 t_f (4 micro-batches × 3 t_f): check()",
    "21": "explore 4: the idle time, 21 t_f ((p − 1) × 3 t_f at p = 8): check()",
    "45": "explore 5: 1F1B's bubble in t_f: check()",
    "237": "explore 5: 1F1B's step in t_f: check()",
    "11.25": "explore 5: the interleaved bubble in t_f: check()",
    "203.25": "explore 5: the interleaved step in t_f: check()",
    "19.75": "explore 5: the interleaved micro-batches held: check()",
    "26.25": "explore 3: the step at v = 4 in t_f: check()",
    "5.5": "explore 3: micro-batches held at v = 2: check()",
    "4.75": "explore 3: micro-batches held at v = 4: check()",
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

    # 1: more micro-batches, the same 9 t_F of idle time
    assert run(microbatches=4)[:2] == ("75 %", 9.0) and run(microbatches=16)[:2] == ("18.8 %", 9.0)
    # 3: interleaving, v = 2 then 4
    assert run(virtual_stages=2)[0] == "18.8 %" and run(virtual_stages=2)[2:] == (28.5, 5.5)
    assert run(virtual_stages=4) == ("9.38 %", 2.25, 26.25, 4.75)
    # 4: p = 8, m = 4, a bubble above 100 %
    lab = pipeline_lab()
    lab.controls["stages"].value, lab.controls["microbatches"].value = 8, 4
    assert units.format_percent(lab.result["bubble_fraction"]) == "175 %"
    assert units.format_percent(lab.result["bubble_share_of_step"]) == "63.6 %" and lab.result["total_time"] == 33.0
    assert lab.result["bubble_time"] == 21.0 and lab.result["total_time"] - lab.result["bubble_time"] == 12.0
    # 5: the largest pipeline, 1F1B then v = 4
    assert run(stages=16, microbatches=64) == ("23.4 %", 45.0, 237.0, 16.0)
    assert run(stages=16, microbatches=64, virtual_stages=4) == ("5.86 %", 11.25, 203.25, 19.75)
