"""Rules 10 and 11: destroy order, and the security baseline of GPU nodes and the cluster API."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from pydantic import Field

from gpushare import names

from .rule import Finding, Rule, RuleConfig, finding
from .stack import EC2_NODE_CLASS, EKS_CLUSTER, NODE_OVERLAY, NODE_POOL, UNKNOWN, Resource, StackView, sorted_by_name


def check_destroy_order(view: StackView, _config: None) -> Iterator[Finding]:
    objects = [r for token in (NODE_POOL, NODE_OVERLAY, EC2_NODE_CLASS) for r in view.of_type(token)]
    if not objects:
        return
    for chart in (names.KARPENTER_CRD_CHART, names.KARPENTER_CHART):
        releases = view.releases(chart)
        if not releases:
            yield Finding(
                None,
                f"the stack declares {len(objects)} Karpenter objects but no `{chart}` Helm release: their CRDs or "
                "controller come from outside the stack, so destroy order cannot be guaranteed. Fix: deploy the "
                "karpenter-crd and karpenter charts in this stack.",
            )
            continue
        for obj in sorted_by_name(objects):
            for release in releases:
                if not view.depends_on(obj, release):
                    yield Finding(
                        obj,
                        f"{obj.label}: does not depend on {release.label}: `pulumi destroy` may delete the "
                        "controller or its CRDs first and leave GPU instances running with nothing to drain them. "
                        "Fix: create it with depends_on on the Karpenter releases (gpushare's GpuCapacity does).",
                    )


def _eks_settings(cluster: Resource) -> tuple[object, object, object]:
    """(secrets key, public endpoint on, public CIDRs) from either the aws resource or the pulumi-eks inputs."""
    if cluster.type == EKS_CLUSTER:
        config = cluster.get("encryptionConfig") or {}
        if isinstance(config, list):  # older aws providers model it as a one-element list
            config = config[0] if config else {}
        secrets = (config.get("provider") or {}).get("keyArn") if "secrets" in (config.get("resources") or []) else None
        vpc = cluster.get("vpcConfig") or {}
        return secrets, vpc.get("endpointPublicAccess"), vpc.get("publicAccessCidrs")
    return (
        cluster.get("encryptionConfigKeyArn"),
        cluster.get("endpointPublicAccess"),
        cluster.get("publicAccessCidrs"),
    )


def check_node_baseline(view: StackView, _config: None) -> Iterator[Finding]:
    for node_class in sorted_by_name(view.of_type(EC2_NODE_CLASS)):
        metadata = node_class.get("spec", "metadataOptions") or {}
        tokens, hops = metadata.get("httpTokens"), metadata.get("httpPutResponseHopLimit")
        if tokens not in (None, "required"):
            yield finding(
                node_class,
                "spec.metadataOptions.httpTokens",
                tokens,
                "IMDSv1 lets any pod or SSRF read the node role's credentials",
                'set it to "required" (IMDSv2)',
            )
        if hops not in (None, 1):
            yield finding(
                node_class,
                "spec.metadataOptions.httpPutResponseHopLimit",
                hops,
                "above 1, pods can reach the instance metadata service and take the node role's credentials",
                "set it to 1",
            )
        for index, mapping in enumerate(node_class.get("spec", "blockDeviceMappings") or []):
            encrypted = (mapping.get("ebs") or {}).get("encrypted")
            if encrypted is not True:
                yield finding(
                    node_class,
                    f"spec.blockDeviceMappings[{index}].ebs.encrypted",
                    encrypted,
                    "node volumes hold images, model weights and pod data",
                    "set it to true",
                )
        public_ip = node_class.get("spec", "associatePublicIPAddress")
        if public_ip is not False:
            yield finding(
                node_class,
                "spec.associatePublicIPAddress",
                public_ip,
                "GPU nodes would get a public IP wherever the subnet maps one",
                "set it to false and launch nodes in private subnets",
            )
    for cluster in sorted_by_name(view.eks_clusters()):
        key, _, _ = _eks_settings(cluster)
        if not key:
            shown = "encryptionConfig" if cluster.type == EKS_CLUSTER else "encryptionConfigKeyArn"
            yield finding(
                cluster,
                shown,
                None,
                "Kubernetes Secrets are stored in etcd without envelope encryption",
                "encrypt secrets with a KMS key (gpushare creates one)",
            )


class EndpointConfig(RuleConfig):
    minimum_prefix_length: int = Field(
        default=16,
        ge=0,
        le=32,
        alias="minimumPrefixLength",
        description="Shortest IPv4 prefix a public API endpoint CIDR may have (16 allows at most a /16).",
    )


def check_public_endpoint(view: StackView, config: EndpointConfig) -> Iterator[Finding]:
    for cluster in sorted_by_name(view.eks_clusters()):
        _, public, cidrs = _eks_settings(cluster)
        if public is False or public is UNKNOWN:
            continue
        key = "vpcConfig.publicAccessCidrs" if cluster.type == EKS_CLUSTER else "publicAccessCidrs"
        for cidr in cidrs or ["0.0.0.0/0"]:
            if cidr is UNKNOWN:
                continue
            try:
                network = ipaddress.ip_network(str(cidr), strict=False)
            except ValueError:
                yield finding(cluster, key, cidr, "not a CIDR", "use CIDRs such as 203.0.113.0/24")
                continue
            if network.prefixlen < config.minimum_prefix_length:
                yield finding(
                    cluster,
                    key,
                    str(cidr) if cidrs else None,
                    f"the public API endpoint is open to a /{network.prefixlen}, wider than the /"
                    f"{config.minimum_prefix_length} policy minimumPrefixLength allows; anyone in it can probe the API",
                    "list your office or VPN ranges in cluster.endpoint.publicAccessCidrs, or turn publicAccess off",
                )


RULES = (
    Rule(
        name="karpenter-objects-depend-on-releases",
        description="Every NodePool, NodeOverlay and EC2NodeClass depends on the karpenter-crd and karpenter "
        "Helm releases.",
        why="Destroy runs in reverse dependency order: without the dependency the controller and its IAM can go "
        "first and GPU instances keep running (and billing) with nothing to remove them.",
        remediation="Create Karpenter objects with depends_on on both Karpenter releases.",
        enforcement="mandatory",
        severity="medium",
        check=check_destroy_order,
    ),
    Rule(
        name="node-security-baseline",
        description="GPU node classes require IMDSv2 with hop limit 1, encrypt every volume and assign no public "
        "IP; EKS encrypts Secrets with KMS.",
        why="Shared GPU nodes run many teams' pods: node credentials, volumes and Secrets must not leak between "
        "them or to the internet.",
        remediation="Keep gpushare's EC2NodeClass settings (httpTokens required, hop limit 1, encrypted volumes, "
        "associatePublicIPAddress false) and the cluster's KMS key.",
        enforcement="mandatory",
        severity="high",
        check=check_node_baseline,
    ),
    Rule(
        name="eks-public-endpoint-restricted",
        description="A public EKS API endpoint is open only to restricted CIDRs (advisory on dev through "
        "policies/config/dev.json).",
        why="An endpoint open to 0.0.0.0/0 exposes the API server to credential stuffing and zero-days.",
        remediation="Set cluster.endpoint.publicAccessCidrs to your ranges, or publicAccess: false.",
        enforcement="mandatory",
        severity="high",
        check=check_public_endpoint,
        config=EndpointConfig,
    ),
)
