"""The price table: USD per million input, output, cache-read and cache-write tokens, per model (no Textual)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from edgetui.parsers.base import read_regular
from edgetui.record.changed_runs import changed_runs, signature_salt  # noqa: F401  (signature_salt: live/dormant.py)

import platformdirs


# ---------------------------------------------------------------------------- prices


def load_price_file(path: Optional[Path] = None) -> dict[str, dict[str, float]]:
    """Price table: ``path``, else ``<user config dir>/edgetui/prices.json``, else the bundled one."""

    candidates = [path] if path else [Path(platformdirs.user_config_dir("edgetui")) / "prices.json"]
    candidates.append(Path(__file__).resolve().parent.parent / "prices.json")  # edgetui/prices.json (package data)
    for c in candidates:
        if c and c.exists():
            try:
                data = json.loads(read_regular(c).decode("utf-8"))
                if not isinstance(data, dict) or not all(
                    isinstance(v, dict) and all(isinstance(x, (int, float)) for x in v.values())
                    for k, v in data.items()
                    if not k.startswith("_")
                ):
                    raise ValueError(
                        'expected {"model-pattern%": {"input": USD, "output": USD, '
                        '"cache_read": USD, "cache_write": USD}, ...} (USD per million tokens)'
                    )
            except (ValueError, UnicodeDecodeError) as e:
                raise ValueError(f"price table {c}: {' '.join(str(e).split())[:200]}") from None
            return {k: v for k, v in data.items() if not k.startswith("_")}
    return {}
