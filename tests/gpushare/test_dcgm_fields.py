"""gpushare/monitoring/dcgm-fields.yaml: every DCGM metric and label the stack's queries read is in the table that
says what dcgm-exporter 4.9 makes of it, so the bump past the hold cannot miss a query."""

from __future__ import annotations

from typing import Any

import promql_parser as pql
import pytest

from gpushare import metrics, pins
from gpushare.files import read_yaml
from gpushare.metrics import METRICS_PATH
from policies.gpushare_policies.promql import alert_rules, dashboard_queries, metric_name, parse, selectors, walk
from policies.gpushare_policies.stack import from_plan
from tests.conftest import PLAN_DATE

TABLE = read_yaml(METRICS_PATH.parent / "dcgm-fields.yaml")
EXPORTER = "dcgm-exporter"


def dcgm_reads(expr: str) -> tuple[set[str], set[str]]:
    """The DCGM metrics a query reads, and the exporter's labels it reads (matched, grouped by, joined on or copied
    by label_replace/label_join) when it reads any DCGM metric."""
    tree, error = parse(expr)
    assert tree is not None, error
    read = {name for s in selectors(tree) if (name := metric_name(s)) and metrics.component_of(name) == EXPORTER}
    if not read:
        return set(), set()
    labels: set[str] = set()
    for node in walk(tree):
        if isinstance(node, pql.VectorSelector):
            labels |= {m.name for m in node.matchers.matchers if m.name != "__name__"}
        elif isinstance(node, pql.AggregateExpr) and node.modifier is not None:
            labels |= set(node.modifier.labels)
        elif isinstance(node, pql.BinaryExpr) and node.modifier is not None:
            if node.modifier.matching is not None:
                labels |= set(node.modifier.matching.labels)
            labels |= set(node.modifier.group_labels or ())
        elif isinstance(node, pql.Call) and node.func.name in ("label_replace", "label_join"):
            sources = node.args[3:4] if node.func.name == "label_replace" else node.args[3:]
            labels |= {arg.val for arg in sources if isinstance(arg, pql.StringLiteral)}
    exported = set().union(*(metrics.exported_labels(name) for name in read))
    return read, labels & exported


def _stack_queries(plan: dict[str, Any]) -> list[str]:
    view = from_plan(plan["resources"], PLAN_DATE)
    return [rule.expr for rule in (*alert_rules(view), *dashboard_queries(view))]


def test_every_dcgm_metric_and_label_a_stack_query_reads_is_in_the_table(plans):
    queries = _stack_queries(plans["prod"])
    read = [dcgm_reads(expr) for expr in queries]
    assert any(names for names, _ in read), "prod ships no query of a DCGM metric: this test would prove nothing"
    for names, labels in read:
        assert names <= set(TABLE["metrics"]), f"add {sorted(names - set(TABLE['metrics']))} to dcgm-fields.yaml"
        assert labels <= set(TABLE["labels"]), f"add {sorted(labels - set(TABLE['labels']))} to dcgm-fields.yaml"


@pytest.mark.parametrize(
    ("expr", "metric", "label"),
    [
        ("avg by (modelName) (DCGM_FI_DEV_GPU_UTIL)", "DCGM_FI_DEV_GPU_UTIL", "modelName"),
        ('DCGM_FI_DEV_FB_USED{pci_bus_id="0"}', "DCGM_FI_DEV_FB_USED", "pci_bus_id"),
        ('label_replace(DCGM_FI_DEV_POWER_USAGE, "n", "$1", "device", "(.+)")', "DCGM_FI_DEV_POWER_USAGE", "device"),
        ("DCGM_FI_DEV_GPU_TEMP * on (gpu) group_left (UUID) up", "DCGM_FI_DEV_GPU_TEMP", "gpu"),
    ],
)
def test_a_query_reading_another_metric_or_label_is_seen(expr, metric, label):
    names, labels = dcgm_reads(expr)
    assert metric in names and label in labels


def test_a_query_of_no_dcgm_metric_reads_no_dcgm_label():
    assert dcgm_reads('sum by (hostname) (up{job="x"})') == (set(), set())


def test_every_catalogued_dcgm_metric_and_label_is_in_the_table():
    """An alert may use any metric metrics.yaml lists for the exporter: each must say what 4.9 makes of it."""
    catalogue = metrics.metric_catalog()[EXPORTER]
    assert set(catalogue["metrics"]) <= set(TABLE["metrics"])
    assert set(TABLE["labels"]) <= set(catalogue["labels"])


def test_a_renamed_or_rescaled_field_is_the_reason_the_exporter_is_held():
    """The table is why pins.yaml holds 4.8.x: as long as a field the stack reads changes unit or name in 4.9, the
    pin stays below 4.9.0."""
    changed = [
        name
        for name, field in TABLE["metrics"].items()
        if field["readers"] and (field["unit_4_9"] != field["unit"] or field["name_4_9"] not in (None, name))
    ]
    changed += [name for name, label in TABLE["labels"].items() if label["name_4_9"] != name]
    assert changed
    assert pins.chart_version(EXPORTER).split(".")[:2] == ["4", "8"]
