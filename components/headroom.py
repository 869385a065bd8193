"""Warm GPU headroom: per team and pool the PodTemplate and the Karpenter CapacityBuffer that keeps nodes for it.

A buffer depends on its template, on both Karpenter releases (the karpenter-crd chart installs its CRD, the
karpenter chart the controller that reads it) and on its pool's NodePool, so `pulumi destroy` deletes the buffer
first: Karpenter drops its virtual pods and the warm nodes go with their NodePool, never orphaned by a controller
removed before them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi

from components.kube import declare_all


@dataclass(frozen=True)
class PoolHeadroom:
    """One pool's warm headroom of one team, as rendered."""

    team: str
    pool: str
    pod_template: dict[str, Any]
    capacity_buffer: dict[str, Any]


@dataclass(frozen=True)
class WarmHeadroomArgs:
    """The rendered buffers; the team namespaces they live in, the Karpenter releases and the NodePools (by pool)
    they must be created after and deleted before."""

    buffers: Sequence[PoolHeadroom]
    provider: pulumi.ProviderResource
    namespaces: Mapping[str, pulumi.Resource]
    karpenter_releases: Sequence[pulumi.Resource]
    node_pools: Mapping[str, pulumi.Resource]


class WarmHeadroom(pulumi.ComponentResource):
    def __init__(self, name: str, args: WarmHeadroomArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpushare:index:WarmHeadroom", name, None, opts)
        for buffer in args.buffers:
            [template] = declare_all([buffer.pod_template], self, args.provider, [args.namespaces[buffer.team]])
            declare_all(
                [buffer.capacity_buffer],
                self,
                args.provider,
                [template, *args.karpenter_releases, args.node_pools[buffer.pool]],
            )
        self.register_outputs({"buffers": [f"{b.team}/{b.pool}" for b in args.buffers]})
