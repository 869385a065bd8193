"""Each team namespace keeps its pods within what the stack gave the team: Pod Security at least baseline, no
LimitRange that puts GPU resources on every container, and a Deny-bound admission policy that caps the pods'
priority at the team's tier and their pool selectors at the team's pools.

Why each: a privileged pod (hostPath, hostPID, privileged containers: what baseline forbids) on a shared GPU node
reads other pods' GPU memory and escapes HAMi's per-container limits, which live in the container; a LimitRange
default or min on a GPU resource becomes every container's request (kubernetes.io/docs/concepts/policy/
limit-range/: a max without a default is the default limit), so every pod asks for a GPU; without the priority
cap a team names a higher PriorityClass and preempts other teams; without the pool cap a team selects another
team's pool, which its quota does not tell apart (one vGPU quota covers every HAMi pool).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from gpushare import names

from ..admission import ADMISSION_API, binding_without_deny, denying_validations
from ..kube import by_namespace, pools
from ..pools import pools_of_team
from ..rule import Finding, Rule, finding, finding_about
from ..stack import LIMIT_RANGE, NAMESPACE, Resource, StackView, sorted_by_name

ENFORCE = names.POD_SECURITY_ENFORCE_LABEL
LEVELS = ("baseline", "restricted")
# LimitRange fields that put a resource on every container (default, defaultRequest) or require it (min, and max,
# which becomes the default limit when no default is given).
APPLIED = ("default", "defaultRequest", "min", "max")
POOL_KEYS = (names.POOL_LABEL, names.NODEPOOL_LABEL)
PRIORITY_SET = re.compile(r"priority: (\d+)")
CEILING = re.compile(r"object\.spec\.priority <= (\d+)")
QUOTED = re.compile(r"'([^']*)'")


def _is_gpu(resource: str) -> bool:
    return resource.startswith("nvidia.com/")


def _tier(view: StackView, team: str) -> int | None:
    """The priority the team's priority policy gives its pods, None without one."""
    policy = view.objects(f"{ADMISSION_API}:MutatingAdmissionPolicy", f"gpushare-{team}-priority")
    text = str(policy[0].get("spec", "mutations")) if policy else ""
    found = PRIORITY_SET.search(text)
    return int(found.group(1)) if found else None


def _pod_security(namespace: Resource) -> Iterator[Finding]:
    level = (namespace.get("metadata", "labels") or {}).get(ENFORCE)
    if level not in LEVELS:
        yield finding(
            namespace,
            f'metadata.labels["{ENFORCE}"]',
            level,
            "without baseline a team may run privileged or hostPath pods on shared GPU nodes, which read other "
            "teams' GPU memory and escape HAMi's limits (unset means privileged)",
            'set it to "baseline" or "restricted"',
        )


def _limit_ranges(view: StackView, namespace: str) -> Iterator[Finding]:
    in_namespace = view.memo(
        "limit-ranges-by-namespace", lambda: by_namespace(sorted_by_name(view.of_type(LIMIT_RANGE)))
    )
    for limit_range in in_namespace.get(namespace, ()):
        for index, limit in enumerate(limit_range.get("spec", "limits") or []):
            for field in APPLIED:
                for resource in sorted((limit.get(field) or {}) if isinstance(limit, dict) else {}):
                    if _is_gpu(resource):
                        yield finding(
                            limit_range,
                            f"spec.limits[{index}].{field}[{resource}]",
                            limit[field][resource],
                            f"every container in namespace {namespace} then asks {resource}, CPU-only ones included",
                            f"remove {resource} from {field}: pods ask GPUs themselves, and the team's ResourceQuota "
                            "and per-GPU limit policy bound them",
                        )


def _admission(view: StackView, namespace: Resource) -> Iterator[Finding]:
    team = namespace.object_name
    validations = denying_validations(view).get(team, [])
    expressions = [(policy, str(v.get("expression"))) for policy, v in validations]
    fix = f"keep gpushare's policy gpushare-{team}-isolation and its Deny binding"
    weak = binding_without_deny(view, f"gpushare-{team}-isolation")
    if weak is not None:
        yield finding(
            weak,
            "spec.validationActions",
            weak.get("spec", "validationActions"),
            "without Deny the team's isolation policy refuses nothing: pods above the team's tier or on other "
            "teams' pools are admitted",
            'set it to ["Deny"]',
        )
        return
    ceilings = [(policy, int(m.group(1))) for policy, e in expressions if (m := CEILING.search(e))]
    tier = _tier(view, team)
    if not ceilings:
        yield finding_about(
            namespace,
            "no ValidatingAdmissionPolicy bound with Deny to this team namespace caps spec.priority: a pod naming "
            "a higher PriorityClass (another tier, system-node-critical) preempts other teams' pods",
            fix,
        )
    for policy, ceiling in ceilings:
        if tier is not None and ceiling > tier:
            yield finding_about(
                policy,
                f"it lets pods of team {team} run at priority up to {ceiling}, above {tier}, the tier its priority "
                "policy gives",
                f"compare object.spec.priority with {tier}",
            )
    own = {pool.name for pool in pools_of_team(view, namespace)}
    every_pool = view.memo("pool-names", lambda: frozenset(pool.name for pool in pools(view)))
    guards = [(p, e) for p, e in expressions if all(f"'{key}'" in e for key in POOL_KEYS)]
    if not guards:
        yield finding_about(
            namespace,
            f"no ValidatingAdmissionPolicy bound with Deny to this team namespace limits {' and '.join(POOL_KEYS)} "
            f"selectors to the team's pools ({', '.join(sorted(own))}): its pods can select another team's pool, "
            "which its quota does not tell apart",
            fix,
        )
    for policy, expression in guards:
        allowed = sorted(every_pool.intersection(QUOTED.findall(expression)) - own)
        if allowed:
            yield finding_about(
                policy,
                f"it lets pods of team {team} select pools {', '.join(allowed)}, which the team does not list",
                f"allow only pools {', '.join(sorted(own))}",
            )


def check_isolation(view: StackView, _config: None) -> Iterator[Finding]:
    for namespace in sorted_by_name(view.of_type(NAMESPACE)):
        if names.TEAM_LABEL not in (namespace.get("metadata", "labels") or {}):
            continue
        yield from _pod_security(namespace)
        yield from _limit_ranges(view, namespace.object_name)
        yield from _admission(view, namespace)


RULE = Rule(
    name="team-namespace-isolation",
    order=39,
    description=f"Every team namespace enforces Pod Security baseline or restricted ({ENFORCE}), has no LimitRange "
    "default, defaultRequest, min or max on an nvidia.com/ resource, and has a Deny-bound ValidatingAdmissionPolicy "
    f"capping spec.priority at the team's tier and {' and '.join(POOL_KEYS)} selectors at the team's pools.",
    why="Privileged pods escape HAMi's isolation on shared nodes; a GPU LimitRange default makes every pod ask a GPU; "
    "without the caps a team preempts other teams with a higher class or fills their pools.",
    remediation=f"Keep the namespace label {ENFORCE}: baseline, the LimitRange without GPU resources and the "
    "isolation policy gpushare renders per team (gpushare-<team>-isolation).",
    enforcement="mandatory",
    severity="high",
    check=check_isolation,
)
