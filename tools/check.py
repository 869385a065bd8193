"""Evaluate the gpushare policy pack over a plan file written by `make plan`.

    python -m tools.check --plan build/dev/plan.json [--policy-config policies/config/dev.json] [--date 2026-11-26]

Exit 0 when no mandatory policy fails, 1 when one does, 2 when the plan or policy config cannot be used.
Without --policy-config, policies/config/<stack>.json is used when it exists (as CI passes it to Pulumi).
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from gpushare.errors import EXIT_BAD_INPUT, UserError, key_path
from gpushare.files import read_json
from gpushare.paths import PROJECT_ROOT
from gpushare.wording import Wording
from policies.gpushare_policies.registry import PACK_NAME, PolicyConfig, Violation, evaluate
from policies.gpushare_policies.stack import from_plan

POLICY_CONFIG_DIR = PROJECT_ROOT / "policies" / "config"
EXIT_MANDATORY = 1


class PlanResource(BaseModel):
    """The fields of a plan resource the pack reads; anything else in the file is left alone."""

    model_config = ConfigDict(extra="allow")

    urn: str
    type: str
    name: str = ""
    dependencies: list[str] = []
    inputs: dict[str, Any] = {}

    def for_check(self) -> dict[str, Any]:
        """What from_plan reads, sharing the parsed inputs: model_dump would copy every resource once more."""
        return {
            "urn": self.urn,
            "type": self.type,
            "name": self.name,
            "dependencies": self.dependencies,
            "inputs": self.inputs,
        }


class PlanFile(BaseModel):
    model_config = ConfigDict(extra="allow")

    stack: str
    resources: list[PlanResource]


def read_plan(path: Path) -> PlanFile:
    document = read_json(path)
    try:
        return PlanFile.model_validate(document)
    except ValidationError as error:
        detail = error.errors(include_url=False)[0]
        where = key_path("", detail["loc"]) or "(top level)"
        problem = Wording(PlanFile).message(detail)
        raise UserError(f"{path}: not a plan file: {where}: {problem} (write one with `make plan`)") from None


def policy_config_for(stack: str, explicit: Path | None) -> tuple[PolicyConfig, Path | None]:
    """The explicit file, else the stack's file in policies/config/, else the pack's defaults."""
    path = explicit or (POLICY_CONFIG_DIR / f"{stack}.json")
    if explicit is None and not path.exists():
        return PolicyConfig.parse({}), None
    return PolicyConfig.load(path), path


def check(resources: list[dict[str, Any]], config: PolicyConfig, today: date) -> list[Violation]:
    return evaluate(from_plan(resources, today), config)


def add_date_option(parser: argparse.ArgumentParser) -> None:
    """`--date`: the day date-bound facts (EKS support windows) are judged for; a run is repeatable with it."""
    parser.add_argument(
        "--date",
        type=date.fromisoformat,
        default=datetime.now(UTC).date(),
        help="day the EKS support windows are judged for, YYYY-MM-DD (default: today, UTC)",
    )


def report(violations: list[Violation], config_path: Path | None) -> str:
    """Violations grouped by level, then a one-line verdict."""
    lines = []
    for violation in sorted(violations, key=lambda v: (v.level != "mandatory", v.policy, v.message)):
        lines.append(f"[{violation.level}] {violation.policy} ({violation.severity})")
        lines.append(f"    {violation.message}")
    mandatory = sum(v.level == "mandatory" for v in violations)
    config = (
        config_path.relative_to(PROJECT_ROOT)
        if config_path and config_path.is_relative_to(PROJECT_ROOT)
        else config_path
    )
    lines.append(
        f"{PACK_NAME}: {mandatory} mandatory, {len(violations) - mandatory} advisory violation(s)"
        f" (policy config: {config or 'pack defaults'})"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make check", description=__doc__.splitlines()[0])
    parser.add_argument("--plan", type=Path, required=True, help="plan.json written by `make plan`")
    parser.add_argument("--policy-config", type=Path, help="Pulumi policy config JSON (levels and properties)")
    add_date_option(parser)
    args = parser.parse_args(argv)
    try:
        plan = read_plan(args.plan)
        config, config_path = policy_config_for(plan.stack, args.policy_config)
        violations = check([r.for_check() for r in plan.resources], config, args.date)
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(report(violations, config_path))
    return EXIT_MANDATORY if any(v.level == "mandatory" for v in violations) else 0


if __name__ == "__main__":
    sys.exit(main())
