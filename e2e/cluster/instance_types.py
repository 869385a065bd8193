"""Karpenter kwok instance types generated from gpushare's catalog, so the rig offers what EC2 offers.

Format: the kwok provider's `--instance-types-file-path` JSON (sigs.k8s.io/karpenter kwok/cloudprovider
helpers.go `InstanceTypeOptions`: name, offerings [{Price, Available, Requirements}], architecture,
operatingSystems, resources). Requirements of an offering become labels Karpenter knows, so the GPU labels
the AWS provider sets on every GPU type (karpenter.k8s.aws/instance-gpu-*) ride on the offerings here.
"""

from __future__ import annotations

from typing import Any

from gpushare.catalog import Catalog, InstanceType

ZONES = ("rig-zone-a", "rig-zone-b", "rig-zone-c")
PODS_PER_NODE = 110


def _requirement(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "operator": "In", "values": [value]}


def _gpu_labels(catalog: Catalog, itype: InstanceType) -> list[dict[str, Any]]:
    """The labels karpenter-provider-aws derives from DescribeInstanceTypes for a GPU type."""
    if itype.gpu_count == 0:
        return []
    model = catalog.gpu_model_of(itype)
    return [
        _requirement("karpenter.k8s.aws/instance-gpu-name", model.karpenter_gpu_name),
        _requirement("karpenter.k8s.aws/instance-gpu-manufacturer", "nvidia"),
        _requirement("karpenter.k8s.aws/instance-gpu-count", str(itype.gpu_count)),
        _requirement("karpenter.k8s.aws/instance-gpu-memory", str(model.ec2_memory_mib)),
    ]


def instance_type_options(catalog: Catalog, itype: InstanceType) -> dict[str, Any]:
    """One instance type, offered on demand at the catalog's price in every rig zone."""
    family, size = itype.name.split(".")
    labels = [
        _requirement("karpenter.k8s.aws/instance-family", family),
        _requirement("karpenter.k8s.aws/instance-size", size),
        *_gpu_labels(catalog, itype),
    ]
    resources = {"cpu": str(itype.vcpu), "memory": f"{itype.memory_mib}Mi", "pods": str(PODS_PER_NODE)}
    if itype.gpu_count:
        resources["nvidia.com/gpu"] = str(itype.gpu_count)
    return {
        "name": itype.name,
        "architecture": "amd64",
        "operatingSystems": ["linux"],
        "resources": resources,
        "offerings": [
            {
                "Price": itype.on_demand_usd_per_hour,
                "Available": True,
                "Requirements": [
                    _requirement("karpenter.sh/capacity-type", "on-demand"),
                    _requirement("topology.kubernetes.io/zone", zone),
                    *labels,
                ],
            }
            for zone in ZONES
        ],
    }


def kwok_instance_types(catalog: Catalog) -> list[dict[str, Any]]:
    """Every catalog type, in catalog order."""
    return [instance_type_options(catalog, itype) for itype in catalog.instance_types]
