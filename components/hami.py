"""HAMi (Helm release with a pinned name) and the mock device plugin that must run beside it."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components.cluster import Cluster
from components.kube import declare_all, helm_release
from gpushare.config import StackConfig
from gpushare.render.hami import mock_device_plugin_objects
from gpushare.render.stack import HelmRelease


class _ChartOnSystemNodes(pulumi.ComponentResource):
    """A component holding one Helm release that runs its controllers on the system node group."""

    type_token: str
    release: k8s.helm.v3.Release

    def __init__(
        self, name: str, release: HelmRelease, cluster: Cluster, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(self.type_token, name, None, opts)
        self.release = helm_release(release, self, cluster.provider, [cluster.system_nodes])
        self.register_outputs({"release": self.release.name})


class Hami(_ChartOnSystemNodes):
    """The release name is pinned: the mock plugin reads the ConfigMap named after it."""

    type_token = "gpushare:index:Hami"


class NvidiaDevicePlugin(_ChartOnSystemNodes):
    """The official plugin, restricted to exclusive pools so no node runs two NVIDIA device plugins."""

    type_token = "gpushare:index:NvidiaDevicePlugin"


class MockDevicePlugin(pulumi.ComponentResource):
    """Registers gpumem/gpucores/gpumem-percentage so Karpenter can initialise HAMi nodes."""

    daemonset: pulumi.CustomResource

    def __init__(
        self, name: str, config: StackConfig, cluster: Cluster, hami: Hami, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpushare:index:MockDevicePlugin", name, None, opts)
        *access, daemonset = mock_device_plugin_objects(config)
        rbac = declare_all(access, self, cluster.provider, [hami.release])
        [self.daemonset] = declare_all([daemonset], self, cluster.provider, [hami.release, *rbac])
        self.register_outputs({})
