"""Changes that break `mock-device-plugin-matches-hami`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from policies.gpushare_policies.registry import RULES
from tests.policies.helpers import broken, drop, messages, resources_of
from tests.policies.rules.breaking import (
    MOCK_REPO,
    caught,
    mock,
    release,
    set_at,
)

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "no mock": (
        "mock-device-plugin-matches-hami",
        lambda r: drop(r, "DaemonSet", "hami-mock-device-plugin"),
        ["5 overlays advertise", "ResourceNotRegistered"],
    ),
    "wrong configmap": (
        "mock-device-plugin-matches-hami",
        lambda r: set_at(mock(r), ["spec", "template", "spec", "volumes", 2, "configMap", "name"], "hami-device"),
        ['configMap.name is "hami-device"', "ConfigMap hami-scheduler-device"],
    ),
    "renamed hami release": (
        "mock-device-plugin-matches-hami",
        lambda r: set_at(release(r, "hami"), ["name"], "vgpu"),
        ["ConfigMap vgpu-hami-scheduler-device"],
    ),
    "mock in another namespace": (
        "mock-device-plugin-matches-hami",
        lambda r: set_at(mock(r), ["metadata", "namespace"], "gpu-system"),
        ['metadata.namespace is "gpu-system"', "deploy the DaemonSet in kube-system"],
    ),
    "mock too old for hami": (
        "mock-device-plugin-matches-hami",
        lambda r: set_at(release(r, "hami"), ["version"], "2.9.0"),
        ["mock 1.0.1 cannot parse the device config HAMi chart 2.9.0 writes", "pin HAMi chart 2.7.0 to 2.8.3"],
    ),
    "mock copy that shows nothing of what it is": (
        "mock-device-plugin-matches-hami",
        lambda r: _copied(r, labels=False, command=None),
        ["no DaemonSet is the mock device plugin", "k8s-device-plugin --device-config-file"],
    ),
    "HAMi's own plugin is not the mock": (
        "mock-device-plugin-matches-hami",
        lambda r: _copied(r, labels=False, command=["nvidia-device-plugin", "--config-file=/device-config.yaml"]),
        ["no DaemonSet is the mock device plugin"],
    ),
    "unknown mock tag": (
        "mock-device-plugin-matches-hami",
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
    resources = broken(plans["dev"], change)
    for rule in RULES:
        if rule.name != "image-provenance":
            assert messages(resources, rule.name) == messages(resources_of(plans["dev"]), rule.name), rule.name
