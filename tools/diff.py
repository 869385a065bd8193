"""What a change to a stack file changes: the objects of the rendered stack added, removed and changed (with the
changed fields), and the cost and EC2 quota figures before and after.

    python -m tools.diff --a Pulumi.dev.yaml [--b Pulumi.old.yaml] [--out build] [--date 2026-11-26]

A is the stack file after the change. B is the one before: another stack file, or by default the last plan of A's
stack under build/ (build/<stack>/plan.json and summary.json, as `make plan` wrote them). Nothing is written.
Bad input (either file unusable, no earlier plan to compare with): one line per problem on stderr, exit code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date
from pathlib import Path
from typing import Any

from gpushare.errors import EXIT_BAD_INPUT, UserError
from tools.check import add_date_option
from tools.plan import HELM_TYPE, build_plan, read_stack_file, stack_name
from tools.summary import SUMMARY_FILE, stack_summary

# A changed value is shown up to this many characters each side.
VALUE_WIDTH = 70


def planned(stack_file: Path, today: date) -> tuple[dict[str, Any], dict[str, Any]]:
    """(plan, summary figures) of a stack file, planned in memory."""
    stack = stack_name(stack_file)
    config, plan = build_plan(read_stack_file(stack_file), stack, today)
    return plan, stack_summary(config, plan)


def last_plan(folder: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(plan, summary figures) `make plan` last wrote into `folder`; UserError when there is none to compare with."""
    plan_file, summary_file = folder / "plan.json", folder / SUMMARY_FILE
    missing = [path for path in (plan_file, summary_file) if not path.is_file()]
    if missing:
        raise UserError(
            f"B: {missing[0]} does not exist: no earlier plan of this stack to compare with; run `make plan` on the "
            "stack file before changing it, or give B=<stack file>"
        )
    try:
        return json.loads(plan_file.read_text()), json.loads(summary_file.read_text())
    except (OSError, ValueError) as error:
        raise UserError(f"B: {folder}: cannot read the earlier plan ({error}); run `make plan` again") from None


def object_label(resource: dict[str, Any]) -> str:
    """How a user names one declared object: `karpenter.sh/v1 NodePool g5-shared`, `helm release hami`,
    `aws:ec2/natGateway:NatGateway gpushare-dev-nat-0`."""
    inputs = resource["inputs"]
    if resource["type"] == HELM_TYPE:
        return f"helm release {inputs['name']}"
    if resource["type"].startswith("kubernetes:") and isinstance(inputs.get("metadata"), dict):
        metadata = inputs["metadata"]
        where = f"{metadata['namespace']}/" if metadata.get("namespace") else ""
        return f"{inputs.get('apiVersion')} {inputs.get('kind')} {where}{metadata.get('name')}"
    return f"{resource['type']} {resource['urn'].rsplit('::', 1)[-1]}"


def objects(plan: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Label -> inputs of every object the plan declares (components and providers have no object of their own)."""
    declared = {}
    for resource in plan["resources"]:
        if resource["type"].split(":", 1)[0] in ("aws", "eks", "kubernetes"):
            declared[object_label(resource)] = resource["inputs"]
    return declared


class _Absent:
    """A field one side does not have."""

    def __repr__(self) -> str:
        return "(none)"


_NONE = _Absent()


def changed_fields(before: Any, after: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """(field path, before, after) of every leaf that differs: maps key by key, lists of one length item by item,
    anything else as a whole. A field only on one side is shown against `(none)`."""
    if isinstance(before, dict) and isinstance(after, dict):
        fields = []
        for key in sorted(set(before) | set(after), key=str):
            where = f"{path}.{key}" if path else str(key)
            fields += changed_fields(before.get(key, _NONE), after.get(key, _NONE), where)
        return fields
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [
            f for i, (b, a) in enumerate(zip(before, after, strict=True)) for f in changed_fields(b, a, f"{path}[{i}]")
        ]
    return [] if before == after else [(path, before, after)]


def _shown(value: Any) -> str:
    text = "(none)" if isinstance(value, _Absent) else json.dumps(value, sort_keys=True)
    return text if len(text) <= VALUE_WIDTH else text[: VALUE_WIDTH - 3] + "..."


def object_changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The added, removed and changed objects, one line each, changed fields indented below."""
    old, new = objects(before), objects(after)
    added = sorted(set(new) - set(old))
    removed = sorted(set(old) - set(new))
    changed = {label: changed_fields(old[label], new[label]) for label in sorted(set(old) & set(new))}
    changed = {label: fields for label, fields in changed.items() if fields}
    lines = [f"objects: {len(added)} added, {len(removed)} removed, {len(changed)} changed"]
    lines += [f"+ {label}" for label in added]
    lines += [f"- {label}" for label in removed]
    for label, fields in changed.items():
        lines.append(f"~ {label}")
        lines += [f"    {path}: {_shown(b)} -> {_shown(a)}" for path, b, a in fields]
    return lines


def _money_change(name: str, before: float | None, after: float | None, unit: str) -> str | None:
    """`  name: 1.00 -> 2.00 USD/month (+1.00)`; None when unchanged; `(none)` for a side without the figure."""
    if before == after:
        return None
    shown = [f"{value:,.2f}" if value is not None else "(none)" for value in (before, after)]
    change = f" ({after - before:+,.2f})" if before is not None and after is not None else ""
    return f"  {name}: {shown[0]} -> {shown[1]} {unit}{change}"


def cost_changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What the always-on cost, each pool at its limit, the total at the limits and each EC2 quota's need become."""
    lines = [
        _money_change("always on", before["alwaysOn"]["usdPerMonth"], after["alwaysOn"]["usdPerMonth"], "USD/month"),
        _money_change(
            "at the limits", before["atLimits"]["usdPerMonth"], after["atLimits"]["usdPerMonth"], "USD/month"
        ),
    ]
    parts_before = {p["name"]: p["usdPerMonth"] for p in before["alwaysOn"]["parts"]}
    parts_after = {p["name"]: p["usdPerMonth"] for p in after["alwaysOn"]["parts"]}
    for name in sorted(set(parts_before) | set(parts_after)):
        lines.append(_money_change(f"always on, {name}", parts_before.get(name), parts_after.get(name), "USD/month"))
    pools_before = {p["name"]: p["usdPerMonthAtLimit"] for p in before["pools"]}
    pools_after = {p["name"]: p["usdPerMonthAtLimit"] for p in after["pools"]}
    for name in sorted(set(pools_before) | set(pools_after)):
        lines.append(
            _money_change(f"pool {name} at its limit", pools_before.get(name), pools_after.get(name), "USD/month")
        )
    quotas_before = {q["code"]: (q["name"], q["vcpus"]) for q in before["vcpuQuotas"]}
    quotas_after = {q["code"]: (q["name"], q["vcpus"]) for q in after["vcpuQuotas"]}
    for code in sorted(set(quotas_before) | set(quotas_after)):
        name = (quotas_after.get(code) or quotas_before[code])[0]
        old = quotas_before.get(code, (name, 0))[1]
        new = quotas_after.get(code, (name, 0))[1]
        if old != new:
            lines.append(f"  EC2 quota {name} ({code}): {old} -> {new} vCPUs")
    shown = [line for line in lines if line is not None]
    return ["cost (USD per month, on-demand prices):", *(shown or ["  no change"])]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make diff", description=__doc__.splitlines()[0])
    parser.add_argument("--a", type=Path, required=True, help="the stack file after the change")
    parser.add_argument(
        "--b", type=Path, help="the stack file before it (default: build/<stack of A>/ as last planned)"
    )
    parser.add_argument("--out", type=Path, default=Path("build"), help="where `make plan` writes (default: build)")
    add_date_option(parser)
    args = parser.parse_args(argv)
    problems: list[str] = []
    sides: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    for side, source in (("A", args.a), ("B", args.b)):
        try:
            if source is None:
                sides[side] = last_plan(args.out / stack_name(args.a))
            else:
                sides[side] = planned(source, args.date)
        except UserError as error:
            problems += [
                line if line.startswith(f"{side}: ") else f"{side}: {line}" for line in str(error).splitlines()
            ]
    if problems:
        for line in problems:
            print(f"error: {line}", file=sys.stderr)
        return EXIT_BAD_INPUT
    before_source = args.b or args.out / stack_name(args.a)
    (plan_b, figures_b), (plan_a, figures_a) = sides["B"], sides["A"]
    print(f"diff: B {before_source} (before) -> A {args.a} (after)")
    print("\n".join(object_changes(plan_b, plan_a)))
    print("\n".join(cost_changes(figures_b, figures_a)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
