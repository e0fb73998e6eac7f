"""What differs between the Python versions edgetui supports (3.11.4 and later, pyproject.toml's
requires-python): nothing today; ``tomllib`` is imported from here, as when 3.10 needed ``tomli``."""

import tomllib

__all__ = ["tomllib"]
