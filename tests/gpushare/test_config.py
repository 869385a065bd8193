"""Stack config: the shipped stacks load; every bad input fails with one line naming the key."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, get_args

import pytest

from gpushare import karpenter_api, names, pins
from gpushare.checks.ineffective import ineffective_keys
from gpushare.config import ConsolidationPolicy
from gpushare.errors import ConfigError
from gpushare.loader import load_stack_config
from gpushare.render import karpenter
from tests.conftest import PLAN_DATE, raw_stack


def test_dev_stack(dev):
    assert dev.region == "us-west-2"
    assert [p.name for p in dev.pools] == ["g5-shared", "g4dn-shared", "g6-timeslice"]
    assert [p.sharing for p in dev.pools] == ["hami", "hami", "timeslice"]
    assert dev.pools[2].replicas == 4
    assert len(dev.teams) == 2
    assert dev.cluster.network.creates_vpc


def test_prod_stack(prod):
    assert not prod.cluster.endpoint.public_access
    assert prod.karpenter.ami_alias == "al2023@v20260903"
    assert len(prod.teams) == 3
    assert [p.name for p in prod.pools if p.sharing == "exclusive"] == ["training"]
    assert {"spot", "on-demand"} <= {c for p in prod.pools for c in p.capacity_types}


def test_defaults_fill_what_is_left_out():
    raw = raw_stack("dev")
    for key in ("gpushare:karpenter", "gpushare:hami"):
        del raw[key]
    config = load_stack_config(raw, today=PLAN_DATE)
    assert config.karpenter.chart_version == pins.chart_version("karpenter")
    assert config.hami.chart_version == pins.chart_version("hami")
    assert config.hami.profile.device_split_count == 10


def test_object_config_arrives_as_json_text_from_the_engine():
    raw = raw_stack("dev")
    raw["gpushare:pools"] = json.dumps(raw["gpushare:pools"])
    assert load_stack_config(raw, today=PLAN_DATE).pools[0].name == "g5-shared"


Mutation = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Mutation:
    """Mutation setting `gpushare:pools.0.maxGpus`-style paths (numbers index lists)."""

    def apply(raw: dict[str, Any]) -> None:
        key, *steps = path.split(".")
        target: Any = raw[key] if steps else raw
        for step in steps[:-1]:
            target = target[int(step)] if step.isdigit() else target[step]
        last = steps[-1] if steps else key
        target[int(last) if last.isdigit() else last] = value

    return apply


def _drop(path: str) -> Mutation:
    def apply(raw: dict[str, Any]) -> None:
        key, *steps = path.split(".")
        target: Any = raw[key] if steps else raw
        for step in steps[:-1]:
            target = target[int(step)] if step.isdigit() else target[step]
        del target[steps[-1] if steps else key]

    return apply


def _both(first: Mutation, second: Mutation) -> Mutation:
    def apply(raw: dict[str, Any]) -> None:
        first(raw)
        second(raw)

    return apply


OWN_REGISTRY = "123456789012.dkr.ecr.us-west-2.amazonaws.com/platform"
BAD_CONFIG = [
    (
        "unknown instance type",
        _set("gpushare:pools.0.instanceTypes.1", "g5.huge"),
        "gpushare:pools[0].instanceTypes[1]: 'g5.huge' is not in the GPU catalog; allowed: g4dn.xlarge",
    ),
    (
        "type above mock ceiling",
        _set("gpushare:pools.0.instanceTypes.1", "g5.48xlarge"),
        "gpushare:pools[0].instanceTypes[1]: g5.48xlarge: nvidia.com/gpumem would be 184224 units",
    ),
    (
        "pool no team uses",
        _both(_set("gpushare:teams.0.pools", ["g5-shared"]), _set("gpushare:teams.1.pools", ["g5-shared"])),
        "gpushare:pools[1].name: no team lists pool 'g4dn-shared'",
    ),
    (
        "team names unknown pool",
        _set("gpushare:teams.0.pools.1", "a100-pool"),
        "gpushare:teams[0].pools[1]: unknown pool 'a100-pool'; allowed: g5-shared, g4dn-shared",
    ),
    (
        "duplicate pool",
        _set("gpushare:pools.1.name", "g5-shared"),
        "gpushare:pools[1].name: duplicate name 'g5-shared'",
    ),
    (
        "duplicate team",
        _set("gpushare:teams.1.name", "ml-research"),
        "gpushare:teams[1].name: duplicate name 'ml-research'",
    ),
    (
        "vGPU quota too big",
        _set("gpushare:teams.1.quota.gpus", 41),
        "gpushare:teams[1].quota.gpus: 41 is more than pools g4dn-shared can ever provide (whole nodes within their "
        "maxGpus); allowed: at most 40",
    ),
    (
        "memory quota too big",
        _set("gpushare:teams.1.quota.gpuMemoryMib", 61441),
        "gpushare:teams[1].quota.gpuMemoryMib: 61441 is more than pools g4dn-shared can ever provide (whole "
        "nodes within their maxGpus); allowed: at most 61440",
    ),
    (
        "cores quota too big",
        _set("gpushare:teams.1.quota.gpuCores", 401),
        "gpushare:teams[1].quota.gpuCores: 401 is more than",
    ),
    (
        "maxGpus below a node",
        lambda raw: raw["gpushare:pools"][0].update(instanceTypes=["g5.xlarge", "g5.12xlarge"], maxGpus=2),
        "gpushare:pools[0].maxGpus: 2 is below the 4 GPUs of g5.12xlarge",
    ),
    (
        "malformed number",
        _set("gpushare:pools.0.maxGpus", "eight"),
        "gpushare:pools[0].maxGpus: takes a whole number, e.g. 4 (got 'eight')",
    ),
    (
        "negative quota",
        _set("gpushare:teams.0.quota.gpus", -1),
        "gpushare:teams[0].quota.gpus: -1 is too small; allowed: at least 0",
    ),
    (
        "bad capacity type",
        _set("gpushare:pools.0.capacityTypes", ["reserved"]),
        "gpushare:pools[0].capacityTypes[0]: 'reserved' is not one of the choices; allowed: on-demand, spot",
    ),
    (
        "bad sharing mode",
        _set("gpushare:pools.0.sharing", "mig"),
        "gpushare:pools[0].sharing: 'mig' is not one of the choices; allowed: hami, exclusive, timeslice",
    ),
    (
        "timeslice without replicas",
        _set("gpushare:pools.0.sharing", "timeslice"),
        "gpushare:pools[0].replicas: is required with sharing timeslice (pods per GPU, 2 to 64)",
    ),
    (
        "replicas on a HAMi pool",
        _set("gpushare:pools.0.replicas", 4),
        "gpushare:pools[0].replicas: 4: only for sharing timeslice, not hami",
    ),
    (
        "one replica per GPU",
        _set("gpushare:pools.2.replicas", 1),
        "gpushare:pools[2].replicas: 1 is too small; allowed: at least 2",
    ),
    (
        "time-sliced quota above the pool",
        _set("gpushare:teams.0.quota.sharedGpus", 9),
        "gpushare:teams[0].quota.sharedGpus: 9 is more than pools g5-shared, g4dn-shared, g6-timeslice can ever "
        "provide (whole nodes within their maxGpus); allowed: at most 8",
    ),
    (
        "time-sliced pool listed with no replica quota",
        _set("gpushare:teams.0.quota.sharedGpus", 0),
        "gpushare:teams[0].quota.sharedGpus: 0, but the team lists pools g6-timeslice, whose every pod asks "
        "nvidia.com/gpu.shared: none would ever be admitted; allowed: 1 or more, or drop those pools from the team",
    ),
    (
        "HAMi pool listed with no vGPU quota",
        _set("gpushare:teams.1.quota.gpus", 0),
        "gpushare:teams[1].quota.gpus: 0, but the team lists pools g4dn-shared, whose every pod asks nvidia.com/gpu",
    ),
    (
        "HAMi pool with no GPU memory quota",
        _set("gpushare:teams.1.quota.gpuMemoryMib", 0),
        "gpushare:teams[1].quota.gpuMemoryMib: 0 (0 nvidia.com/gpumem) refuses every vGPU pod of the team on pools "
        "g4dn-shared, whether it states GPU memory, cores only or neither (HAMi charges GPU memory to each); allowed: "
        "1 or more, or leave the key out (no cap of its own)",
    ),
    (
        "GPU memory quota below one unit of memoryFactor",
        _both(_set("gpushare:hami.profile.memoryFactor", 4), _set("gpushare:teams.1.quota.gpuMemoryMib", 3)),
        "gpushare:teams[1].quota.gpuMemoryMib: 3 (0 nvidia.com/gpumem) refuses every vGPU pod of the team on pools "
        "g4dn-shared, whether it states GPU memory, cores only or neither (HAMi charges GPU memory to each); allowed: "
        "4 or more",
    ),
    (
        "bad pool name",
        _set("gpushare:pools.0.name", "G5_Shared"),
        "gpushare:pools[0].name: 'G5_Shared' is not a name of 1 to 32 lower-case letters, digits and '-'",
    ),
    ("unknown field", _set("gpushare:pools.0.maxGPUs", 3), "gpushare:pools[0].maxGPUs: unknown key"),
    (
        "unknown top-level key",
        _set("gpushare:pool", []),
        "gpushare:pool: unknown key; did you mean gpushare:pools? allowed: gpushare:",
    ),
    ("missing region", _drop("aws:region"), "aws:region: is required"),
    ("missing pools", _drop("gpushare:pools"), "gpushare:pools: is required"),
    (
        "old karpenter",
        _set("gpushare:karpenter.chartVersion", "1.6.2"),
        "gpushare:karpenter.chartVersion: 1.6.2 has no NodeOverlay; allowed: 1.7.0 or newer",
    ),
    (
        "hami held back below 2.10",
        _set("gpushare:hami.chartVersion", "2.8.3"),
        "gpushare:hami.chartVersion: '2.8.3' is older than 2.10.0: HAMi before 2.10 leaks team quota charges on every "
        "re-filter, cannot set memoryFactor and exports metric names the alerts and HAMi-WebUI do not read; allowed: "
        "2.10.0",
    ),
    (
        "unknown hami chart",
        _set("gpushare:hami.chartVersion", "3.0.0"),
        "gpushare:hami.chartVersion: '3.0.0' is not a HAMi chart this stack knows",
    ),
    (
        "memoryFactor of 0",
        _set("gpushare:hami.profile.memoryFactor", 0),
        "gpushare:hami.profile.memoryFactor: 0 is too small; allowed: at least 1",
    ),
    (
        "memoryFactor above a GiB",
        _set("gpushare:hami.profile.memoryFactor", 2048),
        "gpushare:hami.profile.memoryFactor: 2048 is too large; allowed: at most 1024",
    ),
    (
        "HAMi pool past the mock ceiling",
        _set("gpushare:pools.0.instanceTypes", ["p5.48xlarge"]),
        "gpushare:pools[0].instanceTypes[0]: p5.48xlarge: nvidia.com/gpumem would be 652472 units per node at "
        "memoryFactor 1, above the mock device plugin's ceiling of 123011 (the kubelet would register 0); memoryFactor "
        "6 or more brings it under; use a smaller type or an exclusive pool",
    ),
    (
        "untagged mock image",
        _set("gpushare:hami.mockDevicePluginImage", "projecthami/mock-device-plugin"),
        "gpushare:hami.mockDevicePluginImage: 'projecthami/mock-device-plugin' has no known HAMi compatibility",
    ),
    (
        "storage class the cluster lacks",
        _set("gpushare:monitoring", {"storageClass": "gp3"}),
        "gpushare:monitoring.storageClass: 'gp3' is no StorageClass the cluster has (EKS creates only gp2, the stack "
        "none); allowed: gp2",
    ),
    (
        "bad scheduler policy",
        _set("gpushare:hami.schedulerPolicy.node", "random"),
        "gpushare:hami.schedulerPolicy.node: 'random' is not one of the choices; allowed: binpack, spread",
    ),
    (
        "public endpoint without cidrs",
        _drop("gpushare:cluster.endpoint.publicAccessCidrs"),
        "gpushare:cluster.endpoint.publicAccessCidrs: is required when publicAccess is true",
    ),
    (
        "bad cidr",
        _set("gpushare:cluster.endpoint.publicAccessCidrs", ["10.0.0.1/8"]),
        "gpushare:cluster.endpoint.publicAccessCidrs[0]: '10.0.0.1/8' is not a CIDR",
    ),
    (
        "bare address where a CIDR goes",  # a name is refused, so an address without its prefix length is too
        _set("gpushare:cluster.endpoint.publicAccessCidrs", ["203.0.113.7"]),
        "gpushare:cluster.endpoint.publicAccessCidrs[0]: '203.0.113.7' is an address, not a CIDR: write 203.0.113.7/32",
    ),
    (
        "bare IPv6 address where a CIDR goes",
        _set("gpushare:cluster.endpoint.privateAccessCidrs", ["2001:db8::7"]),
        "gpushare:cluster.endpoint.privateAccessCidrs[0]: '2001:db8::7' is an address, not a CIDR: write "
        "2001:db8::7/128",
    ),
    (
        "bad kubernetes version",
        _set("gpushare:cluster.kubernetesVersion", "1.34.2"),
        "gpushare:cluster.kubernetesVersion: '1.34.2' is not a Kubernetes minor version written as a string",
    ),
    (
        "subnets without vpc",
        _set("gpushare:cluster.network.privateSubnetIds", ["subnet-0123456789abcdef0"]),
        "gpushare:cluster.network.privateSubnetIds: ['subnet-0123456789abcdef0'] needs vpcId",
    ),
    (
        "ami alias not pinned form",
        _set("gpushare:karpenter.amiVersion", "2026.09"),
        "gpushare:karpenter.amiVersion: '2026.09' is not latest or an EKS AMI release like v20260903",
    ),
    (
        "reserved namespace",
        _set("gpushare:teams.0.name", "kube-system"),
        "gpushare:teams[0].name: 'kube-system' is a namespace Kubernetes or the stack's own controllers use",
    ),
    (
        "bad role arn",
        _set("gpushare:teams.0.namespaceAccessRoleArn", "ml-devs"),
        "gpushare:teams[0].namespaceAccessRoleArn: 'ml-devs' is not an IAM role ARN like arn:aws:iam::",
    ),
    (
        "bad duration",
        _set("gpushare:pools.0.disruption", {"consolidateAfter": "ten minutes"}),
        "gpushare:pools[0].disruption.consolidateAfter: 'ten minutes' is not a duration in hours, minutes and ",
    ),
    (
        "repeated instance type",
        _set("gpushare:pools.0.instanceTypes", ["g5.xlarge", "g5.xlarge"]),
        "gpushare:pools[0].instanceTypes[1]: 'g5.xlarge' is listed twice (first at [0])",
    ),
    (
        "system group sizes",
        _set("gpushare:cluster.systemNodeGroup.desiredSize", 9),
        "gpushare:cluster.systemNodeGroup.desiredSize: 9: need minSize <= desiredSize <= maxSize, got 2/9/3",
    ),
    ("invalid json from engine", _set("gpushare:teams", "[{not json"), "gpushare:teams: is not valid JSON"),
    (
        "private endpoint nobody can reach",
        _both(
            _set("gpushare:cluster.endpoint.publicAccess", False), _drop("gpushare:cluster.endpoint.publicAccessCidrs")
        ),
        "gpushare:cluster.endpoint.privateAccessCidrs: publicAccess is false and nobody may reach the private endpoint",
    ),
    (
        "private ranges without a private endpoint",
        _both(
            _set("gpushare:cluster.endpoint.privateAccess", False),
            _set("gpushare:cluster.endpoint.privateAccessCidrs", ["10.0.0.0/8"]),
        ),
        "gpushare:cluster.endpoint.privateAccessCidrs: ['10.0.0.0/8'] is set but privateAccess is false",
    ),
    (
        "bad security group",
        _set("gpushare:cluster.endpoint.privateAccessSecurityGroupIds", ["default"]),
        "gpushare:cluster.endpoint.privateAccessSecurityGroupIds[0]: 'default' is not a security group id",
    ),
    (
        "admin that is not an IAM principal",
        _set("gpushare:cluster.adminPrincipalArns", ["arn:aws:s3:::bucket"]),
        "gpushare:cluster.adminPrincipalArns[0]: 'arn:aws:s3:::bucket' is not an IAM role or user ARN",
    ),
    (
        "log retention CloudWatch refuses",
        _set("gpushare:cluster.logRetentionDays", 45),
        "gpushare:cluster.logRetentionDays: 45 is not a CloudWatch Logs retention; allowed: 1, 3, 5",
    ),
    (
        "team lists a pool twice",
        _set("gpushare:teams.1.pools", ["g4dn-shared", "g4dn-shared"]),
        "gpushare:teams[1].pools[1]: 'g4dn-shared' is listed twice (first at [0])",
    ),
    (
        "mirror for a registry the stack never pulls from",
        _set("gpushare:registryMirrors", {"gcr.io": "123456789012.dkr.ecr.us-west-2.amazonaws.com/gcr"}),
        "gpushare:registryMirrors.gcr.io: 'gcr.io' is not a registry the stack pulls images from; allowed: "
        "docker.io, nvcr.io, public.ecr.aws, quay.io, registry.k8s.io",
    ),
    (
        "a scheduler policy on a team no HAMi pool serves",
        _both(
            _set("gpushare:teams.1.pools", ["g6-timeslice"]),
            _set("gpushare:teams.1.quota", {"gpus": 0, "sharedGpus": 8}),
        ),
        "gpushare:teams[1].schedulerPolicy: is set but none of the team's pools (g6-timeslice) has sharing hami: only "
        "HAMi reads the policy",
    ),
    (
        "a consolidation policy beside consolidateAfter Never",
        _set("gpushare:pools.1.disruption.consolidateAfter", "Never"),
        "gpushare:pools[1].disruption.consolidationPolicy: 'WhenEmptyOrUnderutilized' has no effect: consolidateAfter "
        "Never turns consolidation off",
    ),
    (
        "Balanced on a Karpenter held back before it",
        _both(
            _set("gpushare:karpenter.chartVersion", "1.13.0"),
            _set("gpushare:pools.0.disruption", {"consolidationPolicy": "Balanced"}),
        ),
        "gpushare:pools[0].disruption.consolidationPolicy: consolidationPolicy Balanced needs Karpenter 1.14.0 or "
        "newer, but gpushare:karpenter.chartVersion is 1.13.0",
    ),
    (
        "time-slicing on an NVIDIA plugin held back before it",
        _set("gpushare:nvidiaDevicePlugin", {"chartVersion": "0.11.0"}),
        "gpushare:pools[2].sharing: time-slicing (config sharing.timeSlicing with renameByDefault and "
        "failRequestsGreaterThanOne, chart config.map) needs NVIDIA device plugin chart 0.12.0 or newer, but "
        "gpushare:nvidiaDevicePlugin.chartVersion is 0.11.0",
    ),
    (
        "a Karpenter older than the cluster's Kubernetes minor needs",
        _set("gpushare:karpenter.chartVersion", "1.12.1"),
        "gpushare:karpenter.chartVersion: 1.12.1 does not run with Kubernetes 1.36 "
        "(gpushare:cluster.kubernetesVersion): Karpenter's compatibility matrix needs 1.13.0 or newer there",
    ),
    (
        "mirror pointing an upstream registry at a personal namespace",
        _set("gpushare:registryMirrors", {"registry.k8s.io": "docker.io/someone"}),
        "gpushare:registryMirrors.registry.k8s.io: 'docker.io/someone' is a namespace on the public registry "
        "docker.io, where anyone publishes under their own name",
    ),
    (
        "mirror on another public registry",
        _set("gpushare:registryMirrors", {"docker.io": "ghcr.io/someone/docker-hub"}),
        "gpushare:registryMirrors.docker.io: 'ghcr.io/someone/docker-hub' is a namespace on the public registry "
        "ghcr.io",
    ),
    (
        "mock image from a personal namespace",
        _set("gpushare:hami.mockDevicePluginImage", "docker.io/someone/mock-device-plugin:1.0.1"),
        "gpushare:hami.mockDevicePluginImage: docker.io/someone/mock-device-plugin is not where its project "
        "publishes it (a personal namespace, a fork or a third-party copy); allowed: "
        "docker.io/projecthami/mock-device-plugin",
    ),
    (
        "mirror on a host imitating a public registry",
        _set("gpushare:registryMirrors", {"docker.io": "docker.io.example.com"}),
        "gpushare:registryMirrors.docker.io: 'docker.io.example.com' is on docker.io.example.com, a host that imitates "
        "the public registry docker.io without being it",
    ),
    (
        "trusted registry that is a namespace on a public registry",
        _set("gpushare:trustedRegistries", ["ghcr.io/someone"]),
        "gpushare:trustedRegistries[0]: 'ghcr.io/someone' is a namespace on the public registry ghcr.io",
    ),
    (
        "trusted registry on a host imitating a public registry",
        _set("gpushare:trustedRegistries", ["nvrc.io"]),
        "gpushare:trustedRegistries[0]: 'nvrc.io' is on nvrc.io, a host that imitates the public registry nvcr.io",
    ),
    (
        "mock image copied to a path of the user's own, registry not declared trusted",
        _set("gpushare:hami.mockDevicePluginImage", f"{OWN_REGISTRY}/gpu/mock-device-plugin:1.0.1"),
        f"gpushare:hami.mockDevicePluginImage: {OWN_REGISTRY}/gpu/mock-device-plugin is not where its project "
        "publishes it (a path that mirrors none of its upstream homes, in no registry declared trusted)",
    ),
    (
        "mirror with a scheme",
        _set("gpushare:registryMirrors", {"docker.io": "https://mirror.example.com/docker-hub"}),
        "gpushare:registryMirrors.docker.io: 'https://mirror.example.com/docker-hub' is not a registry host[/path]",
    ),
    (
        "mirror with a trailing slash",
        _set("gpushare:registryMirrors", {"quay.io": "mirror.example.com/quay/"}),
        "gpushare:registryMirrors.quay.io: 'mirror.example.com/quay/' is not a registry host[/path]",
    ),
    (
        "mirrors not a map",
        _set("gpushare:registryMirrors", ["docker.io"]),
        "gpushare:registryMirrors: takes a map of keys to values (got ['docker.io'])",
    ),
    (
        "termination grace period not a duration",
        _set("gpushare:pools.0.disruption", {"terminationGracePeriod": "1 hour"}),
        "gpushare:pools[0].disruption.terminationGracePeriod:",
    ),
]


def test_every_problem_is_reported_not_only_the_first():
    raw = raw_stack("dev")
    _set("gpushare:pools.0.maxGpus", 0)(raw)
    _set("gpushare:teams.1.quota.gpus", -1)(raw)
    _set("gpushare:cluster.logRetentionDays", 45)(raw)
    with pytest.raises(ConfigError) as caught:
        load_stack_config(raw, today=PLAN_DATE)
    keys = [line.split(":", 2)[0] + ":" + line.split(":", 2)[1] for line in str(caught.value).splitlines()]
    assert keys == [
        "gpushare:cluster.logRetentionDays",
        "gpushare:pools[0].maxGpus",
        "gpushare:teams[1].quota.gpus",
    ]


def test_cross_key_problems_of_valid_sections_come_with_schema_problems():
    """A broken section (cluster) does not hide what the sections that hold (pools, teams) get wrong together,
    nor does it make up problems from what it cannot read."""
    raw = raw_stack("dev")
    _set("gpushare:cluster.logRetentionDays", 45)(raw)
    _set("gpushare:cluster.adminPrincipalArns", ["arn:aws:iam::123456789012:role/ml"])(raw)
    _set("gpushare:teams.1.namespaceAccessRoleArn", "arn:aws:iam::123456789012:role/ml")(raw)
    _set("gpushare:teams.1.pools", ["g4dn-shared", "a100-pool"])(raw)
    _set("gpushare:teams.0.quota.gpus", 10_000)(raw)
    _set("gpushare:teams.0.spotOnly", True)(raw)  # admission reads the cluster's version: not judged while broken
    with pytest.raises(ConfigError) as caught:
        load_stack_config(raw, today=PLAN_DATE)
    assert [line.split(": ")[0] for line in str(caught.value).splitlines()] == [
        "gpushare:cluster.logRetentionDays",
        "gpushare:teams[0].quota.gpus",
        "gpushare:teams[1].pools[1]",
    ]


def test_a_copy_in_a_registry_declared_trusted_loads_and_a_bad_entry_is_reported_once():
    raw = raw_stack("dev")
    image = f"{OWN_REGISTRY}/gpu/mock-device-plugin:1.0.1"
    raw.setdefault("gpushare:hami", {})["mockDevicePluginImage"] = image
    raw["gpushare:trustedRegistries"] = [OWN_REGISTRY, "docker.io/someone"]
    with pytest.raises(ConfigError) as caught:
        load_stack_config(raw, today=PLAN_DATE)
    assert [line.split(": ")[0] for line in str(caught.value).splitlines()] == ["gpushare:trustedRegistries[1]"]
    raw["gpushare:trustedRegistries"] = [OWN_REGISTRY]
    config = load_stack_config(raw, today=PLAN_DATE)
    assert (config.trusted_registries, config.hami.mock_device_plugin_image) == ((OWN_REGISTRY,), image)


def test_every_bad_mirror_is_reported_and_good_ones_load():
    raw = raw_stack("dev")
    ecr = "123456789012.dkr.ecr.us-west-2.amazonaws.com"
    raw["gpushare:registryMirrors"] = {"docker.io": "Mirror.example.com", "k8s.gcr.io": f"{ecr}/k8s", "nvcr.io": ecr}
    with pytest.raises(ConfigError) as caught:
        load_stack_config(raw, today=PLAN_DATE)
    assert [line.split(": ")[0] for line in str(caught.value).splitlines()] == [
        "gpushare:registryMirrors.docker.io",
        "gpushare:registryMirrors.k8s.gcr.io",
    ]
    raw["gpushare:registryMirrors"] = {"docker.io": f"{ecr}/docker-hub", "nvcr.io": "mirror.example.com:5000"}
    assert load_stack_config(raw, today=PLAN_DATE).registry_mirrors == raw["gpushare:registryMirrors"]


def test_cross_key_problems_are_all_reported():
    raw = raw_stack("dev")
    _set("gpushare:pools.0.instanceTypes.1", "g5.huge")(raw)
    _set("gpushare:teams.1.pools", ["g4dn-shared", "a100-pool"])(raw)
    with pytest.raises(ConfigError) as caught:
        load_stack_config(raw, today=PLAN_DATE)
    lines = str(caught.value).splitlines()
    assert [line.split(":")[1].split(" ")[0] for line in lines] == ["pools[0].instanceTypes[1]", "teams[1].pools[1]"]


def test_exclusive_pool_accepts_types_above_the_mock_ceiling():
    raw = raw_stack("prod")
    raw["gpushare:pools"][2]["instanceTypes"].append("p5.48xlarge")
    assert "p5.48xlarge" in load_stack_config(raw, today=PLAN_DATE).pool("training").instance_types


def test_exclusive_pools_provide_no_gpu_memory_quota():
    raw = raw_stack("prod")
    raw["gpushare:teams"][0]["pools"] = ["training"]
    raw["gpushare:teams"][0]["quota"] = {"gpus": 16, "gpuMemoryMib": 1}
    with pytest.raises(ConfigError, match=r"quota.gpuMemoryMib: 1 is more than pools training .* at most 0"):
        load_stack_config(raw, today=PLAN_DATE)


@pytest.mark.parametrize(
    "image",
    [
        "docker.io/projecthami/mock-device-plugin:1.0.1@sha256:" + "0" * 64,
        "projecthami/mock-device-plugin:1.0.1",
        "123456789012.dkr.ecr.us-west-2.amazonaws.com/docker-hub/projecthami/mock-device-plugin:1.0.1",
    ],
    ids=["digest-pinned", "short Docker Hub name", "already behind a mirror"],
)
def test_mock_images_from_upstream_or_a_mirror_are_accepted(image):
    raw = raw_stack("dev")
    raw["gpushare:hami"]["mockDevicePluginImage"] = image
    assert load_stack_config(raw, today=PLAN_DATE).hami.mock_device_plugin_image == image


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (
            "quotaUsePercent",
            100,
            "gpushare:monitoring.alerts.quotaUsePercent: 100 is too large; allowed: at most 99 percent",
        ),
        (
            "nodeIdleUtilizationPercent",
            0,
            "gpushare:monitoring.alerts.nodeIdleUtilizationPercent: 0 is too small; allowed: at least 1 percent",
        ),
    ],
)
def test_alert_thresholds_that_could_never_fire_are_refused(key, value, message):
    raw = raw_stack("prod")
    raw["gpushare:monitoring"]["alerts"][key] = value
    with pytest.raises(ConfigError, match=message):
        load_stack_config(raw, today=PLAN_DATE)


def test_alert_waits_longer_than_the_retention_are_refused_each_on_its_line():
    raw = raw_stack("prod")
    raw["gpushare:monitoring"]["retention"] = "1h"
    raw["gpushare:monitoring"]["alerts"]["nodeIdleMinutes"] = 61
    raw["gpushare:monitoring"]["alerts"]["podPendingMinutes"] = 90
    with pytest.raises(ConfigError) as caught:
        load_stack_config(raw, today=PLAN_DATE)
    assert str(caught.value).splitlines() == [
        "gpushare:monitoring.alerts.podPendingMinutes: 90 minutes is longer than gpushare:monitoring.retention 1h "
        "(60 minutes): the alert could never fire; allowed: at most 60, or a longer retention",
        "gpushare:monitoring.alerts.nodeIdleMinutes: 61 minutes is longer than gpushare:monitoring.retention 1h "
        "(60 minutes): the alert could never fire; allowed: at most 60, or a longer retention",
    ]
    raw["gpushare:monitoring"]["retention"] = "2w"
    assert load_stack_config(raw, today=PLAN_DATE).monitoring.alerts.node_idle_minutes == 61


# Issue 20 class 3: what the stack file alone decides is a config error (exit 2), not a finding after rendering.
STACK_FILE_MISTAKES = [
    (
        "v-prefixed Karpenter chart",
        _set("gpushare:karpenter.chartVersion", "v1.15.1"),
        "gpushare:karpenter.chartVersion: 'v1.15.1': Karpenter's OCI charts are tagged without a leading v; "
        "write 1.15.1",
    ),
    (
        "tag with the reserved aws: prefix",
        _set("gpushare:cluster.tags", {"aws:owner": "ml"}),
        "gpushare:cluster.tags.aws:owner: the aws: prefix is reserved for AWS; allowed: any other key",
    ),
    (
        "tag Karpenter sets itself",
        _set("gpushare:cluster.tags", {"karpenter.sh/nodepool": "x"}),
        "gpushare:cluster.tags.karpenter.sh/nodepool: 'x': Karpenter sets karpenter.sh/nodepool itself",
    ),
    (
        "cluster-ownership tag",
        _set("gpushare:cluster.tags", {"kubernetes.io/cluster/gpushare-dev": "owned"}),
        "gpushare:cluster.tags.kubernetes.io/cluster/gpushare-dev: 'owned': Karpenter sets the cluster-ownership tag",
    ),
    (
        "empty tag value",
        _set("gpushare:cluster.tags", {"team": ""}),
        "gpushare:cluster.tags.team: '': the EC2NodeClass CRD refuses empty tag keys and values",
    ),
    (
        "tag with a character AWS refuses",
        _set("gpushare:cluster.tags", {"cost#center": "42"}),
        "gpushare:cluster.tags.cost#center: '42': allowed in keys and values: letters, digits, spaces",
    ),
    (
        "tag key too long",
        _set("gpushare:cluster.tags", {"k" * 129: "v"}),
        "gpushare:cluster.tags." + "k" * 129 + ": 'v': AWS allows keys of 1 to 128 characters",
    ),
    (
        "Prometheus label key",
        _set("gpushare:monitoring", {"existingPrometheus": {"url": "http://p.m.svc:9090", "labels": {"-x": "a"}}}),
        "gpushare:monitoring.existingPrometheus.labels.-x: '-x' is not a label key",
    ),
    (
        "Prometheus label value",
        _set("gpushare:monitoring", {"existingPrometheus": {"url": "http://p.m.svc:9090", "labels": {"r": "a b"}}}),
        "gpushare:monitoring.existingPrometheus.labels.r: 'a b' is not a label value",
    ),
    (
        "VPC range that is not a CIDR",
        _set("gpushare:cluster.network.vpcCidr", "10.20.0.0/33"),
        "gpushare:cluster.network.vpcCidr: '10.20.0.0/33' is not a CIDR; allowed: an IPv4 CIDR from /16 to /20",
    ),
    (
        "GPU type as a system node",
        _set("gpushare:cluster.systemNodeGroup.instanceTypes", ["m7i.large", "g5.xlarge"]),
        "gpushare:cluster.systemNodeGroup.instanceTypes[1]: 'g5.xlarge' is a GPU type",
    ),
    # Issue 20 class 9: cross-key checks.
    *(
        (
            f"team named like the {namespace} namespace",
            _set("gpushare:teams.1.name", namespace),
            f"gpushare:teams[1].name: {namespace!r} is a namespace Kubernetes or the stack's own controllers use",
        )
        for namespace in names.STACK_NAMESPACES
    ),
    (
        "budget schedule the pattern admits but Karpenter cannot parse",
        _set("gpushare:pools.1.disruption.budgets.0.schedule", "0 15 * * mon-fry"),
        "gpushare:pools[1].disruption.budgets[0].schedule: '0 15 * * mon-fry': Karpenter's cron parser refuses it: "
        "'fry' is not a number or sun, mon, tue, wed, thu, fri, sat",
    ),
    (
        "budget schedule with 7 for Sunday",
        _set("gpushare:pools.1.disruption.budgets.0.schedule", "0 15 * * 7"),
        "gpushare:pools[1].disruption.budgets[0].schedule: '0 15 * * 7': Karpenter's cron parser refuses it: day of "
        "week '7' ends above 6 (Sunday is 0 or sun)",
    ),
    (
        "budget schedule that never opens",
        _set("gpushare:pools.1.disruption.budgets.0.schedule", "0 0 31 4 *"),
        "gpushare:pools[1].disruption.budgets[0].schedule: '0 0 31 4 *': it matches no time",
    ),
    (
        "public-only endpoint that shuts out the NAT addresses",
        _both(
            _set("gpushare:cluster.endpoint.privateAccess", False),
            _set("gpushare:cluster.endpoint.publicAccessCidrs", ["203.0.113.0/24"]),
        ),
        "gpushare:cluster.endpoint.publicAccessCidrs: ['203.0.113.0/24'] with privateAccess false shuts out the nodes",
    ),
    (
        "admin principal that is also a team's role",
        _both(
            _set("gpushare:cluster.adminPrincipalArns", ["arn:aws:iam::123456789012:role/ml"]),
            _set("gpushare:teams.1.namespaceAccessRoleArn", "arn:aws:iam::123456789012:role/ml"),
        ),
        "gpushare:teams[1].namespaceAccessRoleArn: 'arn:aws:iam::123456789012:role/ml': already "
        "gpushare:cluster.adminPrincipalArns[0]; EKS gives a principal one access entry",
    ),
    (
        "two teams with one role (IAM names ignore case)",
        _both(
            _set("gpushare:teams.0.namespaceAccessRoleArn", "arn:aws:iam::123456789012:role/ML"),
            _set("gpushare:teams.1.namespaceAccessRoleArn", "arn:aws:iam::123456789012:role/ml"),
        ),
        "gpushare:teams[1].namespaceAccessRoleArn: 'arn:aws:iam::123456789012:role/ml': already "
        "gpushare:teams[0].namespaceAccessRoleArn",
    ),
    (
        "admin that is the Karpenter node role the stack creates",
        _set("gpushare:cluster.adminPrincipalArns", ["arn:aws:iam::123456789012:role/gpushare-dev-karpenter-node"]),
        "gpushare:cluster.adminPrincipalArns[0]: 'arn:aws:iam::123456789012:role/gpushare-dev-karpenter-node': the "
        "stack creates role gpushare-dev-karpenter-node and gives it a node access entry",
    ),
    (
        "team role that is the system node role the stack creates",
        _set("gpushare:teams.0.namespaceAccessRoleArn", "arn:aws:iam::123456789012:role/gpushare-dev-system-node"),
        "gpushare:teams[0].namespaceAccessRoleArn: 'arn:aws:iam::123456789012:role/gpushare-dev-system-node': the "
        "stack creates role gpushare-dev-system-node",
    ),
    (
        "admin listed twice",
        _set("gpushare:cluster.adminPrincipalArns", ["arn:aws:iam::123456789012:role/a"] * 2),
        "gpushare:cluster.adminPrincipalArns[1]: principal 'arn:aws:iam::123456789012:role/a' is listed twice "
        "(first at [0])",
    ),
]


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [c[1:] for c in BAD_CONFIG + STACK_FILE_MISTAKES],
    ids=[c[0] for c in BAD_CONFIG + STACK_FILE_MISTAKES],
)
def test_bad_config_names_the_key(mutate, expected):
    raw = raw_stack("dev")
    mutate(raw)
    with pytest.raises(ConfigError) as caught:
        load_stack_config(raw, today=PLAN_DATE)
    lines = str(caught.value).splitlines()
    assert any(line.startswith(expected) for line in lines), lines
    assert all(line.startswith(("gpushare:", "aws:")) for line in lines), lines
    keys = [line.split(": ")[0] for line in lines]
    assert len(keys) == len(set(keys)), lines  # one problem, one line


# Each list key reports its item by index (class 9), one line per key and value (class 4).
LIST_ITEMS = [
    ("gpushare:cluster.adminPrincipalArns", ["arn:aws:iam::123456789012:role/ok", "ci"]),
    ("gpushare:cluster.endpoint.publicAccessCidrs", ["0.0.0.0/0", "10.0.0.1/8"]),
    ("gpushare:cluster.endpoint.privateAccessSecurityGroupIds", ["sg-0123456789abcdef0", "default"]),
    ("gpushare:cluster.systemNodeGroup.instanceTypes", ["m7i.large", "large"]),
    ("gpushare:pools.0.capacityTypes", ["on-demand", "spto"]),
    ("gpushare:pools.0.instanceTypes", ["g5.xlarge", "g5.xlarge"]),
    ("gpushare:pools.1.disruption.budgets.0.reasons", ["Empty", "Empty"]),
    ("gpushare:teams.0.pools", ["g5-shared", "g5-shared"]),
]


@pytest.mark.parametrize(("path", "items"), LIST_ITEMS, ids=[path for path, _ in LIST_ITEMS])
def test_a_bad_list_item_is_named_by_its_index_on_one_line(path, items):
    raw = raw_stack("dev")
    _set(path, items)(raw)
    with pytest.raises(ConfigError) as caught:
        load_stack_config(raw, today=PLAN_DATE)
    key = path.split(".")[0] + "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in path.split(".")[1:])
    assert [line.split(": ")[0] for line in str(caught.value).splitlines()] == [f"{key}[1]"]


def test_one_bad_value_is_one_line():
    """pydantic reports a list whose only item failed twice (the item, then the list's length): one line stays."""
    raw = raw_stack("dev")
    _set("gpushare:pools.0.capacityTypes", ["spto"])(raw)
    with pytest.raises(ConfigError) as caught:
        load_stack_config(raw, today=PLAN_DATE)
    assert str(caught.value).splitlines() == [
        "gpushare:pools[0].capacityTypes[0]: 'spto' is not one of the choices; did you mean spot? allowed: on-demand, "
        "spot"
    ]


def test_every_instance_type_and_quota_problem_is_reported():
    raw = raw_stack("dev")
    _set("gpushare:pools.0.instanceTypes", ["g5.huge", "g5.xlarge", "g5.48xlarge"])(raw)
    _set("gpushare:pools.1.instanceTypes", ["g4dn.xlarge", "g4dn.12xlarge", "g4dn.metal"])(raw)
    with pytest.raises(ConfigError) as caught:
        load_stack_config(raw, today=PLAN_DATE)
    assert [line.split(": ")[0] for line in str(caught.value).splitlines()] == [
        "gpushare:pools[0].instanceTypes[0]",
        "gpushare:pools[0].instanceTypes[2]",
        "gpushare:pools[1].maxGpus",
    ]
    raw = raw_stack("dev")
    _set("gpushare:teams.1.quota.gpus", 41)(raw)
    _set("gpushare:teams.1.quota.gpuCores", 401)(raw)
    with pytest.raises(ConfigError) as caught:
        load_stack_config(raw, today=PLAN_DATE)
    assert [line.split(": ")[0] for line in str(caught.value).splitlines()] == [
        "gpushare:teams[1].quota.gpus",
        "gpushare:teams[1].quota.gpuCores",
    ]


# Values Karpenter's NodePool CRD accepts are accepted and reach the NodePool as written (class 4).
KARPENTER_VALUES = [
    ("consolidateAfter", "Never"),
    ("consolidateAfter", "0s"),
    ("consolidateAfter", "1h30m"),
    ("expireAfter", "Never"),
    ("expireAfter", "2h45m10s"),
    ("terminationGracePeriod", "48h30m"),
    *(("consolidationPolicy", policy) for policy in karpenter_api.CONSOLIDATION_POLICIES),
]


@pytest.mark.parametrize(("key", "value"), KARPENTER_VALUES, ids=[f"{k} {v}" for k, v in KARPENTER_VALUES])
def test_values_the_nodepool_crd_accepts_are_accepted(key, value):
    raw = raw_stack("dev")
    raw["gpushare:pools"][0]["disruption"] = {key: value}
    config = load_stack_config(raw, today=PLAN_DATE)
    spec = karpenter.node_pool(config, config.pools[0])["spec"]
    rendered = spec["template"]["spec"] if key in ("expireAfter", "terminationGracePeriod") else spec["disruption"]
    assert rendered[key] == value


@pytest.mark.parametrize(
    "budget",
    [
        {"nodes": "100%", "schedule": "@daily", "duration": "1h30m"},
        {"nodes": 0, "schedule": "*/30 9-17 1,15 JAN-jun mon-fri", "duration": "30m0s"},
        {"nodes": "0", "schedule": "0  15 * * sun,sat", "duration": "9h"},
        {"nodes": "5", "schedule": "0 0 31 2 mon", "duration": "1h"},
    ],
)
def test_budgets_karpenter_accepts_are_accepted(budget):
    raw = raw_stack("dev")
    raw["gpushare:pools"][1]["disruption"]["budgets"] = [budget]
    assert (
        load_stack_config(raw, today=PLAN_DATE).pool("g4dn-shared").disruption.budgets[0].schedule == budget["schedule"]
    )


def test_config_takes_the_consolidation_policies_karpenter_takes():
    assert get_args(ConsolidationPolicy) == karpenter_api.CONSOLIDATION_POLICIES


@pytest.mark.parametrize(
    "endpoint",
    [
        {"publicAccess": False, "privateAccess": True, "privateAccessCidrs": ["10.0.0.0/8"]},
        {"publicAccess": True, "privateAccess": True, "publicAccessCidrs": ["203.0.113.0/24"]},
        {"publicAccess": True, "privateAccess": False, "publicAccessCidrs": ["0.0.0.0/0"]},
    ],
)
def test_endpoints_nodes_can_reach_are_accepted(endpoint):
    raw = raw_stack("dev")
    raw["gpushare:cluster"]["endpoint"] = endpoint
    assert load_stack_config(raw, today=PLAN_DATE).cluster.endpoint.public_access == endpoint["publicAccess"]


def test_an_existing_vpc_may_list_its_own_nat_addresses():
    raw = raw_stack("dev")
    raw["gpushare:cluster"]["network"] = {
        "vpcId": "vpc-0123456789abcdef0",
        "privateSubnetIds": ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"],
    }
    raw["gpushare:cluster"]["endpoint"] = {
        "publicAccess": True,
        "privateAccess": False,
        "publicAccessCidrs": ["198.51.100.7/32"],
    }
    assert not load_stack_config(raw, today=PLAN_DATE).cluster.endpoint.private_access


@pytest.mark.parametrize(
    ("key", "value", "pool_change"),
    [
        ("gpushare:karpenter.chartVersion", "1.14.0", {"consolidationPolicy": "Balanced"}),
        ("gpushare:karpenter.chartVersion", "1.13.0", {"consolidationPolicy": "WhenEmptyOrUnderutilized"}),
        ("gpushare:nvidiaDevicePlugin", {"chartVersion": "0.12.0"}, None),
    ],
    ids=["Balanced from 1.14", "the older policies on 1.13", "time-slicing from plugin 0.12"],
)
def test_features_within_the_version_held_are_accepted(key, value, pool_change):
    raw = raw_stack("dev")
    _set(key, value)(raw)
    if pool_change is not None:
        raw["gpushare:pools"][0]["disruption"] = pool_change
    load_stack_config(raw, today=PLAN_DATE)


# Keys whose effect needs another key: the combination that does nothing is refused where it would make someone believe
# it applied (class 4 of issue 29), warned about where it is a harmless leftover.
def _monitoring_off(raw):
    raw["gpushare:monitoring"]["enabled"] = False


def _existing_prometheus(raw):
    del raw["gpushare:monitoring"]["alertReceiver"]
    raw["gpushare:monitoring"]["existingPrometheus"] = {"url": "http://prometheus.obs.svc:9090"}


@pytest.mark.parametrize(
    ("change", "lines"),
    [
        (
            _monitoring_off,
            ["gpushare:monitoring.alertReceiver: is set but enabled is false: no Alertmanager is deployed"],
        ),
        (
            lambda raw: (_monitoring_off(raw), _existing_prometheus(raw)),
            [
                "gpushare:monitoring.existingPrometheus: is set but enabled is false: the stack creates no scrape "
                "objects"
            ],
        ),
        (
            _existing_prometheus,
            [
                "gpushare:monitoring.retention: '15d' is set with existingPrometheus, where the stack deploys no "
                "Prometheus",
                "gpushare:monitoring.storageSize: '100Gi' is set with existingPrometheus",
                "gpushare:monitoring.storageClass: 'gp2' is set with existingPrometheus",
            ],
        ),
    ],
    ids=[
        "receiver without monitoring",
        "existing Prometheus without monitoring",
        "own Prometheus keys beside an existing one",
    ],
)
def test_monitoring_keys_without_effect_are_refused_one_line_each(change, lines):
    raw = raw_stack("prod")
    change(raw)
    with pytest.raises(ConfigError) as caught:
        load_stack_config(raw, today=PLAN_DATE)
    found = str(caught.value).splitlines()
    assert len(found) == len(lines), found
    assert all(any(line.startswith(expected) for line in found) for expected in lines), found


def _warnings(change) -> list[str]:
    raw = raw_stack("dev")
    change(raw)
    return ineffective_keys(load_stack_config(raw, today=PLAN_DATE))


def test_the_shipped_stacks_set_no_key_without_effect(dev, prod):
    assert ineffective_keys(dev) == [] and ineffective_keys(prod) == []


def _exclusive_only(raw):
    raw["gpushare:pools"] = [
        {"name": "training", "instanceTypes": ["g6e.12xlarge"], "maxGpus": 8, "sharing": "exclusive"}
    ]
    raw["gpushare:teams"] = [{"name": "ml-research", "pools": ["training"], "quota": {"gpus": 8}}]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda raw: raw.update({"gpushare:monitoring": {"retention": "30d", "alerts": {"podPendingMinutes": 5}}}),
            [
                "gpushare:monitoring.retention: has no effect while gpushare:monitoring.enabled is false",
                "gpushare:monitoring.alerts: has no effect while gpushare:monitoring.enabled is false",
            ],
        ),
        (
            _exclusive_only,
            [
                "gpushare:hami.profile: has no effect: no pool has sharing hami",
                "gpushare:hami.schedulerPolicy: has no effect: no pool has sharing hami",
            ],
        ),
        (
            lambda raw: (
                raw.update({"gpushare:nvidiaDevicePlugin": {"chartVersion": "0.20.1"}}),
                raw["gpushare:pools"].pop(2),
                raw["gpushare:teams"][0]["pools"].remove("g6-timeslice"),
                raw["gpushare:teams"][0]["quota"].pop("sharedGpus"),
            ),
            ["gpushare:nvidiaDevicePlugin: has no effect: every pool has sharing hami"],
        ),
        (
            lambda raw: raw.update({"gpushare:registryMirrors": {"quay.io": "mirror.example.com/quay"}}),
            ["gpushare:registryMirrors.quay.io: has no effect: no image this stack deploys comes from quay.io"],
        ),
        (
            lambda raw: raw["gpushare:pools"][0].update(
                {"disruption": {"budgets": [{"nodes": "0", "reasons": ["Underutilized"]}]}}
            ),
            [
                "gpushare:pools[0].disruption.budgets[0].reasons: ['Underutilized'] has no effect: a pool with "
                "consolidationPolicy WhenEmpty and consolidateAfter 10m never disrupts a node for those reasons"
            ],
        ),
        (
            lambda raw: raw["gpushare:pools"][0].update(
                {"disruption": {"consolidateAfter": "Never", "budgets": [{"nodes": "0", "reasons": ["Empty"]}]}}
            ),
            ["gpushare:pools[0].disruption.budgets[0].reasons: ['Empty'] has no effect"],
        ),
        (
            lambda raw: (
                raw["gpushare:pools"][0].update({"capacityTypes": ["spot"]}),
                raw["gpushare:teams"].append(
                    {
                        "name": "batch",
                        "pools": ["g5-shared"],
                        "priority": "batch",
                        "spotOnly": True,
                        "quota": {"gpus": 10, "gpuMemoryMib": 23028, "gpuCores": 100},
                    }
                ),
            ),
            ["gpushare:teams[2].spotOnly: has no effect: every pool of the team (g5-shared) offers spot capacity only"],
        ),
    ],
    ids=[
        "monitoring tuning while off",
        "HAMi tuning without HAMi pools",
        "NVIDIA plugin without its pools",
        "mirror of a registry nothing pulls from",
        "budget for a reason WhenEmpty never has",
        "budget for consolidation that Never turns off",
        "spot-only on spot-only pools",
    ],
)
def test_harmless_keys_without_effect_are_warned_about(change, expected):
    found = _warnings(change)
    assert len(found) == len(expected), found
    assert all(line.startswith(start) for line, start in zip(found, expected, strict=True)), found


@pytest.mark.parametrize(
    "change",
    [
        lambda raw: raw["gpushare:pools"][1]["disruption"]["budgets"].append(
            {"nodes": "1", "reasons": ["Underutilized"]}
        ),
        lambda raw: raw["gpushare:pools"][0].update(
            {"disruption": {"budgets": [{"nodes": "0", "reasons": ["Drifted"]}]}}
        ),
        lambda raw: raw.update({"gpushare:registryMirrors": {"nvcr.io": "mirror.example.com/nvcr"}}),
    ],
    ids=["Underutilized on WhenEmptyOrUnderutilized", "Drifted on WhenEmpty", "mirror of the NVIDIA plugin's registry"],
)
def test_keys_with_an_effect_draw_no_warning(change):
    assert _warnings(change) == []


@pytest.mark.parametrize(
    ("mutate", "line"),
    [
        (
            _set("gpushare:cluster.kubernetesVersion", "1.29"),
            "gpushare:cluster.kubernetesVersion: 1.29 is not a Kubernetes minor gpushare supports on EKS; allowed: "
            "1.34, 1.35, 1.36",
        ),
        (
            _set("gpushare:teams.0.pools.0", "g5-sharde"),
            "gpushare:teams[0].pools[0]: unknown pool 'g5-sharde'; did you mean g5-shared? allowed: g5-shared, "
            "g4dn-shared, g6-timeslice",
        ),
        (
            _set("gpushare:pools.0.name", "g5-sharde"),
            "gpushare:teams[0].pools[0]: unknown pool 'g5-shared'; did you mean g5-sharde? allowed: g5-sharde, "
            "g4dn-shared, g6-timeslice",
        ),
        (
            lambda raw: raw["gpushare:pools"][0].__setitem__("maxGPUs", raw["gpushare:pools"][0].pop("maxGpus")),
            "gpushare:pools[0].maxGPUs: unknown key; did you mean maxGpus? allowed: name, instanceTypes, "
            "capacityTypes, maxGpus, sharing, replicas, disruption",
        ),
    ],
    ids=["unsupported kubernetes version", "team misspells its pool", "pool renamed under its team", "misspelt key"],
)
def test_one_cause_one_line(mutate, line):
    """A consequence of an error already reported is not reported again: the features an unsupported Kubernetes
    minor lacks (dev's teams use MutatingAdmissionPolicy, GA in 1.36), the pool no team lists because its name was
    misspelt, the key a misspelt one meant ("is required")."""
    raw = raw_stack("dev")
    mutate(raw)
    with pytest.raises(ConfigError) as caught:
        load_stack_config(raw, today=PLAN_DATE)
    assert str(caught.value).splitlines() == [line]


def test_a_pool_no_team_lists_is_still_refused_when_no_misspelling_explains_it():
    raw = raw_stack("dev")
    raw["gpushare:teams"][0]["pools"][0] = "a100-pool"
    with pytest.raises(ConfigError) as caught:
        load_stack_config(raw, today=PLAN_DATE)
    assert [line.split(": ")[0] for line in str(caught.value).splitlines()] == [
        "gpushare:teams[0].pools[0]",
        "gpushare:pools[0].name",
    ]


def test_a_supported_version_without_mutating_admission_policy_still_names_each_key():
    """1.35 is supported, so what it lacks is a problem of its own, at each key that needs it."""
    raw = raw_stack("dev")
    raw["gpushare:cluster"]["kubernetesVersion"] = "1.35"
    with pytest.raises(ConfigError) as caught:
        load_stack_config(raw, today=PLAN_DATE)
    lines = str(caught.value).splitlines()
    assert lines and all("MutatingAdmissionPolicy" in line for line in lines), lines
