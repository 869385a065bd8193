"""Keys without effect: what the stack file sets that changes nothing in this combination, warned about, not
refused."""

from __future__ import annotations

from gpushare import images, karpenter_api, names
from gpushare.config import PROJECT, StackConfig


def ineffective_keys(config: StackConfig) -> list[str]:
    """Keys the stack file sets that change nothing in this combination and mislead no one: one warning line each
    (`make plan` prints them, `pulumi up` logs them). Combinations that would make someone believe a thing is done
    (an alert receiver without monitoring, a scheduler policy no HAMi reads) are refused instead."""
    found: list[str] = []
    monitoring = config.monitoring
    if not monitoring.enabled:
        found += [
            f"{PROJECT}:monitoring.{key}: has no effect while gpushare:monitoring.enabled is false: nothing is "
            "deployed that reads it"
            for key in monitoring.given("retention", "storage_size", "storage_class", "alerts")
        ]
    if not any(pool.sharing == names.SHARING_HAMI for pool in config.pools):
        found += [
            f"{PROJECT}:hami.{key}: has no effect: no pool has sharing hami, so HAMi slices no GPU and the mock "
            "registers on no node"
            for key in config.hami.given("profile", "scheduler_policy", "mock_device_plugin_image")
        ]
    charts = config.charts()
    if config.given("nvidia_device_plugin") and names.NVIDIA_PLUGIN_CHART not in charts:
        found.append(
            f"{PROJECT}:nvidiaDevicePlugin: has no effect: every pool has sharing hami, so the NVIDIA device plugin "
            "is not deployed"
        )
    pulled = images.registries(charts) | {images.split_registry(config.hami.mock_device_plugin_image)[0]}
    found += [
        f"{PROJECT}:registryMirrors.{registry}: has no effect: no image this stack deploys comes from {registry} "
        f"(they come from {', '.join(sorted(pulled))})"
        for registry in config.registry_mirrors
        if registry not in pulled
    ]
    for i, pool in enumerate(config.pools):
        disruption = pool.disruption
        never = karpenter_api.reasons_never_disrupted(disruption.consolidation_policy, disruption.consolidate_after)
        found += [
            f"{PROJECT}:pools[{i}].disruption.budgets[{j}].reasons: {list(budget.reasons)} has no effect: a pool with "
            f"consolidationPolicy {disruption.consolidation_policy} and consolidateAfter "
            f"{disruption.consolidate_after} never disrupts a node for those reasons, so the budget never limits "
            "anything"
            for j, budget in enumerate(disruption.budgets)
            if budget.reasons and set(budget.reasons) <= never
        ]
    found += [
        f"{PROJECT}:teams[{i}].spotOnly: has no effect: every pool of the team ({', '.join(team.pools)}) offers spot "
        "capacity only"
        for i, team in enumerate(config.teams)
        if team.spot_only
        and all(config.pool(name).capacity_types == (names.CAPACITY_TYPE_SPOT,) for name in team.pools)
    ]
    return found
