"""Changes that break `prometheus-selects-stack-objects`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import find, messages, resources_of
from tests.policies.rules.breaking import caught, delete_at, release, set_at

RULE = "prometheus-selects-stack-objects"
KPS = "Release kube-prometheus-stack"
SPEC = ["values", "prometheus", "prometheusSpec"]


def _spec(key, value):
    return lambda r: set_at(release(r, "kube-prometheus-stack"), [*SPEC, key], value)


# (policy, change, every fragment one message must contain), on the prod plan
CASES = {
    "rules selected by the chart's release label": (
        RULE,
        _spec("ruleSelectorNilUsesHelmValues", True),
        [
            f"{KPS}: values.prometheus.prometheusSpec.ruleSelectorNilUsesHelmValues is true",
            "{'matchLabels': {'release': 'kube-prometheus-stack'}}",
            "leaves out gpushare-gpu (labels none)",
            "alerts never fire",
        ],
    ),
    "service monitors left to the chart default": (
        RULE,
        lambda r: delete_at(release(r, "kube-prometheus-stack"), [*SPEC, "serviceMonitorSelectorNilUsesHelmValues"]),
        ["serviceMonitorSelectorNilUsesHelmValues is true", "leaves out hami-device-plugin", "never scraped"],
    ),
    "a rule selector the rules do not match": (
        RULE,
        _spec("ruleSelector", {"matchLabels": {"prometheus": "platform"}}),
        ["values.prometheus.prometheusSpec.ruleSelector is {'matchLabels': {'prometheus': 'platform'}}"],
    ),
    "a null rule selector": (
        RULE,
        _spec("ruleSelector", None),
        ["values.prometheus.prometheusSpec.ruleSelector not set", "by nothing"],
    ),
    "rules looked for in other namespaces": (
        RULE,
        _spec("ruleNamespaceSelector", {"matchLabels": {"monitored": "true"}}),
        ["in namespaces {'matchLabels': {'monitored': 'true'}}", "leaves out gpushare-gpu"],
    ),
    "agent mode": (
        RULE,
        lambda r: set_at(release(r, "kube-prometheus-stack"), ["values", "prometheus", "agentMode"], True),
        [f"{KPS}: values.prometheus.agentMode is true", "evaluates no rules"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["prod"], case, CASES[case])


def test_the_release_label_on_every_object_satisfies_the_chart_default(plans):
    """The chart's `release: <name>` selector is fine once the objects carry that label: sets, not settings."""
    resources = resources_of(plans["prod"])
    set_at(release(resources, "kube-prometheus-stack"), [*SPEC, "ruleSelectorNilUsesHelmValues"], True)
    set_at(
        find(resources, "PrometheusRule", "gpushare-gpu"), ["metadata", "labels"], {"release": "kube-prometheus-stack"}
    )
    set_at(
        release(resources, "kube-prometheus-stack"),
        [*SPEC, "serviceMonitorSelector"],
        {"matchExpressions": [{"key": "release", "operator": "DoesNotExist"}]},
    )
    assert messages(resources, RULE) == []
