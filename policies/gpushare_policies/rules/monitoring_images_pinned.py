"""Monitoring releases pin every image: no floating `main`/`latest` tags."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare.render import monitoring

from ..rule import Finding, Rule, finding
from ..stack import StackView, sorted_by_name

MONITORING_CHARTS = (monitoring.KPS_CHART, monitoring.DCGM_CHART, monitoring.WEBUI_CHART)


def check_images_pinned(view: StackView, _config: None) -> Iterator[Finding]:
    for chart in MONITORING_CHARTS:
        for release in sorted_by_name(view.releases(chart)):
            for path in monitoring.unpinned_images(chart, release.get("values") or {}):
                yield finding(
                    release,
                    f"values.{path}",
                    release.get("values", *path.split(".")),
                    "the image tag floats (or the chart's default does), so every restart may run other code",
                    f"set values.{path}.tag to a fixed version or a digest",
                )


RULE = Rule(
    name="monitoring-images-pinned",
    order=25,
    description="Monitoring releases pin every image tag (digests allowed); no `main`/`latest`.",
    why="A floating tag changes what runs on every restart; the WebUI chart defaults to `main`.",
    remediation=f"Set a fixed tag (or digest) for each image of {', '.join(MONITORING_CHARTS)}.",
    enforcement="mandatory",
    severity="medium",
    check=check_images_pinned,
)
