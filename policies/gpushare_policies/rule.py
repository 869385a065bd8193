"""What a rule is: metadata the Pulumi CLI shows, an optional typed config, and a pure check."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from .stack import Resource, StackView

Level = Literal["mandatory", "advisory", "disabled"]
Severity = Literal["low", "medium", "high", "critical"]


@dataclass(frozen=True)
class Finding:
    """One violation: the resource at fault (None for the stack as a whole) and what to do about it; built by
    `finding` or `finding_about`, never directly."""

    resource: Resource | None
    message: str


def finding(resource: Resource, key: str, value: Any, problem: str, fix: str) -> Finding:
    """`<Kind> <name>: <key> is <value>: <problem>. Fix: <fix>.` - a finding about one field's value."""
    shown = "not set" if value is None else f"is {_show(value)}"
    return finding_about(resource, f"{key} {shown}: {problem}", fix)


def finding_about(resource: Resource | None, problem: str, fix: str) -> Finding:
    """`<Kind> <name>: <problem>. Fix: <fix>.` (just `<problem>. Fix: <fix>.` for the stack as a whole): the one
    place a message is built, so every rule's messages have this shape."""
    subject = f"{resource.label}: " if resource is not None else ""
    return Finding(resource, f"{subject}{problem}. Fix: {fix}.")


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


class RuleConfig(BaseModel):
    """Base of a rule's tunable thresholds; pydantic gives both validation and the JSON schema."""

    model_config = ConfigDict(extra="forbid", frozen=True)


Check = Callable[[StackView, Any], Iterator[Finding]]


@dataclass(frozen=True, kw_only=True)
class Rule:
    """One policy; `rules/<name with _>.py` exports it as RULE and the registry orders the pack by `order`."""

    name: str
    order: int  # its place in the pack: evaluation order and the policy table of docs/policies.md; unique
    description: str  # what is checked (one sentence)
    why: str  # the failure it prevents
    remediation: str  # how to fix a violation
    enforcement: Level
    severity: Severity
    check: Check
    config: type[RuleConfig] | None = None

    def run(self, view: StackView, settings: dict[str, Any]) -> list[Finding]:
        """Findings for this stack; `settings` is the rule's policy config (already validated)."""
        config = self.config.model_validate(settings) if self.config else None
        return list(self.check(view, config))

    def config_schema(self) -> dict[str, dict[str, Any]]:
        """JSON-schema properties for PolicyConfigSchema, with defaults and descriptions."""
        if self.config is None:
            return {}
        return self.config.model_json_schema(by_alias=True)["properties"]
