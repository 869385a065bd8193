"""Cross-key checks of the chart source: every chart the stack deploys has its archive in the charts folder."""

from __future__ import annotations

from pathlib import Path

from gpushare import charts
from gpushare.config import StackConfig
from gpushare.errors import ConfigError


def check_chart_folder(config: StackConfig) -> list[ConfigError]:
    """Every chart the stack deploys has its archive in gpushare:charts.folder (another single version of it is
    installed with a warning instead: charts.choose_charts)."""
    source = config.chart_source
    if source is None or source.folder is None:
        return []
    choice = charts.choose_charts(config, charts.folder_archives(Path(source.folder)))
    return [ConfigError(charts.FOLDER_KEY, problem) for problem in choice.problems]
