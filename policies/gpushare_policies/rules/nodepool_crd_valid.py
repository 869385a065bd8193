"""NodePools pass the pinned NodePool CRD: refused ones fail `pulumi up` midway."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpushare import karpenter_api, names

from ..crd import (
    LABEL_KEY,
    LABEL_VALUE,
    LABEL_VALUE_MAX,
    POOLS_CRD,
    as_dict,
    at_most,
    has,
    indexed_dicts,
    integer,
    matches,
    one_of,
    pool_label_refusal,
    quantities,
    required,
    requirements,
    text_of,
)
from ..rule import Finding, Rule, finding
from ..stack import NODE_POOL, Resource, StackView, sorted_by_name

# NodePool (karpenter.sh_nodepools.yaml, v1): patterns and enums shared with config validation.
DURATION_OR_NEVER = karpenter_api.DURATION_OR_NEVER  # expireAfter, disruption.consolidateAfter
DURATION = karpenter_api.DURATION  # template.spec.terminationGracePeriod
BUDGET_REASONS = ("Underutilized", "Empty", "Drifted", "Unhealthy")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TAINT_PART = LABEL_KEY  # taints[].key and taints[].value share the qualified-name pattern
MAX_LIST = 50  # budgets, budgets[].reasons
MAX_LABELS = 100


def check_node_pools(view: StackView, _config: None) -> Iterator[Finding]:
    """NodePools (karpenter.sh/v1): refused ones fail `pulumi up` midway, after the releases changed."""
    crd = f"the NodePool CRD ({POOLS_CRD})"
    for pool in sorted_by_name(view.of_type(NODE_POOL)):
        spec = as_dict(pool.get("spec"))
        yield from integer(pool, "spec.weight", spec.get("weight"), 1, 100, crd)
        if has(spec, "replicas"):
            if has(spec, "weight"):
                yield finding(
                    pool, "spec.weight", spec.get("weight"), f"{crd} refuses weight on static NodePools", "drop it"
                )
            extra = sorted(k for k in as_dict(spec.get("limits")) if k != "nodes")
            if extra:
                yield finding(
                    pool,
                    "spec.limits",
                    ", ".join(extra),
                    f"{crd} supports only limits.nodes on static NodePools",
                    "drop them",
                )
        yield from quantities(pool, "spec.limits", spec.get("limits"), crd)
        yield from _disruption(pool, as_dict(pool.get("spec", "disruption")), crd)
        template = spec.get("template")
        yield from required(pool, "spec.template", template, crd, "give the pool a template")
        yield from _template_labels(pool, pool.get("spec", "template", "metadata", "labels"), crd)
        if isinstance(template, dict):
            yield from required(pool, "spec.template.spec", template.get("spec"), crd, "give the template a spec")
            if isinstance(template.get("spec"), dict):
                yield from _node_spec(pool, template["spec"], crd)


def _disruption(pool: Resource, disruption: dict[str, Any], crd: str) -> Iterator[Finding]:
    """spec.disruption: v1.15 has no CEL tying consolidateAfter to the policy; both are enum/pattern checked."""
    where = "spec.disruption"
    policy, after = disruption.get("consolidationPolicy"), disruption.get("consolidateAfter")
    yield from one_of(pool, f"{where}.consolidationPolicy", policy, karpenter_api.CONSOLIDATION_POLICIES, crd)
    yield from matches(
        pool, f"{where}.consolidateAfter", after, DURATION_OR_NEVER, crd, 'write a duration like "10m" or Never'
    )
    budgets = disruption.get("budgets")
    yield from at_most(pool, f"{where}.budgets", budgets, MAX_LIST, "budgets", crd)
    for index, budget in indexed_dicts(budgets):
        at = f"{where}.budgets[{index}]"
        yield from matches(
            pool,
            f"{at}.nodes",
            budget.get("nodes"),
            karpenter_api.BUDGET_NODES,
            crd,
            "write a count or a percentage up to 100%",
        )
        yield from matches(
            pool,
            f"{at}.duration",
            budget.get("duration"),
            karpenter_api.BUDGET_DURATION,
            crd,
            'write hours and minutes, e.g. "9h" or "1h30m"',
        )
        yield from matches(
            pool,
            f"{at}.schedule",
            budget.get("schedule"),
            karpenter_api.BUDGET_SCHEDULE,
            crd,
            'write a cron schedule such as "0 15 * * mon-fri"',
        )
        yield from _schedule_parses(pool, f"{at}.schedule", budget.get("schedule"))
        if has(budget, "schedule") != has(budget, "duration"):
            missing = "duration" if has(budget, "schedule") else "schedule"
            yield finding(
                pool,
                f"{at}.{missing}",
                None,
                f"{crd} refuses it: 'schedule' must be set with 'duration'",
                f"set {missing} too",
            )
        reasons = budget.get("reasons")
        yield from at_most(pool, f"{at}.reasons", reasons, MAX_LIST, "reasons", crd)
        for position, reason in enumerate(reasons if isinstance(reasons, list) else []):
            yield from one_of(pool, f"{at}.reasons[{position}]", reason, BUDGET_REASONS, crd)


def _schedule_parses(pool: Resource, where: str, schedule: Any) -> Iterator[Finding]:
    """A schedule the CRD's pattern admits but Karpenter's cron parser refuses makes the budget fail closed:
    every voluntary disruption of the pool stops (nodepool.go Budget.GetAllowedDisruptions returns 0)."""
    text = text_of(schedule)
    if text is None or not karpenter_api.BUDGET_SCHEDULE.search(text):
        return  # unset, unknown, or the CRD pattern's finding
    problem = karpenter_api.schedule_problem(text)
    if problem is not None:
        yield finding(
            pool,
            where,
            schedule,
            f"{problem}; a budget Karpenter cannot parse blocks all disruption of the pool",
            'write a cron schedule such as "0 15 * * mon-fri" (Sunday is 0 or sun)',
        )


def _template_labels(pool: Resource, labels: Any, crd: str) -> Iterator[Finding]:
    where = "spec.template.metadata.labels"
    if not isinstance(labels, dict):
        return
    yield from at_most(pool, where, labels, MAX_LABELS, "labels", crd)
    for key, value in labels.items():
        problem = pool_label_refusal(key)
        if problem is not None:
            yield finding(pool, f'{where}["{key}"]', value, f"{crd} refuses the key ({problem})", "drop the label")
        text = text_of(value)
        if text is not None and (len(text) > LABEL_VALUE_MAX or not LABEL_VALUE.search(text)):
            yield finding(pool, f'{where}["{key}"]', value, f"{crd} refuses it: not a label value", "use a label value")


def _node_spec(pool: Resource, node: dict[str, Any], crd: str) -> Iterator[Finding]:
    """template.spec: durations, nodeClassRef, requirements (with minValues) and taints."""
    where = "spec.template.spec"
    yield from matches(
        pool,
        f"{where}.expireAfter",
        node.get("expireAfter"),
        DURATION_OR_NEVER,
        crd,
        'write a duration like "720h" or Never',
    )
    yield from matches(
        pool,
        f"{where}.terminationGracePeriod",
        node.get("terminationGracePeriod"),
        DURATION,
        crd,
        'write a duration like "1h" (Never is not allowed)',
    )
    ref = node.get("nodeClassRef")
    yield from required(pool, f"{where}.nodeClassRef", ref, crd, "reference the EC2NodeClass")
    if isinstance(ref, dict):
        for field in ("group", "kind", "name"):
            if ref.get(field) is None or ref.get(field) == "":
                yield finding(
                    pool,
                    f"{where}.nodeClassRef.{field}",
                    ref.get(field),
                    f"{crd} requires a non-empty {field}",
                    f"set {field}",
                )
        group = text_of(ref.get("group"))
        if group and "/" in group:
            yield finding(
                pool,
                f"{where}.nodeClassRef.group",
                group,
                f"{crd} refuses a group with a version",
                "write karpenter.k8s.aws",
            )
    yield from requirements(pool, f"{where}.requirements", node.get("requirements"), crd, pool_label_refusal, False)
    for index, requirement in indexed_dicts(node.get("requirements")):
        at = f"{where}.requirements[{index}]"
        yield from integer(pool, f"{at}.minValues", requirement.get("minValues"), 1, 50, crd)
        values, least = requirement.get("values"), requirement.get("minValues")
        if (
            requirement.get("operator") == "In"
            and isinstance(least, int)
            and isinstance(values, list)
            and len(values) < least
        ):
            yield finding(
                pool,
                f"{at}.minValues",
                least,
                f"{crd} requires at least that many values ({len(values)} listed)",
                "list more values or lower minValues",
            )
    for field in ("taints", "startupTaints"):
        for index, taint in indexed_dicts(node.get(field)):
            at = f"{where}.{field}[{index}]"
            yield from required(pool, f"{at}.key", taint.get("key"), crd, "name the taint")
            yield from required(
                pool, f"{at}.effect", taint.get("effect"), crd, f"use one of {', '.join(TAINT_EFFECTS)}"
            )
            yield from matches(pool, f"{at}.key", taint.get("key"), TAINT_PART, crd, "use a qualified name")
            yield from matches(pool, f"{at}.value", taint.get("value"), TAINT_PART, crd, "use a qualified name")
            yield from one_of(pool, f"{at}.effect", taint.get("effect"), TAINT_EFFECTS, crd)


RULE = Rule(
    name="nodepool-crd-valid",
    order=28,
    description=f"Every NodePool passes the pinned {names.KARPENTER_API} NodePool CRD's schema and CEL rules: weight, "
    "durations, disruption and budgets (schedules parsed as Karpenter's cron parser does), requirements, template "
    "labels, taints, nodeClassRef and limits.",
    why="The API server refuses such a NodePool only at `pulumi up`, after other resources changed; a budget "
    "schedule it admits but Karpenter cannot parse stops all disruption of the pool.",
    remediation="Write the field as the CRD accepts it (the message names the field and the CRD's rule).",
    enforcement="mandatory",
    severity="high",
    check=check_node_pools,
)
