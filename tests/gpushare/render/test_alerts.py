"""The GPU alerts and dashboard: every alert has promtool fixtures and a documented runbook, every metric a source."""

from __future__ import annotations

import yaml

from gpushare import metrics
from gpushare.loader import load_stack_config
from gpushare.render import alerts
from tests.conftest import PLAN_DATE, ROOT

MONITORING_DOC = (ROOT / "docs" / "monitoring.md").read_text()


def test_every_alert_has_promtool_fixtures_and_a_documented_runbook_line(prod):
    fixtures = yaml.safe_load(alerts.RULES_TEST_PATH.read_text())
    tested = {case["alertname"] for test in fixtures["tests"] for case in test.get("alert_rule_test", [])}
    fired = {
        case["alertname"]
        for test in fixtures["tests"]
        for case in test.get("alert_rule_test", [])
        if case["exp_alerts"]
    }
    rules = {alert.name: alert for alert in alerts.alerts(prod)}
    assert tested == fired == set(rules)
    for alert in rules.values():
        row = next((line for line in MONITORING_DOC.splitlines() if line.startswith(f"| `{alert.name}`")), None)
        assert row is not None, f"docs/monitoring.md lacks {alert.name}"
        assert row.endswith(f"| {alert.runbook} |"), f"docs/monitoring.md: {alert.name} runbook differs from the rule"


def test_metric_catalog_names_a_source_for_every_component():
    for component, entry in metrics.metric_catalog().items():
        assert entry["source"] and entry["version"] and entry["metrics"], component


def test_team_quota_alert_weighs_hamis_charge_against_its_limit_in_mib(prod_raw):
    """HAMi charges MiB and states its limit in units of memoryFactor MiB: the alert scales the memory limit."""
    prod_raw["gpushare:hami"]["profile"]["memoryFactor"] = 6
    config = load_stack_config(prod_raw, today=PLAN_DATE)
    [quota] = [alert.expr for alert in alerts.alerts(config) if alert.name == "GpuTeamQuotaHigh"]
    assert '(hami_resource_quota_limit{quota_name="nvidia.com/gpumem"} * 6)' in quota
    assert 'hami_resource_quota_limit{quota_name="nvidia.com/gpucores"})' in quota
    assert 'hami_resource_quota_used{namespace=~"ml-research|inference|analytics"}' in quota


def test_headroom_alert_and_panel_only_with_headroom(dev, prod):
    """Karpenter exports buffer metrics only with the gate on, which only headroom turns on."""
    assert [a.name for a in alerts.headroom_alerts(prod)] == ["GpuHeadroomUnsatisfied"]
    assert 'exported_namespace=~"inference"' in alerts.headroom_alerts(prod)[0].expr
    assert alerts.headroom_alerts(dev) == [] and alerts.headroom_panels(dev) == []
    assert [p.title for p in alerts.panels(prod)][-1] == alerts.headroom_panels(prod)[0].title
