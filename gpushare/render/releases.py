"""The stack's Helm releases as plain data, and the id every rendered object is declared and written under."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gpushare import names, pins
from gpushare.charts import ChartLocation
from gpushare.config import StackConfig
from gpushare.render import hami, karpenter

# Karpenter's charts are OCI artifacts (no separate repository); both live beside each other.
KARPENTER_CHART = f"{pins.chart_repository(names.KARPENTER_CHART)}/{names.KARPENTER_CHART}"
KARPENTER_CRD_CHART = f"{pins.chart_repository(names.KARPENTER_CHART)}/{names.KARPENTER_CRD_CHART}"
HAMI_REPOSITORY = pins.chart_repository(names.HAMI_CHART)
NVIDIA_PLUGIN_REPOSITORY = pins.chart_repository(names.NVIDIA_PLUGIN_CHART)


@dataclass(frozen=True)
class HelmRelease:
    """One Helm release: an OCI chart reference has no separate repository."""

    name: str
    namespace: str
    chart: str
    version: str
    repository: str | None
    values: dict[str, Any] = field(default_factory=dict)
    # The karpenter chart also carries CRDs in crds/, which Helm installs once and never upgrades; the
    # karpenter-crd release owns them instead.
    skip_crds: bool = False

    @property
    def chart_name(self) -> str:
        """The chart itself, whether referenced by name or by an OCI path."""
        return self.chart.rsplit("/", 1)[-1]

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "namespace": self.namespace,
            "chart": self.chart,
            "version": self.version,
            "repository": self.repository,
            "skipCrds": self.skip_crds,
            "values": self.values,
        }


def helm_releases(config: StackConfig) -> list[HelmRelease]:
    """Releases in install order; Karpenter's unless it runs in an existing cluster already, the NVIDIA plugin only
    when some pool takes whole GPUs."""
    releases = [] if config.existing_cluster is not None else karpenter_releases(config)
    releases.append(
        HelmRelease(
            names.HAMI_RELEASE,
            names.HAMI_NAMESPACE,
            names.HAMI_CHART,
            config.hami.chart_version,
            HAMI_REPOSITORY,
            hami.hami_values(config),
        )
    )
    if names.NVIDIA_PLUGIN_CHART in config.charts():
        releases.append(
            HelmRelease(
                names.NVIDIA_PLUGIN_RELEASE,
                names.NVIDIA_PLUGIN_NAMESPACE,
                names.NVIDIA_PLUGIN_CHART,
                config.nvidia_device_plugin.chart_version,
                NVIDIA_PLUGIN_REPOSITORY,
                hami.nvidia_device_plugin_values(config),
            )
        )
    return releases


def karpenter_releases(config: StackConfig) -> list[HelmRelease]:
    """The CRD chart, then the controller."""
    return [
        HelmRelease(
            names.KARPENTER_CRD_RELEASE,
            names.KARPENTER_NAMESPACE,
            KARPENTER_CRD_CHART,
            config.karpenter.chart_version,
            None,
        ),
        HelmRelease(
            names.KARPENTER_RELEASE,
            names.KARPENTER_NAMESPACE,
            KARPENTER_CHART,
            config.karpenter.chart_version,
            None,
            karpenter.karpenter_values(config),
            skip_crds=True,
        ),
    ]


def located(releases: Sequence[HelmRelease], locations: Mapping[str, ChartLocation]) -> list[HelmRelease]:
    """The releases with the chart, version and repository `gpushare:charts` chose for their chart (gpushare/charts.py);
    unchanged where it chose the public repositories."""
    return [
        replace(release, chart=where.chart, version=where.version, repository=where.repository)
        if (where := locations.get(release.chart_name)) is not None
        else release
        for release in releases
    ]


def object_id(obj: dict[str, Any]) -> str:
    """Unique, readable id of a rendered object: kind, namespace when namespaced, name (all lower case)."""
    meta = obj["metadata"]
    return "-".join(part for part in (obj["kind"], meta.get("namespace"), meta["name"]) if part).lower()
