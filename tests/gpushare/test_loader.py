"""Loading the stack file: the shipped stacks load; every problem is reported, one line each; what each section
refuses is in tests/gpushare/config/ (schema) and tests/gpushare/checks/ (cross-key)."""

from __future__ import annotations

import json

import pytest

from gpushare import karpenter_api, pins
from gpushare.errors import ConfigError
from gpushare.loader import load_stack_config
from gpushare.render import karpenter
from tests.conftest import PLAN_DATE, raw_stack
from tests.gpushare.mutations import OWN_REGISTRY, set_key


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


def test_every_problem_is_reported_not_only_the_first():
    raw = raw_stack("dev")
    set_key("gpushare:pools.0.maxGpus", 0)(raw)
    set_key("gpushare:teams.1.quota.gpus", -1)(raw)
    set_key("gpushare:cluster.logRetentionDays", 45)(raw)
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
    set_key("gpushare:cluster.logRetentionDays", 45)(raw)
    set_key("gpushare:cluster.adminPrincipalArns", ["arn:aws:iam::123456789012:role/ml"])(raw)
    set_key("gpushare:teams.1.namespaceAccessRoleArn", "arn:aws:iam::123456789012:role/ml")(raw)
    set_key("gpushare:teams.1.pools", ["g4dn-shared", "a100-pool"])(raw)
    set_key("gpushare:teams.0.quota.gpus", 10_000)(raw)
    set_key("gpushare:teams.0.spotOnly", True)(raw)  # admission reads the cluster's version: not judged while broken
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
    set_key("gpushare:pools.0.instanceTypes.1", "g5.huge")(raw)
    set_key("gpushare:teams.1.pools", ["g4dn-shared", "a100-pool"])(raw)
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
    set_key(path, items)(raw)
    with pytest.raises(ConfigError) as caught:
        load_stack_config(raw, today=PLAN_DATE)
    key = path.split(".")[0] + "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in path.split(".")[1:])
    assert [line.split(": ")[0] for line in str(caught.value).splitlines()] == [f"{key}[1]"]


def test_one_bad_value_is_one_line():
    """pydantic reports a list whose only item failed twice (the item, then the list's length): one line stays."""
    raw = raw_stack("dev")
    set_key("gpushare:pools.0.capacityTypes", ["spto"])(raw)
    with pytest.raises(ConfigError) as caught:
        load_stack_config(raw, today=PLAN_DATE)
    assert str(caught.value).splitlines() == [
        "gpushare:pools[0].capacityTypes[0]: 'spto' is not one of the choices; did you mean spot? allowed: on-demand, "
        "spot"
    ]


def test_every_instance_type_and_quota_problem_is_reported():
    raw = raw_stack("dev")
    set_key("gpushare:pools.0.instanceTypes", ["g5.huge", "g5.xlarge", "g5.48xlarge"])(raw)
    set_key("gpushare:pools.1.instanceTypes", ["g4dn.xlarge", "g4dn.12xlarge", "g4dn.metal"])(raw)
    with pytest.raises(ConfigError) as caught:
        load_stack_config(raw, today=PLAN_DATE)
    assert [line.split(": ")[0] for line in str(caught.value).splitlines()] == [
        "gpushare:pools[0].instanceTypes[0]",
        "gpushare:pools[0].instanceTypes[2]",
        "gpushare:pools[1].maxGpus",
    ]
    raw = raw_stack("dev")
    set_key("gpushare:teams.1.quota.gpus", 41)(raw)
    set_key("gpushare:teams.1.quota.gpuCores", 401)(raw)
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
    ("mutate", "line"),
    [
        (
            set_key("gpushare:cluster.kubernetesVersion", "1.29"),
            "gpushare:cluster.kubernetesVersion: 1.29 is not a Kubernetes minor gpushare supports on EKS; allowed: "
            "1.34, 1.35, 1.36",
        ),
        (
            set_key("gpushare:teams.0.pools.0", "g5-sharde"),
            "gpushare:teams[0].pools[0]: unknown pool 'g5-sharde'; did you mean g5-shared? allowed: g5-shared, "
            "g4dn-shared, g6-timeslice",
        ),
        (
            set_key("gpushare:pools.0.name", "g5-sharde"),
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
