"""Widgets of the replay and live screens (header, chart, event list, detail, runs table). They
render data handed to them and never do I/O."""

from edgetui.views.widgets.chart import ChartData, ScoreChart, chart_data
from edgetui.views.widgets.detail import EventDetail, render_detail
from edgetui.views.widgets.event_list import EventList
from edgetui.views.widgets.header import RunHeader, header_text

__all__ = [
    "ChartData",
    "EventDetail",
    "EventList",
    "RunHeader",
    "ScoreChart",
    "chart_data",
    "header_text",
    "render_detail",
]
