"""Textual screens of edgetui: the run picker and the replay screen."""

from .picker import PickerScreen
from .replay import HelpScreen, ReplayScreen

__all__ = ["HelpScreen", "PickerScreen", "ReplayScreen"]
