"""Monitoring: Prometheus (or the user's), dcgm-exporter, HAMi-WebUI, scrape objects, alerts, dashboard.

Order: namespace, then kube-prometheus-stack (it installs the ServiceMonitor/PrometheusRule CRDs), then the
exporter and WebUI releases and the scrape objects, so nothing is applied before its CRD exists.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.kube import declare, helm_release
from gpushare import names
from gpushare.render.releases import HelmRelease


@dataclass(frozen=True)
class MonitoringArgs:
    """Rendered by gpushare.render.monitoring; `depends_on` holds the system nodes, the scraped releases and, with
    the stack's own Prometheus, the EBS CSI driver add-on (destroy then deletes its volume claim first)."""

    releases: Sequence[HelmRelease]
    objects: Sequence[dict[str, Any]]
    provider: pulumi.ProviderResource
    depends_on: Sequence[pulumi.Resource]


class Monitoring(pulumi.ComponentResource):
    releases: list[k8s.helm.v3.Release]

    def __init__(self, name: str, args: MonitoringArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpushare:index:Monitoring", name, None, opts)
        namespace, *objects = args.objects
        ns = declare(namespace, pulumi.ResourceOptions(parent=self, provider=args.provider))
        after: list[pulumi.Resource] = [ns, *args.depends_on]
        self.releases = []
        for release in args.releases:
            created = helm_release(release, self, args.provider, after)
            self.releases.append(created)
            if release.name == names.MONITORING_RELEASE:
                after = [*after, created]
        opts_after = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[*after, *self.releases])
        for obj in objects:
            declare(obj, opts_after)
        self.register_outputs({"releases": [release.name for release in args.releases]})
