"""The rules as pulumi_policy stack policies: what the Pulumi CLI runs with `--policy-pack policies`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError

from .registry import RULES
from .rule import Rule
from .shape import MalformedStack, check_shapes
from .stack import from_engine, plain_data


def _validate(rule: Rule) -> Any:
    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        # The engine judges a stack on the day it runs (EKS support windows); tests build views with a fixed day.
        view = from_engine(args.resources, UnknownValueError, datetime.now(UTC).date())
        try:
            check_shapes(view)
        except MalformedStack as error:
            report_violation(str(error), None)
            return
        settings = plain_data(dict(args.get_config()))
        for found in rule.run(view, settings):
            report_violation(found.message, found.resource.urn if found.resource is not None else None)

    return validate


def policies() -> list[StackValidationPolicy]:
    """Stack policies, because every rule compares resources with each other (overlay vs HAMi values...)."""
    return [
        StackValidationPolicy(
            name=rule.name,
            description=rule.description,
            validate=_validate(rule),
            enforcement_level=EnforcementLevel(rule.enforcement),
            severity=Severity(rule.severity),
            remediation_steps=rule.remediation,
            config_schema=PolicyConfigSchema(rule.config_schema()) if rule.config else None,
        )
        for rule in RULES
    ]
