"""The schema of the whole stack file: StackConfig, its top-level keys and gpushare:charts, and each string rule in
words."""

from __future__ import annotations

from pydantic import Field, model_validator

from gpushare import images, karpenter_api, names, pins
from gpushare.config.base import (
    DNS_LABEL,
    PROJECT,
    ConfigModel,
    MirrorPrefix,
    NonEmpty,
    UpstreamRegistry,
    text_matching,
)
from gpushare.config.cluster import ClusterConfig
from gpushare.config.controllers import HamiConfig, KarpenterConfig, NvidiaDevicePluginConfig
from gpushare.config.existing import ExistingClusterConfig
from gpushare.config.monitoring import SECRET_KEY, SECRET_NAME, MonitoringConfig
from gpushare.config.pools import PoolConfig
from gpushare.config.teams import TeamConfig
from gpushare.errors import raise_at

MirrorUrl = text_matching(
    r"(oci|https?)://\S+[^/\s]", "an oci:// registry path or http(s):// Helm repository without trailing slash"
)


class ChartSourceConfig(ConfigModel):
    """Where the Helm releases take their charts instead of the public repositories (air-gapped installs)."""

    folder: NonEmpty | None = Field(
        default=None,
        description="Folder of chart archives named <chart>-<version>.tgz, as `helm package` and `helm pull` name them",
    )
    repository: MirrorUrl | None = Field(
        default=None,
        description="A mirror: an oci:// registry path holding the charts, or an http(s) Helm repository serving "
        "all of them",
    )

    @model_validator(mode="after")
    def _one_source(self) -> ChartSourceConfig:
        if (self.folder is None) == (self.repository is None):
            given = "both" if self.folder is not None else "neither"
            raise_at([(("folder",), f"{given} of folder and repository set; allowed: exactly one of them")])
        return self


class StackConfig(ConfigModel):
    """The whole stack: cluster, controllers, GPU pools and the teams that share them."""

    region: str = Field(pattern=r"^[a-z]{2}(-gov)?-[a-z]+-[0-9]$", description="AWS region of the stack")
    cluster: ClusterConfig = Field(description="The EKS cluster")
    karpenter: KarpenterConfig = Field(default=KarpenterConfig(), description="Karpenter")
    hami: HamiConfig = Field(default=HamiConfig(), description="HAMi")
    nvidia_device_plugin: NvidiaDevicePluginConfig = Field(
        default=NvidiaDevicePluginConfig(), alias="nvidiaDevicePlugin", description="NVIDIA device plugin"
    )
    pools: tuple[PoolConfig, ...] = Field(min_length=1, description="GPU pools")
    teams: tuple[TeamConfig, ...] = Field(min_length=1, description="Teams sharing the pools")
    monitoring: MonitoringConfig = Field(default=MonitoringConfig(), description="Monitoring")
    existing_cluster: ExistingClusterConfig | None = Field(
        default=None,
        alias="existingCluster",
        description="Install onto this existing cluster and its Karpenter instead of creating them "
        "(docs/existing-cluster.md)",
    )
    chart_source: ChartSourceConfig | None = Field(
        default=None,
        alias="charts",
        description="Take the Helm charts from this folder or mirror instead of the public repositories",
    )
    registry_mirrors: dict[UpstreamRegistry, MirrorPrefix] = Field(
        default={},
        alias="registryMirrors",
        description=f"Upstream registry ({', '.join(images.UPSTREAM_REGISTRIES)}) -> mirror prefix every image of that "
        "registry is pulled through, a registry you run (not a namespace on a public registry), e.g. an ECR "
        "pull-through cache <account>.dkr.ecr.<region>.amazonaws.com/docker-hub",
    )
    trusted_registries: tuple[MirrorPrefix, ...] = Field(
        default=(),
        alias="trustedRegistries",
        description="Registries you run (host[/path], not a namespace on a public registry nor a host imitating one) "
        "holding copies of the upstream images at paths of your own, e.g. a private ECR repository "
        "<account>.dkr.ecr.<region>.amazonaws.com/platform: an image there named like an upstream one (.../hami) "
        "counts as that image; pass the same list to the pack (image-provenance.trustedRegistries)",
    )

    def pool(self, name: str) -> PoolConfig:
        return next(p for p in self.pools if p.name == name)

    @property
    def karpenter_version(self) -> str:
        """The Karpenter the stack's objects are read by: the one it installs, or the one running there."""
        existing = self.existing_cluster
        return existing.karpenter.version if existing is not None else self.karpenter.chart_version

    @property
    def karpenter_version_key(self) -> str:
        """The key that holds karpenter_version, as error lines name it."""
        if self.existing_cluster is not None:
            return f"{PROJECT}:existingCluster.karpenter.version"
        return f"{PROJECT}:karpenter.chartVersion"

    def uses_hami(self, team: TeamConfig) -> bool:
        """The team has a HAMi pool: its pods go through HAMi's webhook and scheduler."""
        return any(self.pool(name).sharing == names.SHARING_HAMI for name in team.pools)

    def chart_version(self, chart: str) -> str:
        """The version of a chart the stack deploys: its version key where it has one, else the pin."""
        held = {
            names.KARPENTER_CHART: self.karpenter.chart_version,
            names.KARPENTER_CRD_CHART: self.karpenter.chart_version,
            names.HAMI_CHART: self.hami.chart_version,
            names.NVIDIA_PLUGIN_CHART: self.nvidia_device_plugin.chart_version,
        }
        return held.get(chart) or pins.chart_version(chart)

    def charts(self) -> frozenset[str]:
        """The charts the stack deploys a release of: HAMi's always, Karpenter's unless it exists already, the NVIDIA
        device plugin with any pool HAMi does not slice, dcgm-exporter and HAMi-WebUI with monitoring, and
        kube-prometheus-stack then unless an existing Prometheus is used. The renderers and the config checks decide
        with this one answer."""
        charts = {names.HAMI_CHART}
        if self.existing_cluster is None:
            charts |= {names.KARPENTER_CRD_CHART, names.KARPENTER_CHART}
        if any(pool.sharing != names.SHARING_HAMI for pool in self.pools):
            charts.add(names.NVIDIA_PLUGIN_CHART)
        if self.monitoring.enabled:
            charts |= {names.DCGM_CHART, names.WEBUI_CHART}
            if self.monitoring.existing_prometheus is None:
                charts.add(names.KUBE_PROMETHEUS_STACK_CHART)
        return frozenset(charts)


# The `gpushare:*` keys a stack file may set: every StackConfig field but the region (which is `aws:region`).
CONFIG_KEYS = tuple(field.alias or name for name, field in StackConfig.model_fields.items() if name != "region")

# Each string pattern a key above takes, in words: a refused value is told the rule, never the regular expression
# (gpushare/wording.py; tests/gpushare/test_wording.py holds this table to the patterns the schema uses).
PATTERN_RULES: dict[str, str] = {
    r"^[a-z]{2}(-gov)?-[a-z]+-[0-9]$": "an AWS region name like us-west-2",
    r"^[a-z][a-z0-9-]{0,30}[a-z0-9]$": "a name of 2 to 32 lower-case letters, digits and '-', starting with a "
    "letter and ending with a letter or digit, e.g. gpushare-dev",
    r"^1\.[0-9]{2}$": 'a Kubernetes minor version written as a string, like "1.36"',
    r"^vpc-[0-9a-f]{8,17}$": "a VPC id: vpc- and 8 to 17 hex digits, e.g. vpc-0abc1234def567890",
    r"^(latest|v[0-9]{8})$": "latest or an EKS AMI release like v20260903",
    r"^[0-9]+\.[0-9]+\.[0-9]+$": "a chart version: three numbers without a leading v, e.g. 0.20.1",
    DNS_LABEL: "a name of 1 to 32 lower-case letters, digits and '-', starting with a letter and ending with a "
    "letter or digit, e.g. ml-research",
    karpenter_api.DURATION_OR_NEVER_PATTERN: "a duration in hours, minutes and seconds like 30s, 5m or 1h30m, or Never",
    karpenter_api.DURATION_PATTERN: "a duration in hours, minutes and seconds like 30s, 5m or 1h30m",
    karpenter_api.BUDGET_NODES_PATTERN: "a number of nodes like 1, or a percentage from 0% to 100% like 10%",
    karpenter_api.BUDGET_DURATION_PATTERN: "a duration in hours and minutes like 30m, 8h or 1h30m",
    r"^arn:aws[a-z-]*:iam::[0-9]{12}:role/[\w+=,.@/-]+$": "an IAM role ARN like "
    "arn:aws:iam::123456789012:role/ml-research",
    r"^([1-9][0-9]*m|[1-9][0-9]*(\.[0-9]{1,3})?|0\.[0-9]{0,2}[1-9])$": "an amount of CPU like 2, 0.5 or 500m",
    r"^[1-9][0-9]*(Mi|Gi)$": "an amount of memory in Mi or Gi like 4096Mi or 16Gi",
    r"^[0-9]+(h|d|w)$": "a time in hours, days or weeks like 12h, 15d or 2w",
    r"^[1-9][0-9]*Gi$": "a size in Gi like 50Gi",
    r"^https?://[^\s/]+(:[0-9]+)?(/\S*)?$": "an http or https URL like http://prometheus.monitoring:9090",
    SECRET_NAME: "a Kubernetes Secret name: lower-case letters, digits, '-' and '.', starting and ending with a "
    "letter or digit, e.g. alertmanager-slack",
    SECRET_KEY: "a key of a Secret's data: letters, digits, '-', '_' and '.', e.g. webhook-url",
    r"^[#@][^\s#@]{1,80}$": "a Slack channel like #gpu-alerts, or a user like @someone, without spaces",
}
