"""Changes that break `device-plugins-per-pool`: each is caught, every message names the object, the key and
the pools, and says the fix; values Helm merges back to a working placement pass."""

from __future__ import annotations

import copy

import pytest

from tests.policies.helpers import broken, drop, entry, messages, resources_of
from tests.policies.rules.breaking import (
    G5,
    TS,
    TS_LABELS,
    caught,
    delete_at,
    mock,
    pool,
    release,
    renamed,
    set_at,
)

RULE = "device-plugins-per-pool"
NVIDIA = "nvidia-device-plugin"
HAMI_SELECTOR = ["values", "devicePlugin", "nvidiaNodeSelector"]
GPU_ON_TERMS = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["on"]}]}]
        }
    }
}


def _nvidia_everywhere(r):
    values = release(r, NVIDIA)["values"]
    values["nodeSelector"] = {}
    values["affinity"] = None


def _second_mock(r):
    clone = renamed(mock(r), "mirrored-mock")
    clone["spec"]["template"]["spec"]["containers"][0]["image"] = "123456789012.dkr.ecr.us-west-2.amazonaws.com/mock:1"
    r.append({**copy.deepcopy(entry(r, "DaemonSet", "hami-mock-device-plugin")), "urn": "urn:m2", "inputs": clone})


def _cpu_pool(r):
    clone = renamed(pool(r), "cpu")
    clone["spec"]["template"]["metadata"]["labels"] = {"gpushare.io/pool": "cpu"}
    clone["spec"]["template"]["spec"]["requirements"][0]["values"] = ["m7i.large"]
    clone["spec"]["template"]["spec"]["taints"] = []
    r.append({**entry(r, "NodePool", G5), "urn": "urn:cpu", "inputs": clone})


def _cpu_pool_and(change):
    def both(r):
        _cpu_pool(r)
        change(r)

    return both


# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "NVIDIA plugin without selector or affinity lands on HAMi pools": (
        RULE,
        _nvidia_everywhere,
        [
            "Release nvidia-device-plugin: values.nodeSelector is {}",
            "NVIDIA's device plugin also lands on the HAMi pools g4dn-shared, g5-shared",
            'set values.nodeSelector to {gpushare.io/device-plugin: "nvidia"}',
        ],
    ),
    "NVIDIA affinity replaced by terms that admit HAMi nodes": (
        RULE,
        lambda r: release(r, NVIDIA)["values"].update(nodeSelector=None, affinity=GPU_ON_TERMS),
        ["NVIDIA's device plugin also lands on the HAMi pools g4dn-shared, g5-shared", "HAMi #829"],
    ),
    "HAMi pool labelled for the NVIDIA plugin": (
        RULE,
        lambda r: pool(r)["spec"]["template"]["metadata"]["labels"].update(
            {"gpushare.io/device-plugin": "nvidia", "nvidia.com/gpu.present": "true"}
        ),
        ["Release nvidia-device-plugin: values.nodeSelector is", "also lands on the HAMi pools g5-shared"],
    ),
    "HAMi selector deleted with null": (
        RULE,
        lambda r: set_at(release(r, "hami"), HAMI_SELECTOR, None),
        [
            "Release hami: values.devicePlugin.nvidiaNodeSelector is {}",
            "HAMi's device plugin also lands on the exclusive/time-sliced pools g6-timeslice",
            "HAMi #646",
        ],
    ),
    "HAMi selector key deleted with null": (
        RULE,
        lambda r: set_at(release(r, "hami"), [*HAMI_SELECTOR, "gpu"], None),
        ["HAMi's device plugin also lands on the exclusive/time-sliced pools g6-timeslice"],
    ),
    "HAMi selector on a label the pools lack": (
        RULE,
        lambda r: set_at(release(r, "hami"), HAMI_SELECTOR, {"accel": "hami"}),
        [
            "Release hami: values.devicePlugin.nvidiaNodeSelector is {'gpu': 'on', 'accel': 'hami'}",
            "never lands on the HAMi pools g4dn-shared, g5-shared",
            'no label accel: "hami"',
        ],
    ),
    "time-sliced pool also labelled for HAMi": (
        RULE,
        lambda r: set_at(pool(r, TS), [*TS_LABELS, "gpu"], "on"),
        [
            "HAMi's device plugin also lands on the exclusive/time-sliced pools g6-timeslice",
            "keep that label off those pools",
        ],
    ),
    "mock lands on the time-sliced pool too": (
        RULE,
        lambda r: set_at(mock(r), ["spec", "template", "spec", "nodeSelector"], {}),
        [
            "DaemonSet hami-mock-device-plugin: spec.template.spec.nodeSelector is {}",
            "the mock device plugin also lands on the exclusive/time-sliced pools g6-timeslice",
        ],
    ),
    "HAMi pool without the HAMi label": (
        RULE,
        lambda r: delete_at(pool(r), [*TS_LABELS, "gpu"]),
        [
            "Release hami: values.devicePlugin.nvidiaNodeSelector is {'gpu': 'on'}",
            "HAMi's device plugin never lands on the HAMi pools g5-shared",
            'label those pools\' templates gpu: "on"',
        ],
    ),
    "HAMi pool labelled gpu off: the mock misses it too": (
        RULE,
        lambda r: set_at(pool(r), [*TS_LABELS, "gpu"], "off"),
        ["DaemonSet hami-mock-device-plugin: spec.template.spec.nodeSelector", "never lands on the HAMi pools g5"],
    ),
    "HAMi plugin without the GPU toleration": (
        RULE,
        lambda r: set_at(release(r, "hami"), ["values", "devicePlugin", "tolerations"], []),
        [
            "Release hami: values.devicePlugin.tolerations is []",
            "it does not tolerate their taint nvidia.com/gpu=true:NoSchedule",
            "g4dn-shared, g5-shared",
        ],
    ),
    "mock without the GPU toleration": (
        RULE,
        lambda r: set_at(mock(r), ["spec", "template", "spec", "tolerations"], []),
        ["DaemonSet hami-mock-device-plugin: spec.template.spec.tolerations is []", "ResourceNotRegistered"],
    ),
    "mock affinity unmet": (
        RULE,
        lambda r: set_at(
            mock(r),
            ["spec", "template", "spec", "affinity"],
            {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Exists"}]}]
                    }
                }
            },
        ),
        ['spec.template.spec.affinity is "zone Exists"', "no term of its required node affinity holds"],
    ),
    "HAMi device plugin off": (
        RULE,
        lambda r: set_at(release(r, "hami"), ["values", "devicePlugin", "enabled"], False),
        ["Release hami: values.devicePlugin.enabled is false", "the chart renders no DaemonSet", "g4dn-shared, g5"],
    ),
    "HAMi 2.9 with DRA on": (
        RULE,
        lambda r: release(r, "hami").update(
            version="2.9.0", values={**release(r, "hami")["values"], "dra": {"enabled": True}}
        ),
        ["Release hami: values.dra.enabled is true", "the chart renders no DaemonSet"],
    ),
    "no HAMi release": (
        RULE,
        lambda r: drop(r, "Release", "hami"),
        ["nothing in the stack runs HAMi's device plugin, so the nodes of pools g4dn-shared, g5-shared register no"],
    ),
    "NVIDIA device plugin off": (
        RULE,
        lambda r: release(r, NVIDIA)["values"].update(devicePlugin={"enabled": False}),
        ["Release nvidia-device-plugin: values.devicePlugin.enabled is false", "pools g6-timeslice"],
    ),
    "no NVIDIA release": (
        RULE,
        lambda r: drop(r, "Release", NVIDIA),
        ["nothing in the stack runs NVIDIA's device plugin, so the nodes of pools g6-timeslice register no"],
    ),
    "NVIDIA plugin without the GPU toleration": (
        RULE,
        lambda r: set_at(release(r, NVIDIA), ["values", "tolerations"], []),
        [
            "Release nvidia-device-plugin: values.tolerations is []",
            "g6-timeslice",
            "Fix: add {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule} to values.tolerations",
        ],
    ),
    "time-sliced pool the NVIDIA plugin's selector misses": (
        RULE,
        lambda r: delete_at(pool(r, TS), [*TS_LABELS, "gpushare.io/device-plugin"]),
        ["Release nvidia-device-plugin: values.nodeSelector is", "never lands on the exclusive/time-sliced pools"],
    ),
    "time-sliced pool outside the chart's default affinity": (
        RULE,
        lambda r: delete_at(pool(r, TS), [*TS_LABELS, "nvidia.com/gpu.present"]),
        [
            'Release nvidia-device-plugin: values.affinity is "feature.node.kubernetes.io/pci-10de.present In [true]',
            "no term of its required node affinity holds",
        ],
    ),
    "a second mock on the HAMi pools": (
        RULE,
        _second_mock,
        [
            "DaemonSet hami-mock-device-plugin (the mock device plugin) and DaemonSet mirrored-mock "
            "(the mock device plugin) all land on pools g4dn-shared, g5-shared",
            "keep one of them",
        ],
    ),
    "the HAMi chart's own mock lands on the system nodes and an untainted CPU pool": (
        RULE,
        _cpu_pool_and(lambda r: release(r, "hami")["values"].update(mockDevicePlugin={"enabled": True})),
        [
            "Release hami: values.mockDevicePlugin.enabled is true",
            "the mock device plugin also lands on the CPU pools and node groups cpu, gpushare-dev-system",
            "nodes without a GPU",
            'run a mock DaemonSet that selects gpu: "on"',
        ],
    ),
    "HAMi plugin tolerating everything and selecting nothing lands on a CPU pool": (
        RULE,
        _cpu_pool_and(
            lambda r: release(r, "hami")["values"]["devicePlugin"].update(
                nvidiaNodeSelector=None, tolerations=[{"operator": "Exists"}]
            )
        ),
        ["HAMi's device plugin also lands on the CPU pools and node groups cpu"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])


# The GPU exporter, deployed by the prod stack's monitoring.
PROD_CASES = {
    "exporter without the GPU toleration": (
        RULE,
        lambda r: delete_at(release(r, "dcgm-exporter"), ["values", "tolerations"]),  # the chart's own stay
        [
            "Release dcgm-exporter: values.tolerations is [{'key': 'node-role.kubernetes.io/control-plane'",
            "the GPU exporter never lands on the HAMi pools g5-shared, g6-shared",
            "export no GPU metrics",
        ],
    ),
    "exporter on every node": (
        RULE,
        lambda r: delete_at(release(r, "dcgm-exporter"), ["values", "affinity"]),
        [
            "Release dcgm-exporter: values.affinity not set",
            "also lands on the CPU pools and node groups gpushare-prod-system",
            "require gpushare.io/sharing (Exists) in values.affinity",
        ],
    ),
    "exporter selecting a label GPU pools lack": (
        RULE,
        lambda r: set_at(release(r, "dcgm-exporter"), ["values", "nodeSelector"], {"nvidia.com/gpu.present": "true"}),
        ["Release dcgm-exporter: values.nodeSelector is", "never lands on the HAMi pools g5-shared, g6-shared"],
    ),
    "HAMi plugin on the system nodes": (
        RULE,
        lambda r: release(r, "hami")["values"]["devicePlugin"].update(nvidiaNodeSelector=None),
        ["HAMi's device plugin also lands on the CPU pools and node groups gpushare-prod-system", "fail and restart"],
    ),
}


@pytest.mark.parametrize("case", list(PROD_CASES))
def test_one_broken_prod_field_is_caught(plans, case):
    caught(plans["prod"], case, PROD_CASES[case])


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda r: release(r, NVIDIA)["values"].update(nodeSelector={}, affinity={}), id="nvidia-empty"),
        pytest.param(lambda r: release(r, NVIDIA)["values"].pop("tolerations"), id="nvidia-chart-tolerations"),
        pytest.param(lambda r: set_at(release(r, "hami"), HAMI_SELECTOR, {}), id="hami-empty-selector"),
        pytest.param(lambda r: release(r, "hami")["values"]["devicePlugin"].pop("nvidiaNodeSelector"), id="hami-dflt"),
        pytest.param(
            lambda r: release(r, NVIDIA)["values"].update(affinity={"nodeAffinity": {"preferredDuringScheduling": []}}),
            id="nvidia-affinity-merged",
        ),
        pytest.param(_cpu_pool, id="cpu-pool"),
    ],
)
def test_values_that_helm_merges_back_to_the_chart_default_pass(plans, change):
    """`{}` deletes nothing from a chart default map and an omitted list keeps the chart's: the rendered
    DaemonSets still land exactly where they belong, so the rule says nothing."""
    assert messages(broken(plans["dev"], change), RULE) == []


def test_the_prod_exclusive_pool_gets_only_nvidias_plugin(plans):
    assert messages(plans["prod"]["resources"], RULE) == []
    found = messages(
        broken(plans["prod"], lambda r: pool(r, "training")["spec"]["template"]["metadata"]["labels"].update(gpu="on")),
        RULE,
    )
    assert any("also lands on the exclusive/time-sliced pools training" in m for m in found), found


def test_chart_2_10_ignores_the_removed_dra_key(plans):
    """2.10.0 removed the DRA option: a leftover dra.enabled stops nothing."""
    resources = broken(plans["dev"], lambda r: release(r, "hami")["values"].update(dra={"enabled": True}))
    assert messages(resources, RULE) == messages(resources_of(plans["dev"]), RULE)
