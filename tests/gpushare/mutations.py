"""Changes to a shipped stack file that tests make, and what every refused one must come with: one line per problem,
naming the key."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from gpushare.errors import ConfigError
from gpushare.loader import load_stack_config
from tests.conftest import PLAN_DATE, raw_stack

Mutation = Callable[[dict[str, Any]], None]


def set_key(path: str, value: Any) -> Mutation:
    """Mutation setting `gpushare:pools.0.maxGpus`-style paths (numbers index lists)."""

    def apply(raw: dict[str, Any]) -> None:
        key, *steps = path.split(".")
        target: Any = raw[key] if steps else raw
        for step in steps[:-1]:
            target = target[int(step)] if step.isdigit() else target[step]
        last = steps[-1] if steps else key
        target[int(last) if last.isdigit() else last] = value

    return apply


def drop_key(path: str) -> Mutation:
    def apply(raw: dict[str, Any]) -> None:
        key, *steps = path.split(".")
        target: Any = raw[key] if steps else raw
        for step in steps[:-1]:
            target = target[int(step)] if step.isdigit() else target[step]
        del target[steps[-1] if steps else key]

    return apply


def both(first: Mutation, second: Mutation) -> Mutation:
    def apply(raw: dict[str, Any]) -> None:
        first(raw)
        second(raw)

    return apply


OWN_REGISTRY = "123456789012.dkr.ecr.us-west-2.amazonaws.com/platform"


def assert_one_line_names_the_key(mutate: Mutation, expected: str) -> None:
    """The dev stack changed by `mutate` is refused with a line starting `expected`, every line naming a key, once."""
    raw = raw_stack("dev")
    mutate(raw)
    with pytest.raises(ConfigError) as caught:
        load_stack_config(raw, today=PLAN_DATE)
    lines = str(caught.value).splitlines()
    assert any(line.startswith(expected) for line in lines), lines
    assert all(line.startswith(("gpushare:", "aws:")) for line in lines), lines
    keys = [line.split(": ")[0] for line in lines]
    assert len(keys) == len(set(keys)), lines  # one problem, one line
