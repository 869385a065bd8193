"""Typed stack configuration: every `gpushare:*` key as a model with its field validators.

A schema only, below the domain layer: checks that need the catalog or pool capacities (cross-key rules) live
in `gpushare/checks/`, which `gpushare/loader.py` runs after reading the raw stack config into a StackConfig.
"""

from __future__ import annotations

from typing import Annotated, Any

import yaml
from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from gpushare import images, karpenter_api, names, pins, versions
from gpushare.config.base import (
    DNS_LABEL,
    PROJECT,
    ConfigModel,
    ConsolidationPolicy,
    MirrorPrefix,
    NonEmpty,
    Priority,
    SecurityGroupId,
    SubnetId,
    UpstreamRegistry,
    principal_key,
    text_matching,
    trusted_registries_context,
)
from gpushare.config.cluster import ClusterConfig, NetworkConfig
from gpushare.config.controllers import HamiConfig, KarpenterConfig, NvidiaDevicePluginConfig, karpenter_release
from gpushare.config.monitoring import SECRET_KEY, SECRET_NAME, AlertReceiverConfig, MonitoringConfig
from gpushare.config.pools import PoolConfig
from gpushare.config.teams import (
    CONTAINER_DEFAULT_CPU,
    CONTAINER_DEFAULT_MEMORY,
    HeadroomConfig,
    HeadroomShapeConfig,
    TeamConfig,
)
from gpushare.errors import raise_at

# IAM names as Karpenter's EC2NodeClass takes them (spec.role, spec.instanceProfile): names, not ARNs.
IamRoleName = text_matching(r"[\w+=,.@-]{1,64}", "an IAM role name (not an ARN) like KarpenterNodeRole-platform")
InstanceProfileName = text_matching(
    r"[\w+=,.@-]{1,128}", "an instance profile name (not an ARN) like KarpenterNodeInstanceProfile-platform"
)


NamespaceName = text_matching(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", "a namespace name like kube-system")
DeploymentName = text_matching(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?", "a Deployment name like karpenter")
MirrorUrl = text_matching(
    r"(oci|https?)://\S+[^/\s]", "an oci:// registry path or http(s):// Helm repository without trailing slash"
)
SecurityGroupName = text_matching(r"\S.{0,254}", "a security group name")


def _kubeconfig_text(value: Any) -> Any:
    """A kubeconfig document, refused without repeating it: it holds credentials."""
    if value is None:
        return value
    if not isinstance(value, str) or not value.strip():
        raise ValueError(
            "is not kubeconfig text; allowed: the whole file as one string, held as a secret (pulumi config set "
            "--secret --path 'gpushare:existingCluster.kubeconfig' \"$(cat kubeconfig)\")"
        )
    try:
        document = yaml.safe_load(value)
    except yaml.YAMLError:
        document = None
    if not isinstance(document, dict) or not isinstance(document.get("clusters"), list):
        raise ValueError("is not a kubeconfig (a YAML or JSON document with clusters, contexts and users)")
    return value


def kubeconfig_contexts(text: str) -> list[str]:
    """The context names a kubeconfig (already checked by `_kubeconfig_text`) defines."""
    contexts = yaml.safe_load(text).get("contexts") or []
    return [str(c.get("name")) for c in contexts if isinstance(c, dict)]


class SubnetSelectorTermConfig(ConfigModel):
    """One subnet selector term of the EC2NodeClass (spec.subnetSelectorTerms): subnets with all these tags, or one
    subnet by id."""

    tags: dict[str, str] = Field(default={}, description="Subnets carrying every one of these tags")
    id: SubnetId | None = Field(default=None, description="One subnet by id")

    @model_validator(mode="after")
    def _one_way(self) -> SubnetSelectorTermConfig:
        _one_selector(self, ("tags", "id"), self.tags)
        return self


class SecurityGroupSelectorTermConfig(ConfigModel):
    """One security group selector term of the EC2NodeClass (spec.securityGroupSelectorTerms)."""

    tags: dict[str, str] = Field(default={}, description="Security groups carrying every one of these tags")
    id: SecurityGroupId | None = Field(default=None, description="One security group by id")
    name: SecurityGroupName | None = Field(default=None, description="One security group by name")

    @model_validator(mode="after")
    def _one_way(self) -> SecurityGroupSelectorTermConfig:
        _one_selector(self, ("tags", "id", "name"), self.tags)
        return self


def _one_selector(term: ConfigModel, fields: tuple[str, ...], tags: dict[str, str]) -> None:
    """A term selects by exactly one of its fields: the EC2NodeClass CRD refuses tags beside an id or a name."""
    given = [field for field in fields if getattr(term, field)]
    if len(given) != 1:
        what = "none" if not given else " and ".join(given)
        raise_at([((), f"sets {what}; allowed: exactly one of {', '.join(fields)}")])
    empty = [key for key, value in tags.items() if not key or not value]
    raise_at([(("tags", key), "the EC2NodeClass CRD refuses empty tag keys and values") for key in empty])


class NodeClassConfig(ConfigModel):
    """What the stack's EC2NodeClass needs from an existing cluster: the IAM identity of the GPU nodes (one that
    can join the cluster: an EC2_LINUX access entry or an aws-auth mapping) and where they launch."""

    role: IamRoleName | None = Field(
        default=None,
        description="IAM role name of the GPU nodes (Karpenter creates their instance profile); or instanceProfile",
    )
    instance_profile: InstanceProfileName | None = Field(
        default=None, alias="instanceProfile", description="Existing instance profile of the GPU nodes; or role"
    )
    subnet_selector_terms: tuple[SubnetSelectorTermConfig, ...] = Field(
        default=(),
        alias="subnetSelectorTerms",
        max_length=30,
        description="Subnets of the GPU nodes (default: tagged karpenter.sh/discovery: <cluster name>)",
    )
    security_group_selector_terms: tuple[SecurityGroupSelectorTermConfig, ...] = Field(
        default=(),
        alias="securityGroupSelectorTerms",
        max_length=30,
        description="Security groups of the GPU nodes (default: tagged karpenter.sh/discovery: <cluster name>)",
    )

    @model_validator(mode="after")
    def _one_identity(self) -> NodeClassConfig:
        if (self.role is None) == (self.instance_profile is None):
            given = "both" if self.role is not None else "neither"
            raise_at([(("role",), f"{given} of role and instanceProfile set; allowed: exactly one of them")])
        return self


class KarpenterGatesConfig(ConfigModel):
    """The feature gates the existing Karpenter runs with, as its chart's settings.featureGates spells them: the
    stack needs nodeOverlay when a pool has overlays, capacityBuffer when a team keeps headroom."""

    node_overlay: bool = Field(
        default=False, alias="nodeOverlay", description="NodeOverlay gate on (FEATURE_GATES NodeOverlay=true)"
    )
    capacity_buffer: bool = Field(
        default=False,
        alias="capacityBuffer",
        description="CapacityBuffer gate on (FEATURE_GATES CapacityBuffer=true)",
    )


class ExistingKarpenterConfig(ConfigModel):
    """The Karpenter that already runs in the cluster; `pulumi up` reads its Deployment to check the gates."""

    version: Annotated[str, AfterValidator(karpenter_release)] = Field(
        description=f"Its version (chart tag like 1.15.1); {versions.feature('node-overlay').minimum} or newer, "
        "judged like gpushare:karpenter.chartVersion"
    )
    namespace: NamespaceName = Field(default=names.KARPENTER_NAMESPACE, description="Its namespace")
    deployment: DeploymentName = Field(
        default=names.KARPENTER_RELEASE,
        description="Its controller Deployment, named after its Helm release (the Service the stack's ServiceMonitor "
        "selects is too), whose FEATURE_GATES `pulumi up` checks",
    )
    feature_gates: KarpenterGatesConfig = Field(
        default=KarpenterGatesConfig(), alias="featureGates", description="The gates it runs with"
    )


class ExistingClusterConfig(ConfigModel):
    """An EKS cluster that exists, with Karpenter running: the stack installs only the GPU layer, through one
    Kubernetes provider, and creates no AWS resource (docs/existing-cluster.md)."""

    kubeconfig: Annotated[str | None, BeforeValidator(_kubeconfig_text)] = Field(
        default=None,
        description="Kubeconfig of the cluster, as a Pulumi secret (unset: the ambient kubeconfig, KUBECONFIG or "
        "~/.kube/config)",
    )
    context: NonEmpty | None = Field(
        default=None, description="Context of that kubeconfig to use (unset: its current-context)"
    )
    karpenter: ExistingKarpenterConfig = Field(description="The Karpenter running there")
    node_class: NodeClassConfig = Field(alias="nodeClass", description="What the GPU EC2NodeClass needs")

    @model_validator(mode="after")
    def _context_exists(self) -> ExistingClusterConfig:
        if self.kubeconfig is not None and self.context is not None:
            known = kubeconfig_contexts(self.kubeconfig)
            if self.context not in known:
                raise_at([(("context",), f"{self.context!r} is no context of kubeconfig; allowed: {', '.join(known)}")])
        return self


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

__all__ = [
    "CONFIG_KEYS",
    "CONTAINER_DEFAULT_CPU",
    "CONTAINER_DEFAULT_MEMORY",
    "PATTERN_RULES",
    "PROJECT",
    "AlertReceiverConfig",
    "ClusterConfig",
    "ConsolidationPolicy",
    "ExistingClusterConfig",
    "ExistingKarpenterConfig",
    "HeadroomConfig",
    "HeadroomShapeConfig",
    "MonitoringConfig",
    "NetworkConfig",
    "PoolConfig",
    "Priority",
    "SecurityGroupSelectorTermConfig",
    "StackConfig",
    "SubnetSelectorTermConfig",
    "TeamConfig",
    "principal_key",
    "trusted_registries_context",
]
