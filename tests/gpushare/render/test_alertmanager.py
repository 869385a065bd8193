"""Alertmanager: the receiver config, and a route evaluation over the rendered config that a GPU alert reaches it."""

from __future__ import annotations

import re
from typing import Any

import pytest

from gpushare.errors import ConfigError
from gpushare.loader import load_stack_config
from gpushare.render import alerts, monitoring
from tests.conftest import PLAN_DATE, raw_stack

MATCHER = re.compile(r'^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"(.*)"\s*$')

RECEIVERS = {
    "slack": {"type": "slack", "secretName": "alertmanager-slack", "secretKey": "url", "slackChannel": "#gpu-alerts"},
    "pagerduty": {"type": "pagerduty", "secretName": "alertmanager-pagerduty", "secretKey": "routing-key"},
    "webhook": {"type": "webhook", "secretName": "alertmanager-webhook", "secretKey": "url"},
}


def _matches(matcher: str, labels: dict[str, str]) -> bool:
    """One Alertmanager matcher (`name op "value"`, regexes anchored as Alertmanager anchors them)."""
    found = MATCHER.match(matcher)
    assert found, f"matcher {matcher!r} is not of the form the route test reads"
    name, op, value = found.groups()
    actual = labels.get(name, "")
    return {
        "=": actual == value,
        "!=": actual != value,
        "=~": re.fullmatch(value, actual) is not None,
        "!~": re.fullmatch(value, actual) is None,
    }[op]


def route(tree: dict[str, Any], labels: dict[str, str], receiver: str | None = None) -> list[str]:
    """Receivers an alert reaches, as Alertmanager walks its routing tree: the first matching child (and the
    next ones while `continue` is true) handles it, otherwise the route itself; a route inherits its parent's
    receiver."""
    receiver = tree.get("receiver", receiver)
    reached: list[str] = []
    for child in tree.get("routes", []):
        if all(_matches(m, labels) for m in child.get("matchers", [])):
            reached += route(child, labels, receiver)
            if not child.get("continue", False):
                break
    return reached or [receiver]


def _config(receiver: dict[str, Any]):
    raw = raw_stack("prod")
    raw["gpushare:monitoring"]["alertReceiver"] = receiver
    return load_stack_config(raw, today=PLAN_DATE)


@pytest.mark.parametrize("kind", list(RECEIVERS))
def test_a_gpu_alert_reaches_the_receiver_and_watchdog_does_not(kind):
    config = _config(RECEIVERS[kind])
    values = monitoring.kube_prometheus_stack_values(config)["alertmanager"]
    amconfig = values["config"]
    name = monitoring.receiver_name(config.monitoring.alert_receiver)
    for alert in alerts.alerts(config):
        labels = {"alertname": alert.name, "severity": "warning", "namespace": "inference"}
        assert route(amconfig["route"], labels) == [name], alert.name
    for silent in monitoring.SILENT_ALERTS:
        assert route(amconfig["route"], {"alertname": silent, "severity": "none"}) == [monitoring.NULL_RECEIVER]
    # Every route names a receiver the config defines (Alertmanager refuses the config otherwise).
    defined = {r["name"] for r in amconfig["receivers"]}
    assert {amconfig["route"]["receiver"], *(r["receiver"] for r in amconfig["route"]["routes"])} <= defined


@pytest.mark.parametrize("kind", list(RECEIVERS))
def test_the_credential_is_read_from_the_mounted_secret_never_written(kind):
    receiver = RECEIVERS[kind]
    config = _config(receiver)
    values = monitoring.kube_prometheus_stack_values(config)["alertmanager"]
    assert values["alertmanagerSpec"]["secrets"] == [receiver["secretName"]]
    [target] = next(
        r
        for r in values["config"]["receivers"]
        if r["name"] == monitoring.receiver_name(config.monitoring.alert_receiver)
    )[monitoring.RECEIVER_CONFIGS[kind][0]]
    path = f"/etc/alertmanager/secrets/{receiver['secretName']}/{receiver['secretKey']}"
    assert target[monitoring.RECEIVER_CONFIGS[kind][1]] == path
    # Nothing but the file path names the credential: no url, api_url, routing_key or service_key value.
    assert not {"url", "api_url", "routing_key", "service_key"} & set(target)


def test_prod_pages_its_on_call_and_without_a_receiver_the_chart_default_stays(prod):
    assert prod.monitoring.alert_receiver is not None
    raw = raw_stack("prod")
    del raw["gpushare:monitoring"]["alertReceiver"]
    assert monitoring.kube_prometheus_stack_values(load_stack_config(raw, today=PLAN_DATE))["alertmanager"] == {
        "alertmanagerSpec": {"nodeSelector": {"gpushare.io/role": "system"}}
    }


def test_route_evaluation_can_fail():
    """The evaluator is not vacuous: an alert the tree sends elsewhere is reported elsewhere."""
    tree = {"receiver": "team", "routes": [{"receiver": "null", "matchers": ['alertname =~ "Gpu.*"']}]}
    assert route(tree, {"alertname": "GpuPodPending"}) == ["null"]
    assert route(tree, {"alertname": "KubePodCrashLooping"}) == ["team"]


@pytest.mark.parametrize(
    ("receiver", "error"),
    [
        ({"type": "sns", "secretName": "a", "secretKey": "b"}, "gpushare:monitoring.alertReceiver.type"),
        ({"type": "slack", "secretName": "Slack_Secret", "secretKey": "url"}, "alertReceiver.secretName"),
        ({"type": "slack", "secretName": "slack", "secretKey": "a url"}, "alertReceiver.secretKey"),
        ({"type": "slack", "secretKey": "url"}, "alertReceiver.secretName: is required"),
        (
            {"type": "webhook", "secretName": "hook", "secretKey": "url", "slackChannel": "#gpu"},
            "slackChannel is set but type is 'webhook'",
        ),
        ({"type": "slack", "secretName": "s", "secretKey": "url", "apiUrl": "https://hooks.slack.com/x"}, "apiUrl"),
    ],
)
def test_bad_receiver_names_the_key(receiver, error):
    with pytest.raises(ConfigError) as raised:
        _config(receiver)
    assert error in str(raised.value)


def test_receiver_with_an_existing_prometheus_is_refused():
    raw = raw_stack("prod")
    raw["gpushare:monitoring"]["alertReceiver"] = RECEIVERS["slack"]
    raw["gpushare:monitoring"]["existingPrometheus"] = {"url": "http://prometheus.observability.svc:9090"}
    with pytest.raises(ConfigError) as raised:
        load_stack_config(raw, today=PLAN_DATE)
    assert "gpushare:monitoring.alertReceiver: is set with existingPrometheus" in str(raised.value)
