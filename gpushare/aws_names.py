"""Physical names of the AWS resources the stack names itself, each within its AWS limit for every cluster
name the config accepts (tests/gpushare/test_aws_names.py checks them at the longest).

Limits: IAM role name 64 (IAM quotas), SQS queue name 80, EventBridge rule name 64, CloudWatch log group
name 512. Resources the stack leaves Pulumi to auto-name (policies, keys) carry no name of ours.
"""

from __future__ import annotations

from typing import Final

LIMITS: Final = {"role": 64, "queue": 80, "rule": 64, "log-group": 512}


def node_role_name(cluster_name: str) -> str:
    return f"{cluster_name}-karpenter-node"


def controller_role_name(cluster_name: str) -> str:
    return f"{cluster_name}-karpenter-controller"


def system_node_role_name(cluster_name: str) -> str:
    return f"{cluster_name}-system-node"


def ebs_csi_role_name(cluster_name: str) -> str:
    return f"{cluster_name}-ebs-csi"


def interruption_queue_name(cluster_name: str) -> str:
    return f"{cluster_name}-karpenter"


def interruption_rule_name(cluster_name: str, event: str) -> str:
    """Named explicitly: Pulumi's auto-name (resource name + 8 characters) overflows 64 for long clusters."""
    return f"{cluster_name}-karpenter-{event}"


def control_plane_log_group(cluster_name: str) -> str:
    """The group EKS writes control-plane logs to (EKS user guide, control-plane-logs)."""
    return f"/aws/eks/{cluster_name}/cluster"


def physical_names(cluster_name: str, events: list[str]) -> dict[str, list[str]]:
    """Every name above for one cluster, by the kind whose limit applies."""
    return {
        "role": [
            node_role_name(cluster_name),
            controller_role_name(cluster_name),
            system_node_role_name(cluster_name),
            ebs_csi_role_name(cluster_name),
        ],
        "queue": [interruption_queue_name(cluster_name)],
        "rule": [interruption_rule_name(cluster_name, event) for event in events],
        "log-group": [control_plane_log_group(cluster_name)],
    }
