"""GPU capacity: per pool its NodeOverlays and NodePool, after Karpenter and the device plugins exist.

Each NodePool depends on its overlays, the node class, both Karpenter releases and the device plugin of
its sharing mode, so `pulumi destroy` removes pools (waiting for their nodes) before any of those.
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi

from components.cluster import Cluster
from components.kube import declare_all
from gpushare.config import StackConfig
from gpushare.render.karpenter import node_overlays, node_pool, node_pool_delete_timeout


class GpuCapacity(pulumi.ComponentResource):
    node_pools: list[pulumi.CustomResource]

    def __init__(
        self,
        name: str,
        config: StackConfig,
        cluster: Cluster,
        karpenter_dependencies: Sequence[pulumi.Resource],
        plugin_dependencies: dict[str, Sequence[pulumi.Resource]],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """`plugin_dependencies` maps a sharing mode (hami, exclusive) to the plugins its nodes need."""
        super().__init__("gpushare:index:GpuCapacity", name, None, opts)
        self.node_pools = []
        for pool in config.pools:
            overlays = declare_all(node_overlays(config, pool), self, cluster.provider, karpenter_dependencies)
            [pool_resource] = declare_all(
                [node_pool(config, pool)],
                self,
                cluster.provider,
                [*karpenter_dependencies, *plugin_dependencies[pool.sharing], *overlays],
                pulumi.CustomTimeouts(delete=node_pool_delete_timeout(pool)),
            )
            self.node_pools.append(pool_resource)
        self.register_outputs({"pools": [pool.name for pool in config.pools]})
