"""The HAMi-WebUI reads the metric names the HAMi chart exports."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import compat, names

from ..rule import Finding, Rule, finding
from ..stack import StackView


def webui_compatible(hami_chart: str, webui_chart: str) -> bool:
    """True when the WebUI chart reads the metric names the HAMi chart's components export."""
    if webui_chart not in compat.WEBUI_HAMI_RANGES:
        return False
    low, high = compat.WEBUI_HAMI_RANGES[webui_chart]
    return low <= compat.parse_version(hami_chart) < high


def check_webui_matches_hami(view: StackView, _config: None) -> Iterator[Finding]:
    webui, hami = view.release(names.WEBUI_CHART), view.release(names.HAMI_CHART)
    if webui is None or hami is None:
        return
    webui_version, hami_version = str(webui.get("version")), str(hami.get("version"))
    if not webui_compatible(hami_version, webui_version):
        pairs = ", ".join(
            f"{version} with HAMi {'.'.join(map(str, low))} to below {'.'.join(map(str, high))}"
            for version, (low, high) in compat.WEBUI_HAMI_RANGES.items()
        )
        yield finding(
            webui,
            "version",
            webui_version,
            f"HAMi-WebUI {webui_version} does not read the metric names HAMi chart {hami_version} exports "
            "(HAMi 2.9 renamed them), so its pages stay empty",
            f"pin a WebUI chart that pairs with HAMi {hami_version} ({pairs})",
        )


RULE = Rule(
    name="monitoring-webui-reads-hami-metrics",
    order=24,
    description="The HAMi-WebUI chart pairs with the HAMi chart's metric names (WebUI <= 1.1.0: HAMi 2.4-2.8; 1.2.0: "
    "HAMi 2.9-2.10).",
    why="HAMi 2.9 renamed its metrics and labels; a WebUI of the other schema shows empty pages.",
    remediation="Pin the WebUI chart that pairs with the pinned HAMi chart.",
    enforcement="mandatory",
    severity="medium",
    check=check_webui_matches_hami,
)
