"""A public EKS API endpoint is open only to restricted CIDRs."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from pydantic import Field

from ..rule import Finding, Rule, RuleConfig, finding
from ..stack import EKS_CLUSTER, UNKNOWN, StackView, eks_settings, sorted_by_name


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
        _, public, cidrs = eks_settings(cluster)
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


RULE = Rule(
    name="eks-public-endpoint-restricted",
    order=13,
    description="A public EKS API endpoint is open only to restricted CIDRs (advisory on dev through "
    "policies/config/dev.json).",
    why="An endpoint open to 0.0.0.0/0 exposes the API server to credential stuffing and zero-days.",
    remediation="Set cluster.endpoint.publicAccessCidrs to your ranges, or publicAccess: false.",
    enforcement="mandatory",
    severity="high",
    check=check_public_endpoint,
    config=EndpointConfig,
)
