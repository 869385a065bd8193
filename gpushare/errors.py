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


class ConfigErrors(ConfigError):
    """Every problem found in one pass, one line each (a user fixes them all before the next run)."""

    def __init__(self, errors: Sequence[ConfigError]) -> None:
        UserError.__init__(self, "\n".join(str(error) for error in errors))
        self.errors = tuple(errors)
        self.key = errors[0].key


class Problems:
    """Collects ConfigErrors raised by independent checks, so one bad key does not hide the next."""

    def __init__(self) -> None:
        self.errors: list[ConfigError] = []

    def check(self, run: Callable[..., None], *args: Any) -> None:
        try:
            run(*args)
        except ConfigErrors as errors:
            self.errors.extend(errors.errors)
        except ConfigError as error:
            self.errors.append(error)

    def raise_any(self) -> None:
        if self.errors:
            raise ConfigErrors(self.errors)


def key_path(root: str, loc: Sequence[int | str]) -> str:
    """Render a pydantic location as `root.field[0].other`, the way users write config paths."""
    path = root
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def first_error(error: ValidationError, render_key: Callable[[tuple[int | str, ...]], str]) -> ConfigError:
    """Pydantic's first complaint as a ConfigError."""
    return _config_error(error.errors(include_url=False)[0], render_key)


def all_errors(error: ValidationError, render_key: Callable[[tuple[int | str, ...]], str]) -> ConfigErrors:
    """Every pydantic complaint, one ConfigError each."""
    return ConfigErrors([_config_error(detail, render_key) for detail in error.errors(include_url=False)])


def _config_error(detail: Any, render_key: Callable[[tuple[int | str, ...]], str]) -> ConfigError:
    message = str(detail["msg"]).removeprefix("Value error, ")
    if detail["type"] == "extra_forbidden":
        message = "unknown key (see the configuration table in README.md)"
    elif detail["type"] != "value_error":
        message = f"{message} (got {_short(detail.get('input'))})"
    return ConfigError(render_key(tuple(detail["loc"])), message)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
