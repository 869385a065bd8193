"""Changes that break `service-monitors-find-their-targets`: each is caught, and every message says the fix; the
same Service selected another way passes."""

from __future__ import annotations

import pytest

from tests.policies.helpers import drop, find, messages, resources_of
from tests.policies.rules.breaking import caught, delete_at, release, set_at

RULE = "service-monitors-find-their-targets"


def _monitor(r, name):
    return find(r, "ServiceMonitor", name)


# (policy, change, every fragment one message must contain), on the prod plan
PROD_CASES = {
    "service monitor in the wrong namespace": (
        RULE,
        lambda r: set_at(_monitor(r, "karpenter"), ["spec", "namespaceSelector", "matchNames"], ["karpenter"]),
        [
            "ServiceMonitor karpenter: spec.namespaceSelector.matchNames is ['karpenter']",
            "its Services run in kube-system",
            "select [kube-system]",
        ],
    ),
    "no namespace selector: only its own namespace": (
        RULE,
        lambda r: delete_at(_monitor(r, "hami-scheduler"), ["spec", "namespaceSelector"]),
        ["ServiceMonitor hami-scheduler: spec.namespaceSelector.matchNames not set", "select [kube-system]"],
    ),
    "selector no chart Service matches": (
        RULE,
        lambda r: set_at(
            _monitor(r, "hami-device-plugin"),
            ["spec", "selector", "matchLabels", "app.kubernetes.io/component"],
            "hami-device-plugin-monitor",
        ),
        ["ServiceMonitor hami-device-plugin: spec.selector", "no Service the pinned charts render has these labels"],
    ),
    "release renamed under the monitor": (
        RULE,
        lambda r: set_at(release(r, "karpenter"), ["values", "nameOverride"], "autoscaler"),
        ["ServiceMonitor karpenter: spec.selector", "no Service the pinned charts render"],
    ),
    "port the Service does not have": (
        RULE,
        lambda r: set_at(_monitor(r, "hami-scheduler"), ["spec", "endpoints", 0, "port"], "metrics"),
        ['ServiceMonitor hami-scheduler: spec.endpoints[0].port is "metrics"', "name one of http, monitor"],
    ),
    "WebUI monitor in the wrong namespace": (
        RULE,
        lambda r: set_at(_monitor(r, "hami-webui"), ["spec", "namespaceSelector", "matchNames"], ["kube-system"]),
        ["ServiceMonitor hami-webui: spec.namespaceSelector.matchNames", "select [monitoring]"],
    ),
    "WebUI backend not scraped": (
        RULE,
        lambda r: drop(r, "ServiceMonitor", "hami-webui"),
        ["Release hami-webui: no ServiceMonitor scrapes port metrics of the WebUI's Service", "port metrics"],
    ),
    "WebUI monitor on the frontend port only": (
        RULE,
        lambda r: set_at(_monitor(r, "hami-webui"), ["spec", "endpoints", 0, "port"], "http"),
        ["Release hami-webui: no ServiceMonitor scrapes port metrics", "the WebUI shows no data"],
    ),
}


@pytest.mark.parametrize("case", list(PROD_CASES))
def test_one_broken_monitoring_field_is_caught(plans, case):
    caught(plans["prod"], case, PROD_CASES[case])


def test_the_same_services_selected_another_way_pass(plans):
    """Sets, not spellings: `any: true` and a matchExpressions selector reach the same Services."""
    resources = resources_of(plans["prod"])
    set_at(_monitor(resources, "karpenter"), ["spec", "namespaceSelector"], {"any": True})
    set_at(
        _monitor(resources, "hami-scheduler"),
        ["spec", "selector"],
        {
            "matchExpressions": [
                {"key": "app.kubernetes.io/component", "operator": "In", "values": ["hami-scheduler"]},
                {"key": "app.kubernetes.io/instance", "operator": "Exists"},
            ]
        },
    )
    assert messages(resources, RULE) == []
