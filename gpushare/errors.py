"""User-facing errors: one line naming the key, the bad value and what is allowed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic import ValidationError

from gpushare.wording import Wording

# Every command's exit code for input the user got wrong (a UserError): nothing written. 1 means a mandatory policy
# violation and nothing else.
EXIT_BAD_INPUT = 2


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


class AtKeys(ValueError):
    """Problems a validator finds below the value it validates, each at its own key (a list index, a field):
    raised inside pydantic validators so every line names the exact key, e.g. `teams[2].name`, and one
    validator can report several problems. `all_errors` unpacks it."""

    def __init__(self, problems: Sequence[tuple[tuple[int | str, ...], str]]) -> None:
        super().__init__("; ".join(message for _, message in problems))
        self.problems = tuple(problems)


def raise_at(problems: Sequence[tuple[tuple[int | str, ...], str]]) -> None:
    """Raise AtKeys when a validator found anything."""
    if problems:
        raise AtKeys(problems)


def repeats(values: Sequence[Any], what: str = "") -> list[tuple[tuple[int | str, ...], str]]:
    """Every repeat in a list at its own index, naming where the value came first."""
    found: list[tuple[tuple[int | str, ...], str]] = []
    for index, value in enumerate(values):
        if value in values[:index]:
            found.append(((index,), f"{what}{value!r} is listed twice (first at [{values.index(value)}])"))
    return found


def key_path(root: str, loc: Sequence[int | str]) -> str:
    """Render a pydantic location as `root.field[0].other`, the way users write config paths."""
    path = root
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def first_error(
    error: ValidationError, render_key: Callable[[tuple[int | str, ...]], str], wording: Wording | None = None
) -> ConfigError:
    """Pydantic's first complaint as a ConfigError."""
    return all_errors(error, render_key, wording).errors[0]


def all_errors(
    error: ValidationError, render_key: Callable[[tuple[int | str, ...]], str], wording: Wording | None = None
) -> ConfigErrors:
    """Every problem pydantic found, one line per key, in the project's words (`wording`, told the model the
    locations start from, knows each key's unit, keys and naming rule). Pydantic can report one bad value more than
    once: a list whose items failed also fails its length check "after validation", so an error above a key that
    has its own is dropped; what is left is merged per key."""
    wording = wording or Wording()
    details = error.errors(include_url=False)
    # A misspelt key is one mistake: the key it meant is not also "required".
    meant = {
        (*detail["loc"][:-1], key)
        for detail in details
        if detail["type"] == "extra_forbidden" and (key := wording.meant(tuple(detail["loc"]))) is not None
    }
    details = [detail for detail in details if not (detail["type"] == "missing" and tuple(detail["loc"]) in meant)]
    found = [problem for detail in details for problem in _problems(detail, wording)]
    kept = [(loc, message) for loc, message in found if not any(_below(other, loc) for other, _ in found)]
    lines: dict[str, list[str]] = {}
    for loc, message in kept:
        messages = lines.setdefault(render_key(loc), [])
        if message not in messages:
            messages.append(message)
    return ConfigErrors([ConfigError(key, "; ".join(messages)) for key, messages in lines.items()])


def _below(loc: tuple[int | str, ...], other: tuple[int | str, ...]) -> bool:
    """Whether `loc` is a key strictly inside `other`."""
    return len(loc) > len(other) and loc[: len(other)] == other


def _problems(detail: Any, wording: Wording) -> list[tuple[tuple[int | str, ...], str]]:
    loc = tuple(detail["loc"])
    cause = (detail.get("ctx") or {}).get("error")
    if isinstance(cause, AtKeys):
        return [(loc + sub, message) for sub, message in cause.problems]
    return [(loc, wording.message(detail))]
