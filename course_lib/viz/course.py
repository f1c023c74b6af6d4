"""The course map: lessons in prerequisite order with the labs attached to the lesson they practise, the core path
drawn solid and the depth tracks dashed (each notebook's metadata ``course.track``: "core" or "depth")."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Mapping
from pathlib import Path

from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Patch

from .style import AXIS_COLORS, axes_or_new

__all__ = ["LESSONS", "LABS", "TRACKS", "notebook_tracks", "plot_course_map"]

TRACKS = ("core", "depth")

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
# (lab's file stem, lab title, the lesson it practises)
LABS = (
    ("01_ring_allreduce", "Lab: ring all-reduce", "02_nccl"),
    ("02_global_batch", "Lab: global batch", "03_parallelism"),
    ("03_memory_budget", "Lab: memory budget", "03_parallelism"),
    ("04_pipeline_schedule", "Lab: pipeline schedule", "03_parallelism"),
    ("05_partition_explorer", "Lab: partition explorer", "04_communication_budget"),
    ("06_serving", "Lab: serving", "10_serving"),
    ("07_sequences_and_experts", "Lab: sequences and experts", "06_sequences_and_experts"),
    ("08_measure_collectives", "Lab: measure collectives", "07_measure"),
)
# How a box is drawn on each track: the core path solid and bold, a depth track dashed and pale.
TRACK_STYLE = {
    "core": {"linestyle": "-", "linewidth": 2.2, "alpha": 1.0},
    "depth": {"linestyle": "--", "linewidth": 1.0, "alpha": 0.55},
}


def notebook_tracks(root: Path) -> dict[str, str]:
    """{file stem: ``course.track``} of every lesson (``root/notebooks/NN_*.ipynb``) and lab (the student versions
    ``root/labs/NN_*.ipynb``), read from the notebooks' metadata; ``ValueError`` naming a notebook without one.

    >>> from pathlib import Path
    >>> import course_lib
    >>> tracks = notebook_tracks(Path(course_lib.__file__).resolve().parents[1])   # the repository
    >>> tracks["01_mac"], sorted(set(tracks.values()))
    ('core', ['core', 'depth'])
    """
    tracks = {}
    for path in sorted([*root.glob("notebooks/[0-9][0-9]_*.ipynb"), *root.glob("labs/[0-9][0-9]_*.ipynb")]):
        track = json.loads(path.read_text(encoding="utf-8"))["metadata"].get("course", {}).get("track")
        if track not in TRACKS:
            raise ValueError(f"{path}: metadata course.track is {track!r}; it must be one of {TRACKS}")
        tracks[path.stem] = track
    return tracks


def plot_course_map(ax=None, tracks: Mapping[str, str] | None = None):
    """Draw the lessons as a chain (arrows: "is a prerequisite of") with their labs hanging below; with ``tracks``
    ({file stem: "core" or "depth"}, as ``notebook_tracks`` reads them) the core path solid, the depth tracks dashed.

    >>> ax = plot_course_map()
    >>> sorted(" ".join(t.get_text().split()) for t in ax.texts)[:2]   # each box's text, wrapped to fit it
    ['01 · Count the work FLOPs, intensity, roofline', '02 · Move the data collectives, α–β cost']
    >>> import matplotlib.pyplot as plt; plt.close("all")
    """
    ax = axes_or_new(ax, figsize=(13, 4.2))
    tracks = dict(tracks or {})
    unknown = {stem: track for stem, track in tracks.items() if track not in TRACKS}
    if unknown:
        raise ValueError(f"tracks must map file stems to one of {TRACKS}, got {unknown}")

    def box_style(stem: str) -> dict:
        return TRACK_STYLE[tracks[stem]] if stem in tracks else {"linestyle": "-", "linewidth": 1.5, "alpha": 1.0}

    width, height, gap = 2.4, 0.9, 0.25
    centre = {}
    for index, (stem, title, _) in enumerate(LESSONS):
        x = index * (width + gap)
        box = FancyBboxPatch(
            (x, 1.4),
            width,
            height,
            boxstyle="round,pad=0.05",
            facecolor="#E8EEF7",
            edgecolor="#4C72B0",
            **box_style(stem),
        )
        box.set_gid(stem)
        ax.add_patch(box)
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
    for stem, title, lesson in LABS:
        slot = labs_per_lesson.setdefault(lesson, [])
        slot.append((stem, title))
    for lesson, labs in labs_per_lesson.items():
        for row, (stem, title) in enumerate(labs):
            y = 0.75 - row * 0.55
            x = centre[lesson] - width / 2 + 0.15
            box = FancyBboxPatch(
                (x, y),
                width - 0.3,
                0.38,
                boxstyle="round,pad=0.04",
                facecolor="#EEF6EE",
                edgecolor=AXIS_COLORS["data"],
                **box_style(stem),
            )
            box.set_gid(stem)
            ax.add_patch(box)
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
    title = "Lessons in prerequisite order (arrows) and the labs that practise them (green)"
    if tracks:
        title += ": the core path solid, the depth tracks dashed"
        handles = [
            Patch(facecolor="white", edgecolor="#333333", label=f"{track} path" if track == "core" else "depth track",
                  **TRACK_STYLE[track])
            for track in TRACKS
        ]  # fmt: skip
        ax.legend(handles=handles, loc="upper right", fontsize=8, frameon=False)
    ax.set_title(title)
    return ax
