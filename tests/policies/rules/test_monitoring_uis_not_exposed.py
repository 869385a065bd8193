"""Changes that break `monitoring-uis-not-exposed`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import messages, resources_of
from tests.policies.rules.breaking import caught, release, set_at

RULE = "monitoring-uis-not-exposed"
KPS = "kube-prometheus-stack"


def _service(name, path, kind="LoadBalancer"):
    return lambda r: set_at(release(r, name), ["values", *path], {"type": kind})


# (policy, change, every fragment one message must contain), on the prod plan
CASES = {
    "Prometheus on a load balancer": (
        RULE,
        _service(KPS, ["prometheus", "service"]),
        [f'Release {KPS}: values.prometheus.service.type is "LoadBalancer"', "Prometheus (no login)", "port-forward"],
    ),
    "Alertmanager on a load balancer": (
        RULE,
        _service(KPS, ["alertmanager", "service"]),
        ['values.alertmanager.service.type is "LoadBalancer"'],
    ),
    "HAMi-WebUI on a load balancer": (
        RULE,
        _service("hami-webui", ["service"]),
        ['Release hami-webui: values.service.type is "LoadBalancer"', "HAMi-WebUI (no login)"],
    ),
    "anonymous Grafana on a load balancer": (
        RULE,
        lambda r: (
            _service(KPS, ["grafana", "service"])(r),
            set_at(release(r, KPS), ["values", "grafana", "grafana.ini"], {"auth.anonymous": {"enabled": True}}),
        ),
        ['values.grafana.service.type is "LoadBalancer"', "Grafana with anonymous access"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["prod"], case, CASES[case])


def test_grafana_with_its_login_on_a_load_balancer_passes(plans):
    """Grafana asks for its admin password: on a load balancer it is exposed, not open."""
    resources = resources_of(plans["prod"])
    _service(KPS, ["grafana", "service"])(resources)
    _service(KPS, ["prometheus", "service"], "NodePort")(resources)
    assert messages(resources, RULE) == []
