"""Changes that break `monitoring-alerts-see-metrics`: each is caught, and every message says the fix."""

from __future__ import annotations

import json

import pytest

from tests.policies.helpers import find, messages, resources_of
from tests.policies.rules.breaking import alert_rule, caught

RULE = "monitoring-alerts-see-metrics"
SUBJECT = "PrometheusRule gpushare-gpu: spec.groups[0].rules"


def _expr(alert, expr):
    return lambda r: alert_rule(r, alert).update(expr=expr)


def _dashboard_query(resources, panel, expr):
    """Replace the first query of a panel of the stack's dashboard ConfigMap."""
    data = find(resources, "ConfigMap", "gpushare-gpu-dashboard")["data"]
    dashboard = json.loads(data["gpushare-gpus.json"])
    dashboard["panels"][panel]["targets"][0]["expr"] = expr
    data["gpushare-gpus.json"] = json.dumps(dashboard)


# (policy, change, every fragment one message must contain), on the prod plan
CASES = {
    "metric nobody exports": (
        RULE,
        _expr("HamiDevicePluginDown", 'hami_device_plugin_up{job="hami-device-plugin-monitor"} == 0'),
        [f"{SUBJECT}[6] (HamiDevicePluginDown) reads metric hami_device_plugin_up", "metrics.yaml"],
    ),
    "metric named by __name__": (
        RULE,
        _expr("HamiDevicePluginDown", '{__name__="hami_vgpus_registered"} == 0'),
        ["reads metric hami_vgpus_registered"],
    ),
    "resource spelled the Kubernetes way": (
        RULE,
        _expr("GpuPodPending", 'kube_pod_container_resource_requests{resource="nvidia.com/gpu"} > 0'),
        [
            '(GpuPodPending) matches kube_pod_container_resource_requests{resource="nvidia.com/gpu"}',
            'write resource="nvidia_com_gpu"',
        ],
    ),
    "resource pattern with a slash": (
        RULE,
        _expr("GpuPodPending", 'kube_node_status_allocatable{resource=~"nvidia.com/.+"} > 0'),
        ['resource=~"nvidia.com/.+"', 'write resource=~"nvidia.com_.+"'],
    ),
    "dashboard query over a metric nobody exports": (
        RULE,
        lambda r: _dashboard_query(r, 0, "sum(hami_vgpus_registered)"),
        [
            'ConfigMap gpushare-gpu-dashboard: data["gpushare-gpus.json"] panels[0].targets[0]',
            "reads metric hami_vgpus_registered",
            "the panel stays empty",
        ],
    ),
    "does not parse": (
        RULE,
        _expr("GpuNodeIdle", "sum(up"),
        [f"{SUBJECT}[3] (GpuNodeIdle).expr does not parse as PromQL"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["prod"], case, CASES[case])


def test_quota_names_keep_their_dots_and_slashes(plans):
    """kube_resourcequota is not sanitized: `resource=~"requests.nvidia.com/.+"` there is right and passes."""
    resources = resources_of(plans["prod"])
    assert 'resource=~"requests.nvidia.com/.+"' in alert_rule(resources, "GpuTeamQuotaHigh")["expr"]
    assert messages(resources, RULE) == []
