"""Changes that break `alertmanager-secrets-and-routes`: each is caught, and every message says the fix; what the
stack renders for each receiver type passes the same check (gpushare/alertmanager.py)."""

from __future__ import annotations

import json

import pytest

from gpushare import alertmanager
from gpushare.loader import load_stack_config
from gpushare.render import monitoring
from tests.conftest import PLAN_DATE, raw_stack
from tests.gpushare.render.test_alertmanager import RECEIVERS
from tests.policies.helpers import find, messages, resources_of
from tests.policies.rules.breaking import caught, release, set_at

POLICY = "alertmanager-secrets-and-routes"
KPS = "kube-prometheus-stack"
CONFIG = ["values", "alertmanager", "config"]
SLACK_URL = "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"


def _pagerduty(r):
    return release(r, KPS)["values"]["alertmanager"]["config"]["receivers"][1]["pagerduty_configs"][0]


def _inline_key(r):
    notifier = _pagerduty(r)
    del notifier["routing_key_file"]
    notifier["routing_key"] = "0123456789abcdef0123456789abcdef"


def _dashboard_with_webhook(r):
    dashboard = find(r, "ConfigMap", "gpushare-gpu-dashboard")
    model = json.loads(dashboard["data"]["gpushare-gpus.json"])
    model["links"] = [{"url": SLACK_URL}]
    dashboard["data"]["gpushare-gpus.json"] = json.dumps(model)


def _alertmanager_config_map(r):
    dashboard = find(r, "ConfigMap", "gpushare-gpu-dashboard")
    dashboard["data"]["alertmanager.yaml"] = (
        "receivers:\n- name: team\n  slack_configs:\n  - api_url: " + SLACK_URL + "\nroute:\n  receiver: team\n"
    )


# (policy, change, every fragment one message must contain), on the prod plan
CASES = {
    "a routing key inlined into the values": (
        POLICY,
        _inline_key,
        [
            f'Release {KPS}: values.alertmanager.config.receivers[1].pagerduty_configs[0].routing_key is "<inline>"',
            "plain text in the Helm release, the Pulumi state",
            "routing_key_file",
        ],
    ),
    "a global Slack URL inlined": (
        POLICY,
        lambda r: set_at(release(r, KPS), [*CONFIG, "global"], {"slack_api_url": SLACK_URL}),
        ['values.alertmanager.config.global.slack_api_url is "<inline>"', "slack_api_url_file"],
    ),
    "a bearer token inlined into an http_config": (
        POLICY,
        lambda r: set_at(_pagerduty(r), ["http_config"], {"authorization": {"credentials": "s3cr3t"}}),
        ['pagerduty_configs[0].http_config.authorization.credentials is "<inline>"'],
    ),
    "a Slack webhook URL in a ConfigMap": (
        POLICY,
        _dashboard_with_webhook,
        ['ConfigMap gpushare-gpu-dashboard: data["gpushare-gpus.json"] is "<an incoming-webhook URL>"'],
    ),
    "an Alertmanager config with its key in a ConfigMap": (
        POLICY,
        _alertmanager_config_map,
        ['ConfigMap gpushare-gpu-dashboard: data["alertmanager.yaml"].receivers[0].slack_configs[0].api_url'],
    ),
    "a file of a Secret the pod no longer mounts": (
        POLICY,
        lambda r: set_at(release(r, KPS), ["values", "alertmanager", "alertmanagerSpec", "secrets"], []),
        [
            'pagerduty_configs[0].routing_key_file is "/etc/alertmanager/secrets/alertmanager-pagerduty/routing-key"',
            "no volume of the Alertmanager pod holds that file",
            "alertmanagerSpec.secrets",
        ],
    ),
    "a file read from a path nothing mounts": (
        POLICY,
        lambda r: set_at(_pagerduty(r), ["routing_key_file"], "/var/run/secrets/pagerduty/key"),
        ['routing_key_file is "/var/run/secrets/pagerduty/key"', "cannot read it"],
    ),
    "the root route sent to null with a receiver configured": (
        POLICY,
        lambda r: set_at(release(r, KPS), [*CONFIG, "route", "receiver"], "null"),
        ['values.alertmanager.config.route.receiver is "null"', "reach no one", "gpushare-pagerduty"],
    ),
    "the root route naming no receiver": (
        POLICY,
        lambda r: set_at(release(r, KPS), [*CONFIG, "route", "receiver"], "pagerduty"),
        ['route.receiver is "pagerduty"', "no receiver of that name"],
    ),
    "a catch-all child route to null": (
        POLICY,
        lambda r: set_at(release(r, KPS), [*CONFIG, "route", "routes", 0, "matchers"], []),
        ['route.routes[0].receiver is "null"', "takes every alert"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["prod"], case, CASES[case])


def test_monitoring_without_a_receiver_passes(plans):
    """The chart's default: everything to "null", and no receiver with notifiers to miss."""
    resources = resources_of(plans["prod"])
    kps = release(resources, KPS)["values"]["alertmanager"]
    del kps["config"]
    del kps["alertmanagerSpec"]["secrets"]
    assert messages(resources, POLICY) == []


@pytest.mark.parametrize("kind", list(RECEIVERS))
def test_every_receiver_the_stack_renders_reads_a_mounted_secret_and_gets_the_alerts(kind):
    raw = raw_stack("prod")
    raw["gpushare:monitoring"]["alertReceiver"] = RECEIVERS[kind]
    values = monitoring.kube_prometheus_stack_values(load_stack_config(raw, today=PLAN_DATE))["alertmanager"]
    assert alertmanager.problems(values["config"], values["alertmanagerSpec"]["secrets"], []) == []
    assert alertmanager.problems(values["config"], [], [])  # unmounted, the same config is refused
