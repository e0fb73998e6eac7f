"""Typed reads of a decoded JSON object's fields: the value when it has the expected type, else
an empty one (or None). The parsers read untrusted JSON, where any field may hold anything."""

from __future__ import annotations

from typing import Any, Mapping, Optional


def dict_at(obj: Mapping[str, Any], key: str) -> dict[str, Any]:
    """``obj[key]`` when it is an object, else ``{}``."""
    v = obj.get(key)
    return v if isinstance(v, dict) else {}


def list_at(obj: Mapping[str, Any], key: str) -> list[Any]:
    """``obj[key]`` when it is an array, else ``[]``."""
    v = obj.get(key)
    return v if isinstance(v, list) else []


def str_at(obj: Mapping[str, Any], key: str) -> Optional[str]:
    """``obj[key]`` when it is a string, else ``None``."""
    v = obj.get(key)
    return v if isinstance(v, str) else None
