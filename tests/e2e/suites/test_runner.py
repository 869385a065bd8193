"""The suites' registry and report: pure parts."""

from __future__ import annotations

import json
from pathlib import Path

from e2e.cluster.stack import stack_file
from e2e.cluster.tenants import with_tenants
from e2e.suites import report
from e2e.suites.base import WAITED_ON, Result
from e2e.suites.runner import MEASURED_LONGEST, SCENARIOS, left_out, longest_first, tenant_name, tenants_of
from gpushare import names

NAME_MAX = 32


def test_every_scenario_gets_its_own_tenant_and_its_names_fit_the_config() -> None:
    wanted = tenants_of(SCENARIOS)
    assert len(wanted) == len([s for s in SCENARIOS.values() if s.teams])
    document, tenants = with_tenants(stack_file("dev"), wanted)
    for tenant in tenants:
        assert all(len(name) <= NAME_MAX for name in (*tenant.teams.values(), *tenant.pools.values())), tenant
    config = document["config"]
    assert len({t["name"] for t in config["gpushare:teams"]}) == len(config["gpushare:teams"])


def test_a_scenario_that_needs_the_cluster_alone_or_before_the_stack_is_not_both() -> None:
    assert not [s.name for s in SCENARIOS.values() if s.alone and s.before_stack]
    assert tenant_name("seed-scale-up") == "ssu"


def test_tenant_names_are_short_enough_for_their_pool_copies() -> None:
    """A pool copy is `<tenant><n>`: four characters keep kwok's node names within a label value (test_tenants)."""
    assert all(len(tenant) <= 3 for tenant in tenants_of(SCENARIOS))


def test_the_report_says_where_each_scenario_waited(tmp_path: Path) -> None:
    waited = {"karpenter": 61.0, "settle": 45.0}
    result = Result("x", True, "ok", seconds=130.0, waited=waited)
    report.write(tmp_path, [result], 200.0, 40.0)
    document = json.loads((tmp_path / "report.json").read_text())
    assert document["scenarios"][0]["waited"] == waited and document["startup_seconds"] == 40.0
    assert "| x | PASS | 130 s (karpenter 61, settle 45) | ok |" in (tmp_path / "report.md").read_text()
    assert set(waited) <= set(WAITED_ON)


def test_the_last_report_orders_the_next_run_longest_first(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"scenarios": [{"name": "a", "seconds": 10}, {"name": "b", "seconds": 90}]}))
    assert longest_first(path) == ["b", "a"]
    assert longest_first(tmp_path / "missing.json") == list(MEASURED_LONGEST)


def test_a_fresh_clone_starts_the_measured_longest_scenarios_first() -> None:
    """Without an earlier report the longest scenarios lead, in the order measured, and every one is a scenario."""
    assert set(MEASURED_LONGEST) <= set(SCENARIOS)
    assert not any(SCENARIOS[name].alone for name in MEASURED_LONGEST)


def test_a_scenario_that_shows_an_absence_never_gets_those_objects() -> None:
    """no-overlays' copy of its pool is applied without its overlays; every other object, its own and the others',
    is applied."""
    _, tenants = with_tenants(stack_file("dev"), tenants_of(["no-overlays", "seed-scale-up"]))
    skip = left_out(["no-overlays", "seed-scale-up"], tenants)
    overlay = {"kind": "NodeOverlay", "metadata": {"labels": {names.POOL_LABEL: "no0"}}}
    assert skip(overlay)
    assert not skip({"kind": "NodeOverlay", "metadata": {"labels": {names.POOL_LABEL: "ssu0"}}})
    assert not skip({"kind": "NodePool", "metadata": {"name": "no0", "labels": {names.POOL_LABEL: "no0"}}})
