"""Changes that break `mock-device-plugin-matches-hami`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from policies.gpushare_policies.registry import RULES
from tests.policies.helpers import broken, drop, messages, messages_by_rule, resources_of
from tests.policies.rules.breaking import (
    MOCK_REPO,
    caught,
    mock,
    mock_config,
    release,
    set_at,
    set_device_config,
    set_mock_config,
)

RULE = "mock-device-plugin-matches-hami"
CONFIG_NAME = ["spec", "template", "spec", "volumes", 2, "configMap", "name"]
CONFIG_KEY = 'ConfigMap hami-mock-device-config: data["device-config.yaml"]'


def _hami_28_own_config(r, namespace=None):
    """The known-good pair of the 2.8 line: HAMi 2.8.3's own device ConfigMap, which mock 1.0.1 parses."""
    set_at(release(r, "hami"), ["version"], "2.8.3")
    set_at(mock(r), CONFIG_NAME, "hami-scheduler-device")
    if namespace:
        set_at(mock(r), ["metadata", "namespace"], namespace)


def _without_config_mount(r):
    container = mock(r)["spec"]["template"]["spec"]["containers"][0]
    container["volumeMounts"] = [m for m in container["volumeMounts"] if m["name"] != "device-config"]


def _config_under_another_key(r):
    data = mock_config(r)["data"]
    data["config.yaml"] = data.pop("device-config.yaml")


# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "no mock": (
        RULE,
        lambda r: drop(r, "DaemonSet", "hami-mock-device-plugin"),
        ["5 overlays advertise", "ResourceNotRegistered"],
    ),
    "mounts HAMi 2.10's own device config": (
        RULE,
        lambda r: set_at(mock(r), CONFIG_NAME, "hami-scheduler-device"),
        [
            'configMap.name is "hami-scheduler-device": that is HAMi chart 2.10.0\'s own device config, whose '
            "`vnpus:` is an object (since 2.9.0); mock 1.0.1 parses a list and exits",
            "mount ConfigMap hami-mock-device-config",
        ],
    ),
    "mounts the renamed release's own device config": (
        RULE,
        lambda r: (
            set_at(release(r, "hami"), ["name"], "vgpu"),
            set_at(mock(r), CONFIG_NAME, "vgpu-hami-scheduler-device"),
        ),
        ['configMap.name is "vgpu-hami-scheduler-device": that is HAMi chart 2.10.0\'s own device config'],
    ),
    "mounts a ConfigMap nobody creates": (
        RULE,
        lambda r: set_at(mock(r), CONFIG_NAME, "hami-device"),
        ['configMap.name is "hami-device": no ConfigMap of that name is in the stack', "hami-scheduler-device"],
    ),
    "mock in another namespace than its ConfigMap": (
        RULE,
        lambda r: set_at(mock(r), ["metadata", "namespace"], "gpu-system"),
        ['"hami-mock-device-config": no ConfigMap of that name is in the stack (namespace gpu-system)'],
    ),
    "mock in another namespace than HAMi 2.8's own ConfigMap": (
        RULE,
        lambda r: _hami_28_own_config(r, "gpu-system"),
        ['metadata.namespace is "gpu-system"', "deploy the DaemonSet in kube-system"],
    ),
    "HAMi 2.8 with DRA on, whose own ConfigMap the mock mounts": (
        RULE,
        lambda r: (_hami_28_own_config(r), release(r, "hami")["values"].update(dra={"enabled": True})),
        ["Release hami: values.dra.enabled is true", "creates no device ConfigMap"],
    ),
    "mounts no device config": (
        RULE,
        _without_config_mount,
        ["configMap.name not set: the mock plugin reads no device config and exits"],
    ),
    "mock's memoryFactor differs from HAMi's": (
        RULE,
        lambda r: set_mock_config(r, "memoryFactor", 2),
        [f"{CONFIG_KEY} nvidia.memoryFactor is 2", "device config says 1", "other units than HAMi schedules"],
    ),
    "HAMi's memoryFactor moved without the mock's": (
        RULE,
        lambda r: set_device_config(r, "memoryFactor", 6),
        [f"{CONFIG_KEY} nvidia.memoryFactor is 1", "device config says 6", "set it to 6"],
    ),
    "mock names another memory resource": (
        RULE,
        lambda r: set_mock_config(r, "resourceMemoryName", "nvidia.com/memory"),
        [f'{CONFIG_KEY} nvidia.resourceMemoryName is "nvidia.com/memory"', "says nvidia.com/gpumem"],
    ),
    "mock config without the percentage name": (
        RULE,
        lambda r: set_mock_config(r, "resourceMemoryPercentageName", None),
        [f"{CONFIG_KEY} nvidia.resourceMemoryPercentageName not set", "says nvidia.com/gpumem-percentage"],
    ),
    "mock config with HAMi's vnpus object": (
        RULE,
        lambda r: set_mock_config(r, ".vnpus", {"hamiVnpuCore": False, "configs": []}),
        [f'{CONFIG_KEY} vnpus is "an object"', "parses `vnpus` as a list"],
    ),
    "mock config that is not YAML": (
        RULE,
        lambda r: mock_config(r)["data"].update({"device-config.yaml": "nvidia: ["}),
        [f'{CONFIG_KEY} is "nvidia: [": not YAML'],
    ),
    "mock config under another key": (
        RULE,
        _config_under_another_key,
        [f"{CONFIG_KEY} not set", "finds none"],
    ),
    "HAMi the mock cannot decode": (
        RULE,
        lambda r: set_at(release(r, "hami"), ["version"], "2.11.0"),
        ["mock 1.0.1 cannot decode the node annotations HAMi chart 2.11.0 writes"],
    ),
    "mock copy that shows nothing of what it is": (
        RULE,
        lambda r: _copied(r, labels=False, command=None),
        ["no DaemonSet is the mock device plugin", "k8s-device-plugin --device-config-file"],
    ),
    "HAMi's own plugin is not the mock": (
        RULE,
        lambda r: _copied(r, labels=False, command=["nvidia-device-plugin", "--config-file=/device-config.yaml"]),
        ["no DaemonSet is the mock device plugin"],
    ),
    "unknown mock tag": (
        RULE,
        lambda r: set_at(mock(r), ["spec", "template", "spec", "containers", 0, "image"], f"{MOCK_REPO}:9"),
        ["gpushare knows no HAMi compatibility for this tag"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])


COPY = "123456789012.dkr.ecr.us-west-2.amazonaws.com/platform/gpu-mock:1.0.1"


def _copied(r, labels=True, command=(), image=COPY):
    """The mock with its image copied to a private repository of another name; `command` None drops it, ()
    keeps the rendered one."""
    daemonset = mock(r)
    container = daemonset["spec"]["template"]["spec"]["containers"][0]
    container["image"] = image
    if command is None:
        container.pop("command")
    elif command:
        container["command"] = command
    if not labels:
        for meta in (daemonset["metadata"], daemonset["spec"]["template"]["metadata"]):
            meta["labels"] = {"app": "gpu-helper"}


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda r: _copied(r), id="renamed-repository"),
        pytest.param(lambda r: _copied(r, image="mirror.example.com:5000/hub/mock-device-plugin:1.0.1"), id="mirror"),
        pytest.param(lambda r: _copied(r, labels=False), id="by-its-binary"),
        pytest.param(lambda r: _copied(r, command=None), id="by-its-labels"),
        pytest.param(
            lambda r: _copied(
                r, labels=False, command=["/bin/plugin", "-v=5", "--device-config-file=/device-config.yaml"]
            ),
            id="by-its-flag-and-plugin-mount",
        ),
    ],
)
def test_a_copied_mock_image_is_still_the_mock(plans, change):
    """Every rule says about the copy exactly what it says about the shipped mock, but image-provenance, which
    judges where the image comes from (a copy under another path is no mirror of its home: test_image_provenance)."""
    said, shipped = messages_by_rule(broken(plans["dev"], change)), messages_by_rule(resources_of(plans["dev"]))
    for rule in RULES:
        if rule.name != "image-provenance":
            assert said[rule.name] == shipped[rule.name], rule.name


def test_hami_28_own_config_is_still_a_pair_mock_1_0_1_parses(plans):
    """The mock may mount the HAMi release's own ConfigMap where it parses it (chart 2.7-2.8)."""
    assert messages(broken(plans["dev"], _hami_28_own_config), RULE) == []


def test_the_rendered_mock_config_passes_at_any_memory_factor(plans):
    """HAMi's factor and the mock's moved together (as gpushare renders them): nothing to say."""

    def both(r):
        set_device_config(r, "memoryFactor", 6)
        set_mock_config(r, "memoryFactor", 6)

    assert messages(broken(plans["dev"], both), RULE) == []
