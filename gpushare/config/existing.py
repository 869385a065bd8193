"""The schema of gpushare:existingCluster: installing onto a cluster and Karpenter the stack does not own."""

from __future__ import annotations

from typing import Annotated, Any

import yaml
from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from gpushare import names, versions
from gpushare.config.base import ConfigModel, NonEmpty, SecurityGroupId, SubnetId, text_matching
from gpushare.config.controllers import karpenter_release
from gpushare.errors import raise_at

# IAM names as Karpenter's EC2NodeClass takes them (spec.role, spec.instanceProfile): names, not ARNs.
IamRoleName = text_matching(r"[\w+=,.@-]{1,64}", "an IAM role name (not an ARN) like KarpenterNodeRole-platform")
InstanceProfileName = text_matching(
    r"[\w+=,.@-]{1,128}", "an instance profile name (not an ARN) like KarpenterNodeInstanceProfile-platform"
)


NamespaceName = text_matching(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", "a namespace name like kube-system")
DeploymentName = text_matching(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?", "a Deployment name like karpenter")
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
