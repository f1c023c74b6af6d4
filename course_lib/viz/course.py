"""The course map: lessons in prerequisite order with the labs attached to the lesson they practise."""

from __future__ import annotations

import textwrap

from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from .style import AXIS_COLORS, axes_or_new

__all__ = ["LESSONS", "LABS", "plot_course_map"]

# (file stem, title, prerequisites)
LESSONS = (
    ("01_mac", "01 · Count the work\nFLOPs, intensity, roofline", ()),
    ("02_nccl", "02 · Move the data\ncollectives, α–β cost", ("01_mac",)),
    ("03_parallelism", "03 · Split the work\nDP, TP, PP, ZeRO; memory", ("01_mac", "02_nccl")),
    (
        "04_communication_budget",
        "04 · Budget the bytes\nexposed time, step time",
        ("01_mac", "02_nccl", "03_parallelism"),
    ),
    (
        "05_plan_search",
        "05 · Search for a plan\nrank every plan, why each loses",
        ("03_parallelism", "04_communication_budget"),
    ),
    (
        "06_sequences_and_experts",
        "06 · Long sequences, many experts\ncontext, experts, zero bubble",
        ("03_parallelism", "04_communication_budget", "05_plan_search"),
    ),
    (
        "07_measure",
        "07 · Measure it\nMPI runs, fitted α and B",
        ("02_nccl", "04_communication_budget", "05_plan_search"),
    ),
    (
        "08_model_meets_measurements",
        "08 · Check the model\n1,758 measured runs",
        ("04_communication_budget", "05_plan_search", "07_measure"),
    ),
    (
        "09_capstone",
        "09 · Plan a real run\n70B on 64 H100s",
        ("04_communication_budget", "05_plan_search", "07_measure", "08_model_meets_measurements"),
    ),
    ("10_serving", "10 · Serve a model\nprefill, decode, KV cache", ("01_mac", "02_nccl", "04_communication_budget")),
)
# (lab title, the lesson it practises)
LABS = (
    ("Lab: ring all-reduce", "02_nccl"),
    ("Lab: global batch", "03_parallelism"),
    ("Lab: memory budget", "03_parallelism"),
    ("Lab: pipeline schedule", "03_parallelism"),
    ("Lab: partition explorer", "04_communication_budget"),
    ("Lab: serving", "10_serving"),
    ("Lab: sequences and experts", "06_sequences_and_experts"),
    ("Lab: measure collectives", "07_measure"),
)


def plot_course_map(ax=None):
    """Draw the lessons as a chain (arrows: "is a prerequisite of") with their labs hanging below.

    >>> ax = plot_course_map()
    >>> sorted(" ".join(t.get_text().split()) for t in ax.texts)[:2]   # each box's text, wrapped to fit it
    ['01 · Count the work FLOPs, intensity, roofline', '02 · Move the data collectives, α–β cost']
    >>> import matplotlib.pyplot as plt; plt.close("all")
    """
    ax = axes_or_new(ax, figsize=(13, 4.2))
    width, height, gap = 2.4, 0.9, 0.25
    centre = {}
    for index, (stem, title, _) in enumerate(LESSONS):
        x = index * (width + gap)
        ax.add_patch(
            FancyBboxPatch(
                (x, 1.4),
                width,
                height,
                boxstyle="round,pad=0.05",
                facecolor="#E8EEF7",
                edgecolor="#4C72B0",
                linewidth=1.5,
            )
        )
        # Heading and subtitle wrap so that a box stays readable however many lessons share the figure's width.
        heading, *subtitle = title.splitlines()
        lines = textwrap.wrap(heading, 16, break_on_hyphens=False)
        text = "\n".join([*lines, *textwrap.wrap(" ".join(subtitle), 16, break_on_hyphens=False)])
        ax.text(x + width / 2, 1.4 + height / 2, text, ha="center", va="center", fontsize=8)
        centre[stem] = x + width / 2
    for stem, _, prerequisites in LESSONS:
        if prerequisites:  # draw only the direct chain; the later lessons also build on everything before
            source = prerequisites[-1]
            if centre[stem] - centre[source] < 2 * width:  # neighbours: side to side
                ends, style = ((centre[source] + width / 2 + 0.03, 1.85), (centre[stem] - width / 2 - 0.03, 1.85)), None
            else:  # over the lessons between, top to top, so that the arrow crosses no box; a longer arrow bends
                # less, so that every arc peaks at the same height, inside the axes
                bend = 0.25 * min(1.0, 2 * (width + gap) / (centre[stem] - centre[source]))
                ends, style = ((centre[source], 2.33), (centre[stem], 2.33)), f"arc3,rad=-{bend:.3f}"
            ax.add_patch(
                FancyArrowPatch(
                    *ends, arrowstyle="-|>", mutation_scale=14, color="#333333", connectionstyle=style or "arc3"
                )
            )
    labs_per_lesson = {}
    for title, lesson in LABS:
        slot = labs_per_lesson.setdefault(lesson, [])
        slot.append(title)
    for lesson, titles in labs_per_lesson.items():
        for row, title in enumerate(titles):
            y = 0.75 - row * 0.55
            x = centre[lesson] - width / 2 + 0.15
            ax.add_patch(
                FancyBboxPatch(
                    (x, y),
                    width - 0.3,
                    0.38,
                    boxstyle="round,pad=0.04",
                    facecolor="#EEF6EE",
                    edgecolor=AXIS_COLORS["data"],
                    linewidth=1.2,
                )
            )
            ax.text(
                centre[lesson],
                y + 0.19,
                "\n".join(textwrap.wrap(title, 16, break_on_hyphens=False)),
                ha="center",
                va="center",
                fontsize=9,
            )
        ax.plot(
            [centre[lesson], centre[lesson]],
            [1.4, 0.75 + 0.38],
            color=AXIS_COLORS["data"],
            linewidth=1.2,
            linestyle=":",
        )
    ax.set_xlim(-0.2, len(LESSONS) * (width + gap) - gap + 0.2)
    ax.set_ylim(-0.5, 2.9)
    ax.set_axis_off()
    ax.set_title("Lessons in prerequisite order (arrows) and the labs that practise them (green)")
    return ax
