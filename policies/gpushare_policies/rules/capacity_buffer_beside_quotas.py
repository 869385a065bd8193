"""The warm nodes of a pool's CapacityBuffers keep their room when every other team listing the pool fills its quota
there."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names

from ..headroom import KeptNodes, kept_nodes
from ..kube import Pool, quantity, quotas_in
from ..pools import pools_of_team
from ..rule import Finding, Rule, finding_about
from ..stack import NAMESPACE, StackView, sorted_by_name


def check_buffer_beside_quotas(view: StackView, _config: None) -> Iterator[Finding]:
    on_pool: dict[str, list[KeptNodes]] = {}
    for kept in kept_nodes(view):
        on_pool.setdefault(kept.pool.pool.name, []).append(kept)
    for held in on_pool.values():
        sized = held[0].pool
        quotas = _quotas_on(view, sized.pool, sized.counted, sized.limit)
        headroom = sum(kept.units for kept in held)
        for owner in sorted({kept.buffer.namespace for kept in held}):
            others = [(name, amount) for name, amount in quotas if name != owner]
            taken = sum(amount for _, amount in others)
            if not others or headroom + taken <= sized.limit:
                continue
            shown = ", ".join(f"{name} {amount}" for name, amount in others)
            yield finding_about(
                sized.pool.resource,
                f"its buffers keep nodes worth {headroom} {sized.counted} warm, and the quotas of the teams listing it "
                f"besides {owner} can take {taken} here ({shown}): with {sized.limit} in its limit, once they fill "
                f"their quotas Karpenter cannot refill {owner}'s buffer",
                f"raise maxGpus to hold {headroom + taken}, give {owner} a pool of its own, or lower the other teams' "
                "quotas",
            )


def _quotas_on(view: StackView, pool: Pool, counted: str, limit: int) -> list[tuple[str, int]]:
    """(team, what its quota lets it take of the pool's limit resource, at most the limit) for every team listing
    the pool."""
    found = []
    for namespace in sorted_by_name(view.of_type(NAMESPACE)):
        if names.TEAM_LABEL not in (namespace.get("metadata", "labels") or {}):
            continue
        if pool not in pools_of_team(view, namespace):
            continue
        admitted = [
            amount
            for quota in quotas_in(view, namespace.object_name)
            if (amount := quantity((quota.get("spec", "hard") or {}).get(f"requests.{counted}"))) is not None
        ]
        if admitted:
            found.append((namespace.object_name, min(int(min(admitted)), limit)))
    return found


RULE = Rule(
    name="capacity-buffer-beside-quotas",
    order=54,
    description="On a pool with CapacityBuffers, the buffers' warm nodes plus what the quotas of the other teams "
    "listing the pool can take there (each at most the limit) fit within its NodePool limit.",
    why="Warm nodes count against the pool's limit like busy ones: other teams filling their quotas on the pool "
    "leave Karpenter no room to refill a buffer, exactly when a burst needs it.",
    remediation="Raise the pool's maxGpus above the headroom plus the other teams' quotas, or give the team with "
    "headroom a pool of its own.",
    enforcement="advisory",
    severity="medium",
    check=check_buffer_beside_quotas,
)
