"""Replay widgets. They render data handed to them and never do I/O."""

from .chart import ChartData, ScoreChart, chart_data
from .detail import EventDetail, render_detail
from .event_list import EventList
from .header import RunHeader, header_text

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
