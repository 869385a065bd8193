"""Every rule (discovered in rules/), their policy config, and the one evaluation `make plan`, `make check`
and the CLI share."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, get_args

from pydantic import ValidationError

from gpushare.errors import UserError
from gpushare.files import read_json
from gpushare.wording import Wording

from . import rules
from .rule import Level, Rule
from .shape import check_shapes
from .stack import StackView, plain_data

PACK_NAME = "gpushare-policies"


def discover() -> tuple[Rule, ...]:
    """The RULE of every module in rules/, in `Rule.order`. A module without one, or two rules at one position,
    is a broken pack, refused here rather than run with a rule missing or in an arbitrary order."""
    found: list[Rule] = []
    for module in pkgutil.iter_modules(rules.__path__):
        rule = getattr(importlib.import_module(f"{rules.__name__}.{module.name}"), "RULE", None)
        if not isinstance(rule, Rule):
            raise TypeError(f"{rules.__name__}.{module.name}: exports no RULE = Rule(...)")
        found.append(rule)
    ordered = tuple(sorted(found, key=lambda rule: rule.order))
    positions = [rule.order for rule in ordered]
    if len(set(positions)) != len(positions):
        raise ValueError(f"two rules share an order: {', '.join(f'{r.name}={r.order}' for r in ordered)}")
    return ordered


RULES: tuple[Rule, ...] = discover()
LEVELS = get_args(Level)


class PolicyConfigError(UserError):
    """A policy config file or value the pack cannot use."""


@dataclass(frozen=True)
class Violation:
    policy: str
    level: str
    severity: str
    urn: str | None
    message: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PolicyConfig:
    """Per policy: its enforcement level and its validated properties (Pulumi's policy config format)."""

    levels: Mapping[str, str]
    properties: Mapping[str, Mapping[str, Any]]

    @classmethod
    def parse(cls, document: Any, source: str = "policy config") -> PolicyConfig:
        """`{"all": level, "<policy>": level | {"enforcementLevel": level, <property>: value}}`."""
        if not isinstance(document, dict):
            raise PolicyConfigError(f"{source}: expected a JSON object keyed by policy name")
        rules = {rule.name: rule for rule in RULES}
        default = document.get("all")
        if default is not None and default not in LEVELS:
            raise PolicyConfigError(f"{source}: all: {default!r} is not a level; allowed: {', '.join(LEVELS)}")
        levels = {name: default or rule.enforcement for name, rule in rules.items()}
        properties: dict[str, dict[str, Any]] = {}
        for name, value in document.items():
            if name == "all":
                continue
            if name not in rules:
                raise PolicyConfigError(f"{source}: {name}: no such policy; allowed: {', '.join(rules)}")
            settings = dict(value) if isinstance(value, dict) else {"enforcementLevel": value}
            level = settings.pop("enforcementLevel", levels[name])
            if level not in LEVELS:
                raise PolicyConfigError(
                    f"{source}: {name}.enforcementLevel: {level!r} is not a level; allowed: {', '.join(LEVELS)}"
                )
            levels[name] = level
            properties[name] = _validated(rules[name], plain_data(settings), source)
        return cls(levels, properties)

    @classmethod
    def load(cls, path: Path) -> PolicyConfig:
        return cls.parse(read_json(path), str(path))


def _validated(rule: Rule, settings: dict[str, Any], source: str) -> dict[str, Any]:
    if not settings:
        return {}
    if rule.config is None:
        raise PolicyConfigError(f"{source}: {rule.name}: takes no properties (got {', '.join(settings)})")
    try:
        rule.config.model_validate(settings)
    except ValidationError as error:
        detail = error.errors(include_url=False)[0]
        key = ".".join(str(part) for part in detail["loc"])
        allowed = ", ".join(rule.config_schema())
        problem = Wording(rule.config).message(detail)
        raise PolicyConfigError(f"{source}: {rule.name}.{key}: {problem} (properties: {allowed})") from None
    return settings


DEFAULT_CONFIG = PolicyConfig.parse({})


def evaluate(view: StackView, config: PolicyConfig = DEFAULT_CONFIG) -> list[Violation]:
    """Every finding of every enabled rule, in rule order; MalformedStack when a field a rule reads has the
    wrong type."""
    check_shapes(view)
    violations = []
    for rule in RULES:
        level = config.levels[rule.name]
        if level == "disabled":
            continue
        for found in rule.run(view, dict(config.properties.get(rule.name, {}))):
            urn = found.resource.urn if found.resource is not None else None
            violations.append(Violation(rule.name, level, rule.severity, urn, found.message))
    return violations
