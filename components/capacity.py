"""GPU capacity: per pool its NodeOverlays and NodePool, after Karpenter and the device plugins exist.

Each NodePool depends on its overlays, the node class, both Karpenter releases and the device plugin of
its sharing mode, so `pulumi destroy` removes pools (waiting for their nodes) before any of those.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulumi

from components.kube import declare_all
from gpushare.config import StackConfig
from gpushare.render.karpenter import node_overlays, node_pool, node_pool_delete_timeout


@dataclass(frozen=True)
class GpuCapacityArgs:
    """The whole config: overlays and pools are rendered from the catalog, HAMi profile and pools together.
    `plugin_dependencies` maps a sharing mode (hami, exclusive, timeslice) to the plugins its nodes need."""

    config: StackConfig
    provider: pulumi.ProviderResource
    karpenter_dependencies: Sequence[pulumi.Resource]
    plugin_dependencies: Mapping[str, Sequence[pulumi.Resource]]


class GpuCapacity(pulumi.ComponentResource):
    node_pools: list[pulumi.CustomResource]

    def __init__(self, name: str, args: GpuCapacityArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpushare:index:GpuCapacity", name, None, opts)
        config, provider, karpenter = args.config, args.provider, args.karpenter_dependencies
        self.node_pools = []
        for pool in config.pools:
            overlays = declare_all(node_overlays(config, pool), self, provider, karpenter)
            [pool_resource] = declare_all(
                [node_pool(config, pool)],
                self,
                provider,
                [*karpenter, *args.plugin_dependencies[pool.sharing], *overlays],
                pulumi.CustomTimeouts(delete=node_pool_delete_timeout(pool)),
            )
            self.node_pools.append(pool_resource)
        self.register_outputs({"pools": [pool.name for pool in config.pools]})
