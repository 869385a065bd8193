"""gpushare/config/monitoring.py: bad gpushare:monitoring values, each refused on one line naming the key."""

from __future__ import annotations

import pytest

from gpushare.errors import ConfigError
from gpushare.loader import load_stack_config
from tests.conftest import PLAN_DATE, raw_stack
from tests.gpushare.mutations import assert_one_line_names_the_key, set_key

BAD_MONITORING = [
    (
        "storage class the cluster lacks",
        set_key("gpushare:monitoring", {"storageClass": "gp3"}),
        "gpushare:monitoring.storageClass: 'gp3' is no StorageClass the cluster has (EKS creates only gp2, the stack "
        "none); allowed: gp2",
    ),
    (
        "Prometheus label key",
        set_key("gpushare:monitoring", {"existingPrometheus": {"url": "http://p.m.svc:9090", "labels": {"-x": "a"}}}),
        "gpushare:monitoring.existingPrometheus.labels.-x: '-x' is not a label key",
    ),
    (
        "Prometheus label value",
        set_key("gpushare:monitoring", {"existingPrometheus": {"url": "http://p.m.svc:9090", "labels": {"r": "a b"}}}),
        "gpushare:monitoring.existingPrometheus.labels.r: 'a b' is not a label value",
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), [c[1:] for c in BAD_MONITORING], ids=[c[0] for c in BAD_MONITORING])
def test_bad_monitoring_names_the_key(mutate, expected):
    assert_one_line_names_the_key(mutate, expected)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (
            "quotaUsePercent",
            100,
            "gpushare:monitoring.alerts.quotaUsePercent: 100 is too large; allowed: at most 99 percent",
        ),
        (
            "nodeIdleUtilizationPercent",
            0,
            "gpushare:monitoring.alerts.nodeIdleUtilizationPercent: 0 is too small; allowed: at least 1 percent",
        ),
    ],
)
def test_alert_thresholds_that_could_never_fire_are_refused(key, value, message):
    raw = raw_stack("prod")
    raw["gpushare:monitoring"]["alerts"][key] = value
    with pytest.raises(ConfigError, match=message):
        load_stack_config(raw, today=PLAN_DATE)


# Keys whose effect needs another key: the combination that does nothing is refused where it would make someone believe
# it applied (class 4 of issue 29), warned about where it is a harmless leftover.
def _monitoring_off(raw):
    raw["gpushare:monitoring"]["enabled"] = False


def _existing_prometheus(raw):
    del raw["gpushare:monitoring"]["alertReceiver"]
    raw["gpushare:monitoring"]["existingPrometheus"] = {"url": "http://prometheus.obs.svc:9090"}


@pytest.mark.parametrize(
    ("change", "lines"),
    [
        (
            _monitoring_off,
            ["gpushare:monitoring.alertReceiver: is set but enabled is false: no Alertmanager is deployed"],
        ),
        (
            lambda raw: (_monitoring_off(raw), _existing_prometheus(raw)),
            [
                "gpushare:monitoring.existingPrometheus: is set but enabled is false: the stack creates no scrape "
                "objects"
            ],
        ),
        (
            _existing_prometheus,
            [
                "gpushare:monitoring.retention: '15d' is set with existingPrometheus, where the stack deploys no "
                "Prometheus",
                "gpushare:monitoring.storageSize: '100Gi' is set with existingPrometheus",
                "gpushare:monitoring.storageClass: 'gp2' is set with existingPrometheus",
            ],
        ),
    ],
    ids=[
        "receiver without monitoring",
        "existing Prometheus without monitoring",
        "own Prometheus keys beside an existing one",
    ],
)
def test_monitoring_keys_without_effect_are_refused_one_line_each(change, lines):
    raw = raw_stack("prod")
    change(raw)
    with pytest.raises(ConfigError) as caught:
        load_stack_config(raw, today=PLAN_DATE)
    found = str(caught.value).splitlines()
    assert len(found) == len(lines), found
    assert all(any(line.startswith(expected) for line in found) for expected in lines), found
