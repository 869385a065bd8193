"""Where the Helm releases take their charts: the public repositories of gpushare/pins.yaml, or, for air-gapped
installs, what `gpushare:charts` names (a folder of archives, or a mirror).

Listing the folder is the one read of the outside world here (`folder_archives`); choosing from a listing is pure,
so the config checks, the program and the tests judge the same listing the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gpushare import names, pins
from gpushare.config import PROJECT, StackConfig

FOLDER_KEY = f"{PROJECT}:charts.folder"
# Chart -> version -> archive file name.
Archives = Mapping[str, Mapping[str, str]]


@dataclass(frozen=True)
class ChartLocation:
    """What a Helm release's chart, version and repository inputs get."""

    chart: str
    version: str
    repository: str | None


@dataclass(frozen=True)
class ChartChoice:
    """Per chart the stack deploys, where it comes from; the folder's problems (the stack cannot install) and
    deviations (it installs another version than it deploys by default), one line each."""

    locations: dict[str, ChartLocation]
    problems: list[str] = field(default_factory=list)
    deviations: list[str] = field(default_factory=list)


def folder_archives(folder: Path) -> dict[str, dict[str, str]] | None:
    """The chart archives a folder holds, or None when it is no readable folder."""
    try:
        entries = sorted(path.name for path in folder.iterdir() if path.is_file())
    except OSError:
        return None
    found: dict[str, dict[str, str]] = {}
    for entry in entries:
        match = names.CHART_ARCHIVE.fullmatch(entry)
        if match:
            found.setdefault(match["chart"], {})[match["version"]] = entry
    return found


def public_location(chart: str, version: str) -> ChartLocation:
    """Karpenter's charts are OCI artifacts (no separate repository); every other chart is in an https repository."""
    repository = pins.chart_repository(names.KARPENTER_CHART if chart == names.KARPENTER_CRD_CHART else chart)
    if repository.startswith("oci://"):
        return ChartLocation(f"{repository}/{chart}", version, None)
    return ChartLocation(chart, version, repository)


def choose_charts(config: StackConfig, archives: Archives | None) -> ChartChoice:
    """Where each chart of `config.charts()` comes from; `archives` is the listing of gpushare:charts.folder (None
    when it could not be read), unused without a folder."""
    wanted = {chart: config.chart_version(chart) for chart in sorted(config.charts())}
    source = config.chart_source
    if source is None:
        return ChartChoice({chart: public_location(chart, version) for chart, version in wanted.items()})
    if source.repository is not None:
        mirror = source.repository
        if mirror.startswith("oci://"):
            return ChartChoice({c: ChartLocation(f"{mirror}/{c}", v, None) for c, v in wanted.items()})
        return ChartChoice({c: ChartLocation(c, v, mirror) for c, v in wanted.items()})
    folder = str(source.folder)
    # Absolute: the provider that opens the archive need not run where the program does.
    root = Path(folder).absolute()
    if archives is None:
        return ChartChoice({}, [f"{folder!r} is not a folder this program can read; allowed: a folder of archives"])
    choice = ChartChoice({})
    missing = []
    for chart, version in wanted.items():
        held = archives.get(chart, {})
        if version in held:
            choice.locations[chart] = ChartLocation(str(root / held[version]), version, None)
        elif len(held) == 1:
            [(other, archive)] = held.items()
            choice.locations[chart] = ChartLocation(str(root / archive), other, None)
            choice.deviations.append(
                f"{FOLDER_KEY}: {folder} holds {archive}, not {chart}-{version}.tgz: installing {chart} {other} "
                f"instead of {version} (a deviation: the stack's values are written for {version})"
            )
        else:
            others = f", holding {', '.join(held.values())} instead" if held else ""
            missing.append(f"{chart}-{version}.tgz ({pull_command(chart, version)}{others})")
    if missing:
        choice.problems.append(
            f"{folder!r} lacks the archives of charts the stack deploys: {'; '.join(missing)}; allowed: add them (a "
            "folder holding one other version of a chart installs that one, with a warning)"
        )
    return choice


def pull_command(chart: str, version: str) -> str:
    """The `helm pull` that fetches a chart's archive from its public repository."""
    public = public_location(chart, version)
    repository = f" --repo {public.repository}" if public.repository else ""
    return f"helm pull {public.chart}{repository} --version {version}"
