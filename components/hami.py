"""HAMi (Helm release with a pinned name) and the mock device plugin that must run beside it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.kube import declare_all, helm_release
from gpushare.render.releases import HelmRelease


@dataclass(frozen=True)
class ChartArgs:
    """Args of Hami and NvidiaDevicePlugin: the rendered release, waiting for the system nodes it runs on (none in
    an existing cluster, whose nodes are there)."""

    release: HelmRelease
    provider: pulumi.ProviderResource
    system_nodes: Sequence[pulumi.Resource]


class _ChartOnSystemNodes(pulumi.ComponentResource):
    """A component holding one Helm release that runs its controllers on the system node group."""

    type_token: str
    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: ChartArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.type_token, name, None, opts)
        self.release = helm_release(args.release, self, args.provider, args.system_nodes)
        self.register_outputs({"release": self.release.name})


class Hami(_ChartOnSystemNodes):
    """The release name is pinned: the Services the stack's ServiceMonitors select are named after it."""

    type_token = "gpushare:index:Hami"


class NvidiaDevicePlugin(_ChartOnSystemNodes):
    """The official plugin, restricted to exclusive pools so no node runs two NVIDIA device plugins."""

    type_token = "gpushare:index:NvidiaDevicePlugin"


@dataclass(frozen=True)
class MockDevicePluginArgs:
    """The rendered RBAC objects, device ConfigMap and DaemonSet (last); `hami` is the release whose nodes' GPUs the
    plugin registers."""

    objects: Sequence[dict[str, Any]]
    provider: pulumi.ProviderResource
    hami: pulumi.Resource


class MockDevicePlugin(pulumi.ComponentResource):
    """Registers gpumem/gpucores/gpumem-percentage so Karpenter can initialise HAMi nodes."""

    daemonset: pulumi.CustomResource

    def __init__(self, name: str, args: MockDevicePluginArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpushare:index:MockDevicePlugin", name, None, opts)
        *needed, daemonset = args.objects
        before = declare_all(needed, self, args.provider, [args.hami])
        [self.daemonset] = declare_all([daemonset], self, args.provider, [args.hami, *before])
        self.register_outputs({})
