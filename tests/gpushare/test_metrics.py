"""Prometheus durations read as Prometheus reads them: the config's retention check and the pack share the parser."""

from __future__ import annotations

import pytest

from gpushare.metrics import component_of, duration_seconds, exported_labels, metric_catalog


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1h30m", 5400), ("15d", 1296000), ("2w", 1209600), ("1y", 31536000), ("90s", 90), ("500ms", 0.5)],
)
def test_durations_in_seconds(text, seconds):
    assert duration_seconds(text) == seconds


@pytest.mark.parametrize("text", ["soon", "", None, "15", "30m1h", "1.5h", "d"])
def test_what_is_no_duration_reads_as_none(text):
    assert duration_seconds(text) is None


def test_every_metric_label_list_belongs_to_its_component_and_within_its_labels():
    """A per-metric label list names a metric of its component (renaming metrics means moving its list) and labels the
    component lists."""
    for name, component in metric_catalog().items():
        for metric, labels in (component.get("metricLabels") or {}).items():
            assert metric in component["metrics"], (name, metric)
            assert set(labels) <= set(component["labels"]), (name, metric)


def test_every_component_says_how_the_stack_scrapes_it(prod):
    from gpushare.render import monitoring
    from gpushare.render.releases import helm_releases

    monitors = {m["metadata"]["name"] for m in monitoring.service_monitors(prod)}
    charts = {r.chart.rsplit("/", 1)[-1] for r in [*helm_releases(prod), *monitoring.monitoring_releases(prod)]}
    for name, component in metric_catalog().items():
        how = component["scrape"]
        assert how.get("synthetic") or how.get("serviceMonitor") in monitors or how.get("release") in charts, name


def test_a_metric_reads_its_own_labels_else_its_components():
    assert exported_labels("karpenter_pods_provisioning_unbound_time_seconds") == {"name", "namespace"}
    assert exported_labels("hami_gpu_shared_count") == set(metric_catalog()["hami-scheduler"]["labels"])
    assert component_of("up") == "prometheus" and component_of("nothing") is None
