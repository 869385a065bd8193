"""Monitoring releases pin every image: no floating `main`/`latest` tags."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from gpushare import names

from ..rule import Finding, Rule, finding
from ..stack import StackView, sorted_by_name

MONITORING_CHARTS = (names.KUBE_PROMETHEUS_STACK_CHART, names.DCGM_CHART, names.WEBUI_CHART)
# Image tags that move: a release pinned to one of them is not reproducible.
FLOATING_TAGS: Final = frozenset({"", "latest", "main", "master"})
# Image value paths each monitoring chart must have pinned in its values, because the chart's default floats
# (hami-webui 1.1.0 and 1.2.0: `main`) or could change under the same chart version.
PINNED_IMAGE_PATHS: Final = {names.WEBUI_CHART: ("image.frontend", "image.backend"), names.DCGM_CHART: ("image",)}


def floating_image_tags(values: Any, path: str = "") -> list[str]:
    """Value paths of every `image` map whose tag is missing or moves (main, latest, ...)."""
    found: list[str] = []
    if isinstance(values, Mapping):
        for key, value in values.items():
            here = f"{path}.{key}" if path else str(key)
            if isinstance(value, Mapping) and "repository" in value and str(value.get("tag", "")) in FLOATING_TAGS:
                found.append(here)
            found.extend(floating_image_tags(value, here))
    return found


def unpinned_images(chart: str, values: Mapping[str, Any]) -> list[str]:
    """Image value paths of a monitoring release that float: a floating tag set, or a chart whose own default
    floats (hami-webui defaults to `main`) left without a tag."""
    problems = floating_image_tags(values)
    for path in PINNED_IMAGE_PATHS.get(chart, ()):
        node: Any = values
        for part in path.split("."):
            node = node.get(part, {}) if isinstance(node, Mapping) else {}
        if str(node.get("tag", "")) in FLOATING_TAGS and path not in problems:
            problems.append(path)
    return problems


def check_images_pinned(view: StackView, _config: None) -> Iterator[Finding]:
    for chart in MONITORING_CHARTS:
        for release in sorted_by_name(view.releases(chart)):
            for path in unpinned_images(chart, release.get("values") or {}):
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
