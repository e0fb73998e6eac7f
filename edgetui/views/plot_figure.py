"""A plotext figure of one's own for each chart.

``plotext.figure`` is one figure per process: the chart widget, the compare screen and the CLI's
charts all cleared and drew into it, so a chart's figure could hold another's drawing (read back by
the chart widget for its canvas corners). :func:`new_figure` makes an independent figure with
plotext's public objects (the class of ``plotext.figure``, on ``plotext.terminal``, which holds only
the terminal's size and prompt): it draws the same text as the shared one (tests/test_plot_figure.py)
and costs ~0.3 ms. Each chart widget and compare screen keeps its own; the CLI makes one a chart.
"""

from typing import Any

__all__ = ["new_figure"]


def new_figure() -> Any:
    """A new, empty plotext figure that no other chart draws into."""
    # lazy: plotext (~80 ms to import) loads with the first chart drawn, after the first paint
    import plotext as plt

    return type(plt.figure)(parent=plt.terminal)
