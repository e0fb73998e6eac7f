"""Each chart with its own plotext figure (edgetui/views/plot_figure.py), not plotext's one shared figure."""

import plotext as plt

from edgetui.cli.analysis_commands import plot_fits
from edgetui.views.plot_figure import new_figure


def _draw(f, ys) -> str:
    f.clear()
    f.theme("simple")
    f.plot_size(40, 10)
    f.draw(f.signal(list(range(len(ys))), ys, marker=plt.marker("braille", pixel=(33, "default"))))
    return f.build().string()


def test_a_new_figure_draws_as_the_shared_one_and_alone():
    a, b = new_figure(), new_figure()
    assert a is not b and a is not plt.figure
    up = _draw(a, [1, 2, 3, 4])
    assert up == _draw(plt.figure, [1, 2, 3, 4])  # the same picture as plotext's own figure
    down = _draw(b, [4, 3, 2, 1])
    assert down != up and a.build().string() == up  # drawing b left a's drawing alone


def test_a_cli_chart_leaves_another_charts_figure_alone():
    other = _draw(plt.figure, [1, 2, 3, 4])  # a chart drawn in plotext's shared figure
    text = plot_fits([], 60, 15)  # the CLI's fit chart
    assert text.strip()
    assert plt.figure.build().string() == other  # before: the CLI cleared and redrew the shared figure
