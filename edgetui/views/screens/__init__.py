"""Textual screens of edgetui: the run picker and the replay screen."""

from edgetui.views.screens.picker import PickerScreen
from edgetui.views.screens.replay import HelpScreen, ReplayScreen

__all__ = ["HelpScreen", "PickerScreen", "ReplayScreen"]
