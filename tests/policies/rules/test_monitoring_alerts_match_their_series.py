"""Changes that break `monitoring-alerts-match-their-series`: matchers no scraped series can satisfy and team lists
that leave a team out, each caught with the fix; the label sets follow metrics.yaml and the plan's scrape objects."""

from __future__ import annotations

import json

import pytest

from tests.policies.helpers import find, messages, resources_of
from tests.policies.rules.breaking import alert_rule, caught, set_at

POLICY = "monitoring-alerts-match-their-series"
TEAMS = "ml-research|inference|analytics"


def _edit(alert, old, new):
    def apply(r):
        rule = alert_rule(r, alert)
        assert old in rule["expr"], rule["expr"]
        rule["expr"] = rule["expr"].replace(old, new)

    return apply


def _panel(r, expr):
    dashboard = find(r, "ConfigMap", "gpushare-gpu-dashboard")
    model = json.loads(dashboard["data"]["gpushare-gpus.json"])
    model["panels"][0]["targets"][0]["expr"] = expr
    dashboard["data"]["gpushare-gpus.json"] = json.dumps(model)


# (policy, change, every fragment one message must contain), on the prod plan
CASES = {
    "Karpenter's pod namespace read from the target's namespace label": (
        POLICY,
        _edit("HamiPodUnplaced", f'exported_namespace=~"{TEAMS}"', f'namespace=~"{TEAMS}"'),
        [
            "PrometheusRule gpushare-gpu: spec.groups[0].rules[2] (HamiPodUnplaced) matches "
            f'karpenter_pods_provisioning_unbound_time_seconds{{namespace=~"{TEAMS}"}}',
            "namespace there is the scrape target's (kube-system; ServiceMonitor karpenter, honorLabels false)",
            "the alert never fires",
            "match exported_namespace",
        ],
    ),
    "dcgm-exporter's old Hostname spelling": (
        POLICY,
        _edit(
            "GpuNodeIdle", "label_replace(DCGM_FI_DEV_GPU_UTIL,", 'label_replace(DCGM_FI_DEV_GPU_UTIL{Hostname=~".+"},'
        ),
        ['DCGM_FI_DEV_GPU_UTIL{Hostname=~".+"}', "carries no label Hostname", "match one of its labels"],
    ),
    "a pod's namespace on dcgm-exporter, which arrives as exported_namespace": (
        POLICY,
        _edit(
            "GpuNodeIdle",
            "label_replace(DCGM_FI_DEV_GPU_UTIL,",
            'label_replace(DCGM_FI_DEV_GPU_UTIL{namespace="inference"},',
        ),
        ["namespace there is the scrape target's (monitoring", "match exported_namespace"],
    ),
    "Karpenter's nodepool label spelled as on its counters": (
        POLICY,
        _edit("GpuNodeClaimNotInitialized", 'type="Initialized"', 'type="Initialized", nodepool="g5-shared"'),
        ["carries no label nodepool", "karpenter_sh_nodepool"],
    ),
    "a team left out of the quota alert": (
        POLICY,
        _edit("GpuTeamQuotaHigh", f'namespace=~"{TEAMS}"', 'namespace=~"ml-research|inference"'),
        [
            "(GpuTeamQuotaHigh) matches kube_resourcequota",
            "leaves out analytics",
            "list every one of the stack's teams",
        ],
    ),
    "a HAMi team left out of HamiPodUnplaced": (
        POLICY,
        _edit("HamiPodUnplaced", f'exported_namespace=~"{TEAMS}"', 'exported_namespace=~"ml-research|analytics"'),
        ["a list of teams on HAMi pools that leaves out inference"],
    ),
    "a dashboard query on a label kube-state-metrics does not write there": (
        POLICY,
        lambda r: _panel(r, 'sum(kube_node_status_allocatable{resource="nvidia_com_gpu", namespace="inference"})'),
        ["ConfigMap gpushare-gpu-dashboard", "the panel stays empty"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["prod"], case, CASES[case])


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('type="Initialized"', 'type="Initialized", nodepool=""'),  # matches series without the label
        ('type="Initialized"', 'type="Initialized", karpenter_sh_nodepool=~".*"'),
        ('status="Unknown"', 'status="Unknown", namespace!="kube-system"'),  # negative matchers are not judged
    ],
)
def test_matchers_that_admit_a_missing_label_pass(plans, old, new):
    resources = resources_of(plans["prod"])
    _edit("GpuNodeClaimNotInitialized", old, new)(resources)
    assert messages(resources, POLICY) == []


def test_the_label_sets_follow_the_scrape_objects(plans):
    """With honorLabels on Karpenter's ServiceMonitor the pod's (and the CapacityBuffer's) namespace keeps its name:
    the matchers the shipped alerts and panels use are then the wrong ones, and the ones they avoided are right."""
    resources = resources_of(plans["prod"])
    set_at(find(resources, "ServiceMonitor", "karpenter"), ["spec", "endpoints", 0, "honorLabels"], True)
    found = messages(resources, POLICY)
    assert found and all("carries no label exported_namespace" in m for m in found)
    assert any("(HamiPodUnplaced)" in m for m in found) and any("(GpuHeadroomUnsatisfied)" in m for m in found)
    for kind, name in (("PrometheusRule", "gpushare-gpu"), ("ConfigMap", "gpushare-gpu-dashboard")):
        obj = find(resources, kind, name)
        edited = json.loads(json.dumps(obj).replace("exported_namespace", "namespace"))
        obj.clear()
        obj.update(edited)
    assert messages(resources, POLICY) == []


def test_a_single_team_selector_is_no_list(plans):
    resources = resources_of(plans["prod"])
    _edit("GpuTeamQuotaHigh", f'namespace=~"{TEAMS}"', 'namespace=~"analytics"')(resources)
    assert messages(resources, POLICY) == []
