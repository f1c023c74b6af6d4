"""course_lib.viz.global_batch, lab 2's live figure: a live figure updated twice matches one built at once."""

import matplotlib

matplotlib.use("Agg")

from lab_checks import assert_updates_match_a_fresh_build
from matplotlib.figure import Figure

from course_lib import parallelism
from course_lib.viz.global_batch import GlobalBatchFigure


def _batch_figure():
    figure = Figure(figsize=(9, 4), dpi=72)
    return figure, GlobalBatchFigure(figure.add_axes((0.0, 0.0, 0.6, 1.0)), figure.add_axes((0.66, 0.2, 0.32, 0.68)))


def _batch(b, acc, d, t, p, seq_len=2048):
    def draw(live):
        live.update(parallelism.global_batch_report(b, acc, d, seq_len, tensor_parallel=t, pipeline_parallel=p))

    return draw


def test_batch_figure_updated_twice_draws_what_a_fresh_one_draws():
    assert_updates_match_a_fresh_build(_batch_figure, _batch(8, 16, 64, 1, 1), _batch(2, 3, 5, 4, 2, 4096))
    assert_updates_match_a_fresh_build(_batch_figure, _batch(64, 128, 1024, 64, 64), _batch(1, 1, 1, 1, 1))
