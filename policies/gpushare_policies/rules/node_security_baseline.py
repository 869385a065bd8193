"""GPU nodes and the cluster API keep the security baseline: IMDSv2, encrypted volumes and Secrets, no public IP."""

from __future__ import annotations

from collections.abc import Iterator

from ..rule import Finding, Rule, finding
from ..stack import EC2_NODE_CLASS, EKS_CLUSTER, StackView, eks_settings, sorted_by_name


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
        key, _, _ = eks_settings(cluster)
        if not key:
            shown = "encryptionConfig" if cluster.type == EKS_CLUSTER else "encryptionConfigKeyArn"
            yield finding(
                cluster,
                shown,
                None,
                "Kubernetes Secrets are stored in etcd without envelope encryption",
                "encrypt secrets with a KMS key (gpushare creates one)",
            )


RULE = Rule(
    name="node-security-baseline",
    order=12,
    description="GPU node classes require IMDSv2 with hop limit 1, encrypt every volume and assign no public "
    "IP; EKS encrypts Secrets with KMS.",
    why="Shared GPU nodes run many teams' pods: node credentials, volumes and Secrets must not leak between "
    "them or to the internet.",
    remediation="Keep gpushare's EC2NodeClass settings (httpTokens required, hop limit 1, encrypted volumes, "
    "associatePublicIPAddress false) and the cluster's KMS key.",
    enforcement="mandatory",
    severity="high",
    check=check_node_baseline,
)
