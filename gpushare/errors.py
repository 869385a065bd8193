"""User-facing errors: one line naming the key, the bad value and what is allowed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic import ValidationError


class UserError(Exception):
    """A mistake in input the user controls (config, catalog, plan file); shown without a traceback."""


class ConfigError(UserError):
    """Bad stack configuration. The message starts with the full config key path."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}" if key else message)
        self.key = key


def key_path(root: str, loc: Sequence[int | str]) -> str:
    """Render a pydantic location as `root.field[0].other`, the way users write config paths."""
    path = root
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def first_error(error: ValidationError, render_key: Callable[[tuple[int | str, ...]], str]) -> ConfigError:
    """Turn pydantic's first complaint into a ConfigError; one error at a time keeps the line short."""
    detail = error.errors(include_url=False)[0]
    message = str(detail["msg"]).removeprefix("Value error, ")
    if detail["type"] == "extra_forbidden":
        message = "unknown key (see the configuration table in README.md)"
    elif detail["type"] != "value_error":
        message = f"{message} (got {_short(detail.get('input'))})"
    return ConfigError(render_key(tuple(detail["loc"])), message)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
