"""GPU capacity: per pool its NodeOverlays and NodePool, after Karpenter and the device plugins exist.

Each NodePool depends on its overlays, the node class, both Karpenter releases and the device plugin of
its sharing mode, so `pulumi destroy` removes pools (waiting for their nodes) before any of those.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi

from components.kube import declare_all


@dataclass(frozen=True)
class PoolObjects:
    """One pool as rendered: its NodePool, its overlays, its sharing mode (which device plugin its nodes need)
    and how long Pulumi waits for the NodePool's deletion."""

    name: str
    sharing: str
    node_pool: dict[str, Any]
    overlays: Sequence[dict[str, Any]]
    delete_timeout: str


@dataclass(frozen=True)
class GpuCapacityArgs:
    """The rendered pools; `plugin_dependencies` maps a sharing mode (hami, exclusive, timeslice) to the plugins
    its nodes need."""

    pools: Sequence[PoolObjects]
    provider: pulumi.ProviderResource
    karpenter_dependencies: Sequence[pulumi.Resource]
    plugin_dependencies: Mapping[str, Sequence[pulumi.Resource]]


class GpuCapacity(pulumi.ComponentResource):
    """Exposes each pool's NodePool by pool name: what a pool's warm headroom must go before on destroy."""

    node_pools: dict[str, pulumi.CustomResource]

    def __init__(self, name: str, args: GpuCapacityArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpushare:index:GpuCapacity", name, None, opts)
        provider, karpenter = args.provider, args.karpenter_dependencies
        self.node_pools = {}
        for pool in args.pools:
            overlays = declare_all(pool.overlays, self, provider, karpenter)
            [pool_resource] = declare_all(
                [pool.node_pool],
                self,
                provider,
                [*karpenter, *args.plugin_dependencies[pool.sharing], *overlays],
                pulumi.CustomTimeouts(delete=pool.delete_timeout),
            )
            self.node_pools[pool.name] = pool_resource
        self.register_outputs({"pools": [pool.name for pool in args.pools]})
