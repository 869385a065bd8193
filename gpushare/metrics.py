"""What each pinned component exports to Prometheus, read from gpushare/monitoring/metrics.yaml: the alerts and
dashboard are written against it, and the policy pack checks any PrometheusRule of a stack with it."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any, Final

import yaml

from gpushare.files import SAFE_LOADER

METRICS_PATH = Path(__file__).resolve().parent / "monitoring" / "metrics.yaml"
# Prometheus' duration grammar (prometheus/common model.ParseDuration): units largest first, each at most once.
_DURATION = re.compile(r"^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$")
_UNITS = (365 * 86400, 7 * 86400, 86400, 3600, 60, 1, 0.001)


def duration_seconds(duration: Any) -> float | None:
    """A Prometheus duration (`15d`, `1h30m`) in seconds; None when it is not one. The config's retention check
    and the pack's alert rules read durations with this one parser, so they cannot disagree."""
    match = _DURATION.match(str(duration)) if duration else None
    if match is None or not any(match.groups()):
        return None
    return sum(int(part) * unit for part, unit in zip(match.groups(), _UNITS, strict=True) if part)


@cache
def metric_catalog() -> dict[str, Any]:
    """Component -> its version, source, labels, metrics (and, where known, sanitized labels, value ranges and
    bounded ratios)."""
    return yaml.load(METRICS_PATH.read_text(), Loader=SAFE_LOADER)


def known_metrics() -> frozenset[str]:
    return frozenset(m for component in metric_catalog().values() for m in component["metrics"])


def sanitized_labels() -> dict[str, frozenset[str]]:
    """Metric -> labels whose values the exporter sanitizes (every character outside [a-zA-Z0-9_] becomes `_`)."""
    found: dict[str, set[str]] = {}
    for component in metric_catalog().values():
        for label, metrics in (component.get("sanitized") or {}).items():
            for metric in metrics:
                found.setdefault(metric, set()).add(label)
    return {metric: frozenset(labels) for metric, labels in found.items()}


def value_ranges() -> dict[str, tuple[float, float]]:
    """Metric -> the least and greatest value any of its samples can have."""
    return {
        metric: (float(low), float(high))
        for component in metric_catalog().values()
        for metric, (low, high) in (component.get("ranges") or {}).items()
    }


def bounded_ratios() -> list[dict[str, Any]]:
    """Ratios of two series of one metric that cannot exceed `max` (metric, numerator and denominator label
    values, max, why)."""
    return [ratio for component in metric_catalog().values() for ratio in component.get("ratios") or ()]


# The labels the prometheus-operator gives every ServiceMonitor target (pkg/prometheus/promcfg.go
# generateServiceMonitorConfig, v0.93.0), and Prometheus's own `instance`.
TARGET_LABELS: Final = ("namespace", "service", "pod", "container", "endpoint", "job", "instance")


def component_of(metric: str) -> str | None:
    """The component of metrics.yaml that exports `metric`."""
    return next((name for name, component in metric_catalog().items() if metric in component["metrics"]), None)


def exported_labels(metric: str) -> frozenset[str]:
    """The labels the exporter writes on `metric` (`label_*` stands for a family): the metric's own list where
    metrics.yaml reads one per metric, else its component's."""
    component = metric_catalog()[component_of(metric) or ""]
    return frozenset((component.get("metricLabels") or {}).get(metric) or component.get("labels") or ())


def scrape(metric: str) -> dict[str, Any]:
    """How the stack's Prometheus scrapes `metric` (metrics.yaml `scrape`)."""
    return dict(metric_catalog()[component_of(metric) or ""].get("scrape") or {})
