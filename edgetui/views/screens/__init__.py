"""Textual screens of edgetui: the run picker, the replay and live run screens, the runs screen,
moments, why, annotations, compare, leaderboard, hosts and confirmations. They read data
through :mod:`edgetui.store.queries`'s read side and the analysis modules, and run no SQL themselves.
"""

from edgetui.views.screens.picker import PickerScreen
from edgetui.views.screens.replay import HelpScreen, ReplayScreen

__all__ = ["HelpScreen", "PickerScreen", "ReplayScreen"]
