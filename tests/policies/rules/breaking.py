"""What the rule tests share: finding the plan entry to break, and checking that one broken field is caught."""

from __future__ import annotations

import copy

import yaml

from tests.policies.helpers import broken, find, messages

G5 = "g5-shared"

MOCK_REPO = "docker.io/projecthami/mock-device-plugin"

G5_XL = "g5-shared-g5-xlarge"

INFERENCE_NODE_POLICY = "gpushare-inference-node-scheduler-policy"

PER_GPU = "gpushare-inference-per-gpu-limit"

WIDE = "ml-research"

TS = "g6-timeslice"

TS_XL = "g6-timeslice-g6-xlarge"

TS_LABELS = ["spec", "template", "metadata", "labels"]


def name_in(*namespaces):
    """A namespaceSelector by `matchExpressions In`: the same set as matchLabels for one namespace."""
    return {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": list(namespaces)}]}


def alert_rule(r, alert):
    """The rule of the stack's PrometheusRule that defines `alert`."""
    rules = find(r, "PrometheusRule", "gpushare-gpu")["spec"]["groups"][0]["rules"]
    return next(rule for rule in rules if rule["alert"] == alert)


def pool(r, name=G5):
    return find(r, "NodePool", name)


def overlay(r, name=G5_XL):
    return find(r, "NodeOverlay", name)


def release(r, name):
    return find(r, "Release", name)


def mock(r):
    return find(r, "DaemonSet", "hami-mock-device-plugin")


def mock_config(r):
    return find(r, "ConfigMap", "hami-mock-device-config")


def set_device_config(r, key, value):
    """Set `nvidia.<key>` in HAMi's device-config.content (None unsets it), as a hand edit of the values would."""
    values = release(r, "hami")["values"]
    document = yaml.safe_load(values["device-config"]["content"])
    document["nvidia"][key] = value
    values["device-config"]["content"] = yaml.safe_dump(document)


def set_mock_config(r, key, value):
    """Set `nvidia.<key>` in the mock's own device config (a dotted key sets a top-level one)."""
    data = mock_config(r)["data"]
    document = yaml.safe_load(data["device-config.yaml"])
    (document if key.startswith(".") else document["nvidia"])[key.removeprefix(".")] = value
    data["device-config.yaml"] = yaml.safe_dump(document)


def node_class(r):
    return find(r, "EC2NodeClass", "gpu")


def cluster(r):
    return next(x["inputs"] for x in r if x["type"] == "eks:index:Cluster")


def set_at(target, path, value):
    *head, last = path
    for step in head:
        target = target[step]
    target[last] = value


def delete_at(target, path):
    *head, last = path
    for step in head:
        target = target[step]
    del target[last]


def rename_key(mapping, old, new):
    mapping[new] = mapping.pop(old)


def renamed(inputs, name):

    clone = copy.deepcopy(inputs)
    clone["metadata"]["name"] = name
    return clone


def caught(plan, case, expected):
    """The policy finds the broken field: some message holds every fragment, and every message says the fix."""
    policy, change, fragments = expected
    found = messages(broken(plan, change), policy)
    assert found, f"{policy} missed {case}"
    assert any(all(fragment in message for fragment in fragments) for message in found), found
    assert all("Fix:" in message for message in found)
