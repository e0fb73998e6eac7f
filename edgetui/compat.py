"""What differs between the Python versions edgetui supports (3.10 and later)."""

import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10: the same parser, from PyPI (pinned in pyproject.toml)
    import tomli as tomllib

__all__ = ["tomllib"]
