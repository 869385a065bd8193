"""What the API server would refuse, caught at preview: NodePools, NodeOverlays and EC2NodeClasses against the
OpenAPI schema and x-kubernetes-validations (CEL) rules of the pinned Karpenter CRDs.

Sources (read, not vendored) are the files the karpenter-crd chart 1.15.1 installs, from
github.com/aws/karpenter-provider-aws v1.15.1 pkg/apis/crds/:
- karpenter.sh_nodepools.yaml (v1) and karpenter.sh_nodeoverlays.yaml (v1alpha1): sigs.k8s.io/karpenter
  v1.15's CRDs plus the AWS provider's `label domain "karpenter.k8s.aws" is restricted` rules;
- karpenter.k8s.aws_ec2nodeclasses.yaml (v1).
Each check names the CRD field it mirrors. Patterns are rewritten to match as Go's RE2 does (`\\Z`, ASCII
classes). JSON types are shape.py's concern: a number or boolean where the CRD wants a string is read as its
text, so nothing here tells `"true"` from `true`. A value unknown during preview counts as set, like CEL has().
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from gpushare import names

from .rule import Finding, Rule, finding
from .stack import EC2_NODE_CLASS, NODE_OVERLAY, NODE_POOL, UNKNOWN, Resource, StackView, sorted_by_name

POOLS_CRD = "karpenter.sh_nodepools.yaml"
OVERLAYS_CRD = "karpenter.sh_nodeoverlays.yaml"
CLASSES_CRD = "karpenter.k8s.aws_ec2nodeclasses.yaml"

# Shared by NodePool requirements and NodeOverlay requirements: key and values (items) patterns and lengths.
LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z"
)
LABEL_KEY_MAX = 316
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")
LABEL_VALUE_MAX = 63
QUANTITY = re.compile(
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?\Z"
)
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte")
NUMERIC_OPERATORS = ("Gt", "Lt", "Gte", "Lte")
HOSTNAME_LABEL = "kubernetes.io/hostname"
KARPENTER_LABELS = (names.CAPACITY_TYPE_LABEL, names.NODEPOOL_LABEL)
# karpenter.k8s.aws labels the AWS provider's CEL lets NodeOverlays select ...
OVERLAY_AWS_LABELS = frozenset(
    f"karpenter.k8s.aws/{name}"
    for name in (
        "ec2nodeclass",
        "instance-encryption-in-transit-supported",
        "instance-category",
        "instance-hypervisor",
        "instance-family",
        "instance-generation",
        "instance-local-nvme",
        "instance-size",
        "instance-cpu",
        "instance-cpu-manufacturer",
        "instance-cpu-sustained-clock-speed-mhz",
        "instance-memory",
        "instance-ebs-bandwidth",
        "instance-network-bandwidth",
        "instance-gpu-name",
        "instance-gpu-manufacturer",
        "instance-gpu-count",
        "instance-gpu-memory",
        "instance-accelerator-name",
        "instance-accelerator-manufacturer",
        "instance-accelerator-count",
        "instance-capability-flex",
    )
)
# ... and NodePools select or set (template labels and requirements list the same names).
POOL_AWS_LABELS = OVERLAY_AWS_LABELS | {
    f"karpenter.k8s.aws/{name}"
    for name in (
        "instance-tenancy",
        "capacity-reservation-type",
        "capacity-reservation-id",
        "capacity-reservation-interruptible",
        "placement-group-id",
        "placement-group-partition",
    )
}

# NodePool (karpenter.sh_nodepools.yaml, v1).
DURATION_OR_NEVER = re.compile(r"^(([0-9]+(s|m|h))+|Never)\Z")  # expireAfter, disruption.consolidateAfter
DURATION = re.compile(r"^([0-9]+(s|m|h))+\Z")  # template.spec.terminationGracePeriod
BUDGET_DURATION = re.compile(r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)\Z")
BUDGET_NODES = re.compile(r"^((100|[0-9]{1,2})%|[0-9]+)\Z")
# As the CRD writes it: `^` binds only the macro alternative, `$` only the five-field one.
BUDGET_SCHEDULE = re.compile(
    r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))\Z"
)
BUDGET_REASONS = ("Underutilized", "Empty", "Drifted", "Unhealthy")
CONSOLIDATION_POLICIES = ("WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TAINT_PART = LABEL_KEY  # taints[].key and taints[].value share the qualified-name pattern
MAX_LIST = 50  # budgets, budgets[].reasons
MAX_REQUIREMENTS = 100
MAX_LABELS = 100

# NodeOverlay (karpenter.sh_nodeoverlays.yaml, v1alpha1).
PRICE = re.compile(r"^[0-9]+(\.[0-9]+)?\Z")
PRICE_ADJUSTMENT = re.compile(
    r"^(([+-]{1}([0-9]*\.?[0-9]+))|(\+{1}[0-9]*\.?[0-9]+%)|(^(-[0-9]{1,2}(\.[0-9]+)?%)\Z)|(-100%))\Z"
)
RESERVED_CAPACITY = ("cpu", "memory", "ephemeral-storage", "pods")

# EC2NodeClass (karpenter.k8s.aws_ec2nodeclasses.yaml, v1): which fields a selector term may combine.
MAX_TERMS = 30
MAX_TAGS = 20
AMI_FAMILIES = ("AL2", "AL2023", "Bottlerocket", "Custom", "Windows2019", "Windows2022", "Windows2025")
ALIAS_FAMILIES = {family.lower(): family for family in AMI_FAMILIES if family != "Custom"}
ALIAS = re.compile(r"^[a-zA-Z0-9]+@.+\Z")
ALIAS_MAX = 30
METADATA_ENUMS = {
    "httpEndpoint": ("enabled", "disabled"),
    "httpProtocolIPv6": ("enabled", "disabled"),
    "httpTokens": ("required", "optional"),
}
RESTRICTED_TAGS = (
    "eks:eks-cluster-name",
    names.NODEPOOL_LABEL,
    "karpenter.sh/nodeclaim",
    "karpenter.k8s.aws/ec2nodeclass",
)
VOLUME_TYPES = ("standard", "io1", "io2", "gp2", "sc1", "st1", "gp3")
VOLUME_SIZE = re.compile(
    r"^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G"
    r"|([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)\Z"
)


def _text(value: Any) -> str | None:
    """A scalar as the text a pattern is matched against; None for containers and unknown values."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (str, int, float)):
        return str(value)
    return None


def _obj(value: Any) -> dict[str, Any]:
    """An object, or {} for a missing or misshapen one."""
    return value if isinstance(value, dict) else {}


def _dicts(value: Any) -> list[tuple[int, dict[str, Any]]]:
    """Indexed objects of a list; anything else (a wrong shape shape.py reports) yields none."""
    return [(i, item) for i, item in enumerate(value) if isinstance(item, dict)] if isinstance(value, list) else []


def _has(node: dict[str, Any], field: str) -> bool:
    """CEL has(): the field is present (the API server prunes nulls before validating)."""
    return node.get(field) is not None


def _matches(
    resource: Resource, key: str, value: Any, pattern: re.Pattern[str], crd: str, fix: str
) -> Iterator[Finding]:
    text = _text(value)
    if text is not None and not pattern.search(text):
        shown = pattern.pattern.replace("\\Z", "$")  # as the CRD writes it
        yield finding(resource, key, value, f"{crd} refuses it (pattern {shown})", fix)


def _one_of(resource: Resource, key: str, value: Any, allowed: tuple[str, ...], crd: str) -> Iterator[Finding]:
    text = _text(value)
    if text is not None and text not in allowed:
        yield finding(
            resource, key, value, f"{crd} allows only {', '.join(allowed)}", f"use one of {', '.join(allowed)}"
        )


def _integer(resource: Resource, key: str, value: Any, low: int, high: int, crd: str) -> Iterator[Finding]:
    if value is None or value is UNKNOWN:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        yield finding(
            resource, key, value, f"{crd} takes an integer from {low} to {high}", f"set an integer from {low} to {high}"
        )


def _at_most(resource: Resource, key: str, value: Any, limit: int, what: str, crd: str) -> Iterator[Finding]:
    if isinstance(value, (list, dict)) and len(value) > limit:
        yield finding(
            resource, f"{key} count", len(value), f"{crd} allows at most {limit} {what}", f"keep {limit} or fewer"
        )


def _required(resource: Resource, key: str, value: Any, crd: str, fix: str) -> Iterator[Finding]:
    if value is None:
        yield finding(resource, key, None, f"{crd} requires it", fix)


def _quantities(resource: Resource, where: str, values: Any, crd: str) -> Iterator[Finding]:
    """int-or-string map values: an integer, or a string in Kubernetes quantity form."""
    for name, value in _obj(values).items():
        key = f'{where}["{name}"]'
        if isinstance(value, str):
            yield from _matches(resource, key, value, QUANTITY, crd, 'write a quantity such as "40", "500m" or "64Gi"')
        elif value is not UNKNOWN and (isinstance(value, bool) or not isinstance(value, int)):
            yield finding(resource, key, value, f"{crd} takes an integer or a quantity string", 'write it as "40"')


def _label_refusal(key: str, aws_allowed: frozenset[str]) -> str | None:
    """The CRD's CEL message when a label key is one Karpenter keeps for itself."""
    domain = key.split("/", 1)[0]  # CEL: key.find("^([^/]+)")
    if key not in KARPENTER_LABELS and domain.endswith("karpenter.sh"):
        return 'label domain "karpenter.sh" is restricted'
    if key == HOSTNAME_LABEL:
        return f'label "{HOSTNAME_LABEL}" is restricted'
    if key not in aws_allowed and domain.endswith("karpenter.k8s.aws"):
        return 'label domain "karpenter.k8s.aws" is restricted'
    return None


def _pool_label_refusal(key: str) -> str | None:
    """NodePools may neither set nor require karpenter.sh/nodepool: Karpenter sets it to the pool's name."""
    if key == names.NODEPOOL_LABEL:
        return f'label "{names.NODEPOOL_LABEL}" is restricted'
    return _label_refusal(key, POOL_AWS_LABELS)


def _overlay_label_refusal(key: str) -> str | None:
    """Overlays may select a pool (karpenter.sh/nodepool) but fewer AWS labels than pools."""
    return _label_refusal(key, OVERLAY_AWS_LABELS)


def _requirements(
    resource: Resource,
    where: str,
    requirements: Any,
    crd: str,
    refusal: Callable[[str], str | None],
    not_in_needs_values: bool,
) -> Iterator[Finding]:
    """requirements[]: key, operator and values as the item schema and the list's CEL rules constrain them."""
    yield from _required(resource, where, requirements, crd, "list the node selector requirements")
    yield from _at_most(resource, where, requirements, MAX_REQUIREMENTS, "requirements", crd)
    needs_values = ("In", "NotIn") if not_in_needs_values else ("In",)
    for index, requirement in _dicts(requirements):
        at = f"{where}[{index}]"
        key, operator, values = requirement.get("key"), requirement.get("operator"), requirement.get("values")
        yield from _required(resource, f"{at}.key", key, crd, "name the label to match")
        yield from _required(resource, f"{at}.operator", operator, crd, f"use one of {', '.join(OPERATORS)}")
        if isinstance(key, str):
            problem = refusal(key)
            if problem is not None:
                yield finding(resource, f"{at}.key", key, f"{crd} refuses it ({problem})", "match another label")
            elif len(key) > LABEL_KEY_MAX or not LABEL_KEY.search(key):
                yield finding(resource, f"{at}.key", key, f"{crd} refuses it: not a label key", "use prefix/name")
        yield from _one_of(resource, f"{at}.operator", operator, OPERATORS, crd)
        listed = values if isinstance(values, list) else []
        for position, value in enumerate(listed):
            text = _text(value)
            if text is not None and (len(text) > LABEL_VALUE_MAX or not LABEL_VALUE.search(text)):
                yield finding(
                    resource,
                    f"{at}.values[{position}]",
                    value,
                    f"{crd} refuses it: not a label value",
                    "use a label value",
                )
        if operator in needs_values and not listed:
            yield finding(
                resource, f"{at}.values", values, f"{crd} refuses operator {operator} without values", "list the values"
            )
        single = _text(listed[0]) if len(listed) == 1 else None
        if operator in NUMERIC_OPERATORS and not (single and re.fullmatch(r"[0-9]+", single) and int(single) < 2**63):
            yield finding(
                resource,
                f"{at}.values",
                values,
                f"{crd} requires operator {operator} to have a single non-negative integer value",
                'give one value such as ["0"]',
            )


def check_node_pools(view: StackView, _config: None) -> Iterator[Finding]:
    """NodePools (karpenter.sh/v1): refused ones fail `pulumi up` midway, after the releases changed."""
    crd = f"the NodePool CRD ({POOLS_CRD})"
    for pool in sorted_by_name(view.of_type(NODE_POOL)):
        spec = _obj(pool.get("spec"))
        yield from _integer(pool, "spec.weight", spec.get("weight"), 1, 100, crd)
        if _has(spec, "replicas"):
            if _has(spec, "weight"):
                yield finding(
                    pool, "spec.weight", spec.get("weight"), f"{crd} refuses weight on static NodePools", "drop it"
                )
            extra = sorted(k for k in _obj(spec.get("limits")) if k != "nodes")
            if extra:
                yield finding(
                    pool,
                    "spec.limits",
                    ", ".join(extra),
                    f"{crd} supports only limits.nodes on static NodePools",
                    "drop them",
                )
        yield from _quantities(pool, "spec.limits", spec.get("limits"), crd)
        yield from _disruption(pool, _obj(pool.get("spec", "disruption")), crd)
        template = spec.get("template")
        yield from _required(pool, "spec.template", template, crd, "give the pool a template")
        yield from _template_labels(pool, pool.get("spec", "template", "metadata", "labels"), crd)
        if isinstance(template, dict):
            yield from _required(pool, "spec.template.spec", template.get("spec"), crd, "give the template a spec")
            if isinstance(template.get("spec"), dict):
                yield from _node_spec(pool, template["spec"], crd)


def _disruption(pool: Resource, disruption: dict[str, Any], crd: str) -> Iterator[Finding]:
    """spec.disruption: v1.15 has no CEL tying consolidateAfter to the policy; both are enum/pattern checked."""
    where = "spec.disruption"
    policy, after = disruption.get("consolidationPolicy"), disruption.get("consolidateAfter")
    yield from _one_of(pool, f"{where}.consolidationPolicy", policy, CONSOLIDATION_POLICIES, crd)
    yield from _matches(
        pool, f"{where}.consolidateAfter", after, DURATION_OR_NEVER, crd, 'write a duration like "10m" or Never'
    )
    budgets = disruption.get("budgets")
    yield from _at_most(pool, f"{where}.budgets", budgets, MAX_LIST, "budgets", crd)
    for index, budget in _dicts(budgets):
        at = f"{where}.budgets[{index}]"
        yield from _matches(
            pool, f"{at}.nodes", budget.get("nodes"), BUDGET_NODES, crd, "write a count or a percentage up to 100%"
        )
        yield from _matches(
            pool,
            f"{at}.duration",
            budget.get("duration"),
            BUDGET_DURATION,
            crd,
            'write hours and minutes, e.g. "9h" or "1h30m"',
        )
        yield from _matches(
            pool,
            f"{at}.schedule",
            budget.get("schedule"),
            BUDGET_SCHEDULE,
            crd,
            'write a cron schedule such as "0 15 * * mon-fri"',
        )
        if _has(budget, "schedule") != _has(budget, "duration"):
            missing = "duration" if _has(budget, "schedule") else "schedule"
            yield finding(
                pool,
                f"{at}.{missing}",
                None,
                f"{crd} refuses it: 'schedule' must be set with 'duration'",
                f"set {missing} too",
            )
        reasons = budget.get("reasons")
        yield from _at_most(pool, f"{at}.reasons", reasons, MAX_LIST, "reasons", crd)
        for position, reason in enumerate(reasons if isinstance(reasons, list) else []):
            yield from _one_of(pool, f"{at}.reasons[{position}]", reason, BUDGET_REASONS, crd)


def _template_labels(pool: Resource, labels: Any, crd: str) -> Iterator[Finding]:
    where = "spec.template.metadata.labels"
    if not isinstance(labels, dict):
        return
    yield from _at_most(pool, where, labels, MAX_LABELS, "labels", crd)
    for key, value in labels.items():
        problem = _pool_label_refusal(key)
        if problem is not None:
            yield finding(pool, f'{where}["{key}"]', value, f"{crd} refuses the key ({problem})", "drop the label")
        text = _text(value)
        if text is not None and (len(text) > LABEL_VALUE_MAX or not LABEL_VALUE.search(text)):
            yield finding(pool, f'{where}["{key}"]', value, f"{crd} refuses it: not a label value", "use a label value")


def _node_spec(pool: Resource, node: dict[str, Any], crd: str) -> Iterator[Finding]:
    """template.spec: durations, nodeClassRef, requirements (with minValues) and taints."""
    where = "spec.template.spec"
    yield from _matches(
        pool,
        f"{where}.expireAfter",
        node.get("expireAfter"),
        DURATION_OR_NEVER,
        crd,
        'write a duration like "720h" or Never',
    )
    yield from _matches(
        pool,
        f"{where}.terminationGracePeriod",
        node.get("terminationGracePeriod"),
        DURATION,
        crd,
        'write a duration like "1h" (Never is not allowed)',
    )
    ref = node.get("nodeClassRef")
    yield from _required(pool, f"{where}.nodeClassRef", ref, crd, "reference the EC2NodeClass")
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
        group = _text(ref.get("group"))
        if group and "/" in group:
            yield finding(
                pool,
                f"{where}.nodeClassRef.group",
                group,
                f"{crd} refuses a group with a version",
                "write karpenter.k8s.aws",
            )
    yield from _requirements(pool, f"{where}.requirements", node.get("requirements"), crd, _pool_label_refusal, False)
    for index, requirement in _dicts(node.get("requirements")):
        at = f"{where}.requirements[{index}]"
        yield from _integer(pool, f"{at}.minValues", requirement.get("minValues"), 1, 50, crd)
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
        for index, taint in _dicts(node.get(field)):
            at = f"{where}.{field}[{index}]"
            yield from _required(pool, f"{at}.key", taint.get("key"), crd, "name the taint")
            yield from _required(
                pool, f"{at}.effect", taint.get("effect"), crd, f"use one of {', '.join(TAINT_EFFECTS)}"
            )
            yield from _matches(pool, f"{at}.key", taint.get("key"), TAINT_PART, crd, "use a qualified name")
            yield from _matches(pool, f"{at}.value", taint.get("value"), TAINT_PART, crd, "use a qualified name")
            yield from _one_of(pool, f"{at}.effect", taint.get("effect"), TAINT_EFFECTS, crd)


def check_node_overlays(view: StackView, _config: None) -> Iterator[Finding]:
    """NodeOverlays (karpenter.sh/v1alpha1): a refused one leaves its pool without the capacity it promises."""
    crd = f"the NodeOverlay CRD ({OVERLAYS_CRD})"
    for overlay in sorted_by_name(view.of_type(NODE_OVERLAY)):
        spec = overlay.get("spec")
        yield from _required(overlay, "spec", spec, crd, "give the overlay a spec")
        if not isinstance(spec, dict):
            continue
        price, adjustment = spec.get("price"), spec.get("priceAdjustment")
        if price is not None and adjustment is not None:
            yield finding(
                overlay,
                "spec.priceAdjustment",
                adjustment,
                f"{crd} refuses setting both 'price' and 'priceAdjustment'",
                "keep one",
            )
        yield from _matches(overlay, "spec.price", price, PRICE, crd, 'write a plain price such as "0.5"')
        yield from _matches(
            overlay,
            "spec.priceAdjustment",
            adjustment,
            PRICE_ADJUSTMENT,
            crd,
            'write a signed amount ("-0.5", "+1.2") or percentage ("+10%", "-15%")',
        )
        yield from _integer(overlay, "spec.weight", spec.get("weight"), 1, 10000, crd)
        capacity = spec.get("capacity")
        for name in RESERVED_CAPACITY:
            if isinstance(capacity, dict) and name in capacity:
                yield finding(
                    overlay,
                    f'spec.capacity["{name}"]',
                    capacity[name],
                    f"{crd} refuses it (invalid resource restricted)",
                    "overlay only extended resources",
                )
        yield from _quantities(overlay, "spec.capacity", capacity, crd)
        yield from _requirements(
            overlay, "spec.requirements", spec.get("requirements"), crd, _overlay_label_refusal, True
        )


def check_node_classes(view: StackView, _config: None) -> Iterator[Finding]:
    """EC2NodeClasses (karpenter.k8s.aws/v1): a refused one leaves every pool unable to launch."""
    crd = f"the EC2NodeClass CRD ({CLASSES_CRD})"
    for node_class in sorted_by_name(view.of_type(EC2_NODE_CLASS)):
        spec = _obj(node_class.get("spec"))
        role, profile = spec.get("role"), spec.get("instanceProfile")
        if (role is None) == (profile is None):
            yield finding(
                node_class,
                "spec.role",
                role,
                f"{crd} requires exactly one of role and instanceProfile "
                f"(instanceProfile {'not set' if profile is None else 'set too'})",
                "set exactly one: role (gpushare renders the node role) or instanceProfile",
            )
        for field, value in (("role", role), ("instanceProfile", profile)):
            if value == "":
                yield finding(
                    node_class,
                    f"spec.{field}",
                    value,
                    f"{crd} refuses an empty {field}",
                    f"name the {field} or drop it",
                )
        yield from _selector(node_class, spec, "subnetSelectorTerms", ("tags", "id"), r"subnet-[0-9a-z]+", crd)
        yield from _selector(
            node_class, spec, "securityGroupSelectorTerms", ("tags", "id", "name"), r"sg-[0-9a-z]+", crd
        )
        yield from _ami(node_class, spec, crd)
        options = spec.get("metadataOptions")
        if isinstance(options, dict):
            for field, allowed in METADATA_ENUMS.items():
                yield from _one_of(node_class, f"spec.metadataOptions.{field}", options.get(field), allowed, crd)
            limit = options.get("httpPutResponseHopLimit")
            yield from _integer(node_class, "spec.metadataOptions.httpPutResponseHopLimit", limit, 1, 64, crd)
        yield from _tags(node_class, spec.get("tags"), crd)
        yield from _block_devices(node_class, spec.get("blockDeviceMappings"), crd)


def _selector(
    node_class: Resource, spec: dict[str, Any], field: str, allowed: tuple[str, ...], id_pattern: str, crd: str
) -> Iterator[Finding]:
    """subnetSelectorTerms / securityGroupSelectorTerms: required, not empty, each term selects by something,
    and id (and for security groups name) alone. The CRD's exclusivity CEL uses `!self.all(...)`: it refuses
    only when every term combines them, so a list with one plain term passes and is not flagged here."""
    where = f"spec.{field}"
    terms = spec.get(field)
    yield from _required(node_class, where, terms, crd, "select by the cluster's karpenter.sh/discovery tag")
    if isinstance(terms, list) and not terms:
        yield finding(node_class, where, "[]", f"{crd} refuses it: {field} cannot be empty", "add a term")
    yield from _at_most(node_class, where, terms, MAX_TERMS, "terms", crd)
    indexed = _dicts(terms)
    for index, term in indexed:
        at = f"{where}[{index}]"
        if not any(_has(term, key) for key in allowed):
            yield finding(
                node_class,
                at,
                term,
                f"{crd} refuses it: expected at least one of {', '.join(allowed)}",
                f"select by {allowed[0]}",
            )
        yield from _matches(
            node_class, f"{at}.id", term.get("id"), re.compile(id_pattern), crd, "write the resource id"
        )
        yield from _term_tags(node_class, f"{at}.tags", term.get("tags"), crd)
    for alone in ("id", "name") if "name" in allowed else ("id",):
        others = [key for key in allowed if key != alone]
        combined = [
            (index, term) for index, term in indexed if _has(term, alone) and any(_has(term, k) for k in others)
        ]
        if combined and len(combined) == len(terms):
            for index, term in combined:
                yield finding(
                    node_class,
                    f"{where}[{index}].{alone}",
                    term.get(alone),
                    f"{crd} refuses it: '{alone}' is mutually exclusive with {', '.join(others)} in a selector term",
                    f"select by {alone} alone or drop it",
                )


def _term_tags(node_class: Resource, where: str, tags: Any, crd: str) -> Iterator[Finding]:
    """Selector-term tags: at most 20, no empty key or value."""
    if not isinstance(tags, dict):
        return
    yield from _at_most(node_class, where, tags, MAX_TAGS, "tags", crd)
    for key, value in tags.items():
        if key == "" or value == "":
            yield finding(
                node_class, f'{where}["{key}"]', value, f"{crd} refuses empty tag keys or values", "give both"
            )


def _ami(node_class: Resource, spec: dict[str, Any], crd: str) -> Iterator[Finding]:
    """amiSelectorTerms: 1-30 terms; id and alias each stand alone; an alias is the only term; alias format and
    family; amiFamily agrees with an alias and is required without one."""
    where = "spec.amiSelectorTerms"
    terms = spec.get("amiSelectorTerms")
    yield from _required(node_class, where, terms, crd, 'select an AMI, e.g. alias "al2023@latest"')
    if isinstance(terms, list) and not terms:
        yield finding(node_class, where, "[]", f"{crd} requires at least 1 term", 'add alias "al2023@latest"')
    yield from _at_most(node_class, where, terms, MAX_TERMS, "terms", crd)
    indexed = _dicts(terms)
    selectors = ("tags", "id", "name", "alias", "ssmParameter")
    for index, term in indexed:
        at = f"{where}[{index}]"
        if not any(_has(term, key) for key in selectors):
            yield finding(
                node_class,
                at,
                term,
                f"{crd} refuses it: expected at least one of {', '.join(selectors)}",
                "select by alias",
            )
        for alone, others in (("id", ("alias", "tags", "name", "owner")), ("alias", ("id", "tags", "name", "owner"))):
            mixed = [key for key in others if _has(term, key)]
            if _has(term, alone) and mixed:
                yield finding(
                    node_class,
                    f"{at}.{alone}",
                    term.get(alone),
                    f"{crd} refuses it: '{alone}' cannot be combined with {', '.join(mixed)}",
                    f"select by {alone} alone",
                )
        if _has(term, "alias") and isinstance(terms, list) and len(terms) != 1:
            yield finding(
                node_class,
                f"{at}.alias",
                term.get("alias"),
                f"{crd} refuses an alias beside other amiSelectorTerms",
                "keep the alias term only",
            )
        yield from _alias(node_class, f"{at}.alias", term.get("alias"), crd)
        yield from _matches(
            node_class, f"{at}.id", term.get("id"), re.compile(r"ami-[0-9a-z]+"), crd, "write an AMI id"
        )
        yield from _term_tags(node_class, f"{at}.tags", term.get("tags"), crd)
    family = spec.get("amiFamily")
    yield from _one_of(node_class, "spec.amiFamily", family, AMI_FAMILIES, crd)
    aliases = [term["alias"] for _, term in indexed if isinstance(term.get("alias"), str)]
    for alias in aliases:
        expected = ALIAS_FAMILIES.get(alias.split("@", 1)[0])  # CEL: alias.find('^[^@]+')
        if family is not None and expected is not None and family not in ("Custom", expected):
            yield finding(
                node_class,
                "spec.amiFamily",
                family,
                f"{crd} requires {expected} or Custom with alias {alias}",
                "drop amiFamily",
            )
    if indexed and not any(_has(term, "alias") for _, term in indexed):
        yield from _required(
            node_class, "spec.amiFamily", family, crd, "set amiFamily (e.g. AL2023) or select by alias"
        )


def _alias(node_class: Resource, key: str, alias: Any, crd: str) -> Iterator[Finding]:
    if not isinstance(alias, str):
        return
    family, _, version = alias.partition("@")
    if len(alias) > ALIAS_MAX:
        problem = f"at most {ALIAS_MAX} characters"
    elif not ALIAS.search(alias):
        problem = "'alias' must match the format 'family@version'"
    elif family not in ALIAS_FAMILIES:
        problem = f"family must be one of {', '.join(ALIAS_FAMILIES)}"
    elif family.startswith("windows") and version != "latest":
        problem = "windows families may only specify version 'latest'"
    else:
        return
    yield finding(
        node_class, key, alias, f"{crd} refuses it: {problem}", 'write e.g. "al2023@latest" or "al2023@v20250505"'
    )


def _tags(node_class: Resource, tags: Any, crd: str) -> Iterator[Finding]:
    """spec.tags: no empty key and none of the tags Karpenter sets itself. The cluster-ownership tags
    (kubernetes.io/cluster/...) are karpenter-pieces-consistent's; only the slash-less prefix is left here."""
    for key, value in tags.items() if isinstance(tags, dict) else ():
        owned = key.startswith("kubernetes.io/cluster") and not key.startswith("kubernetes.io/cluster/")
        if key == "" or key in RESTRICTED_TAGS or owned:
            yield finding(
                node_class,
                f'spec.tags["{key}"]',
                value,
                f"{crd} refuses this tag key (empty or restricted)",
                "drop the tag",
            )


def _block_devices(node_class: Resource, mappings: Any, crd: str) -> Iterator[Finding]:
    where = "spec.blockDeviceMappings"
    indexed = _dicts(mappings)
    roots = [index for index, mapping in indexed if mapping.get("rootVolume") is True]
    for index in roots[1:]:
        yield finding(node_class, f"{where}[{index}].rootVolume", True, f"{crd} allows one root volume", "keep one")
    for index, mapping in indexed:
        ebs = mapping.get("ebs")
        if not isinstance(ebs, dict):
            continue
        at = f"{where}[{index}].ebs"
        if not _has(ebs, "snapshotID") and not _has(ebs, "volumeSize"):
            yield finding(
                node_class,
                f"{at}.volumeSize",
                None,
                f"{crd} requires snapshotID or volumeSize",
                'set volumeSize, e.g. "200Gi"',
            )
        if _has(ebs, "volumeInitializationRate") and ebs.get("snapshotID") in (None, ""):
            yield finding(
                node_class,
                f"{at}.snapshotID",
                ebs.get("snapshotID"),
                f"{crd} requires it with volumeInitializationRate",
                "set snapshotID",
            )
        yield from _matches(
            node_class, f"{at}.volumeSize", ebs.get("volumeSize"), VOLUME_SIZE, crd, 'write a size such as "200Gi"'
        )
        yield from _one_of(node_class, f"{at}.volumeType", ebs.get("volumeType"), VOLUME_TYPES, crd)


RULES = (
    Rule(
        name="nodepool-crd-valid",
        description="Every NodePool passes the pinned karpenter.sh/v1 NodePool CRD's schema and CEL rules: weight, "
        "durations, disruption and budgets, requirements, template labels, taints, nodeClassRef and limits.",
        why="The API server refuses such a NodePool only at `pulumi up`, after other resources changed.",
        remediation="Write the field as the CRD accepts it (the message names the field and the CRD's rule).",
        enforcement="mandatory",
        severity="high",
        check=check_node_pools,
    ),
    Rule(
        name="node-overlay-crd-valid",
        description="Every NodeOverlay passes the pinned karpenter.sh/v1alpha1 NodeOverlay CRD's schema and CEL "
        "rules: price or priceAdjustment, capacity names and quantities, weight and requirements.",
        why="The API server refuses such a NodeOverlay only at `pulumi up`, leaving the pool without its capacity.",
        remediation="Write the field as the CRD accepts it (the message names the field and the CRD's rule).",
        enforcement="mandatory",
        severity="high",
        check=check_node_overlays,
    ),
    Rule(
        name="ec2nodeclass-crd-valid",
        description="Every EC2NodeClass passes the pinned karpenter.k8s.aws/v1 EC2NodeClass CRD's schema and CEL "
        "rules: role or instanceProfile, selector terms, AMI selection, metadata options, tags and volumes.",
        why="The API server refuses such an EC2NodeClass only at `pulumi up`, so no pool can launch nodes.",
        remediation="Write the field as the CRD accepts it (the message names the field and the CRD's rule).",
        enforcement="mandatory",
        severity="high",
        check=check_node_classes,
    ),
)
