"""gpushare:charts: every Helm release from a folder of archives or a mirror; what a folder lacks is refused, another
single version of a chart is installed with a warning."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpushare import pins
from gpushare.charts import choose_charts, folder_archives
from gpushare.errors import ConfigError
from gpushare.loader import load_stack_config
from gpushare.render.monitoring import monitoring_releases
from gpushare.render.releases import helm_releases, located
from tests.conftest import PLAN_DATE, raw_stack

# What the offline cluster's folder holds: two archives differ from the pins (nvidia-device-plugin, dcgm-exporter).
OFFLINE_FOLDER = (
    "hami-2.10.0.tgz",
    "nvidia-device-plugin-0.20.0.tgz",
    "dcgm-exporter-4.8.2.tgz",
    "hami-webui-1.2.0.tgz",
    "kube-prometheus-stack-88.5.3.tgz",
)


def _folder(tmp_path: Path, archives: tuple[str, ...]) -> Path:
    folder = tmp_path / "charts"
    folder.mkdir()
    for archive in archives:
        (folder / archive).write_bytes(b"")
    return folder


def _with_charts(stack: str, charts: dict[str, str]) -> dict:
    raw = raw_stack(stack)
    raw["gpushare:charts"] = charts
    return raw


def test_a_folder_lists_archives_by_chart_and_version(tmp_path):
    folder = _folder(tmp_path, (*OFFLINE_FOLDER, "README.md", "karpenter-1.15.1-rc.1.tgz"))
    assert folder_archives(folder) == {
        "hami": {"2.10.0": "hami-2.10.0.tgz"},
        "nvidia-device-plugin": {"0.20.0": "nvidia-device-plugin-0.20.0.tgz"},
        "dcgm-exporter": {"4.8.2": "dcgm-exporter-4.8.2.tgz"},
        "hami-webui": {"1.2.0": "hami-webui-1.2.0.tgz"},
        "kube-prometheus-stack": {"88.5.3": "kube-prometheus-stack-88.5.3.tgz"},
        "karpenter": {"1.15.1-rc.1": "karpenter-1.15.1-rc.1.tgz"},
    }
    assert folder_archives(tmp_path / "missing") is None


@pytest.mark.parametrize("stack", ["dev", "prod", "existing"])
def test_without_the_key_every_release_keeps_its_public_repository(stack):
    config = load_stack_config(raw_stack(stack), today=PLAN_DATE)
    releases = [*helm_releases(config), *monitoring_releases(config)]
    assert located(releases, choose_charts(config, None).locations) == releases


def test_the_offline_folder_installs_what_it_holds_and_names_each_deviation(tmp_path):
    folder = _folder(tmp_path, OFFLINE_FOLDER)
    config = load_stack_config(_with_charts("existing", {"folder": str(folder)}), today=PLAN_DATE)
    choice = choose_charts(config, folder_archives(folder))
    assert choice.problems == []
    releases = {r.name: r for r in located([*helm_releases(config), *monitoring_releases(config)], choice.locations)}
    assert {(r.chart, r.version, r.repository) for r in releases.values()} == {
        (str(folder / archive), archive.rsplit("-", 1)[1].removesuffix(".tgz"), None) for archive in OFFLINE_FOLDER
    }
    assert choice.deviations == [
        f"gpushare:charts.folder: {folder} holds dcgm-exporter-4.8.2.tgz, not dcgm-exporter-"
        f"{pins.chart_version('dcgm-exporter')}.tgz: installing dcgm-exporter 4.8.2 instead of "
        f"{pins.chart_version('dcgm-exporter')} (a deviation: the stack's values are written for "
        f"{pins.chart_version('dcgm-exporter')})",
        f"gpushare:charts.folder: {folder} holds nvidia-device-plugin-0.20.0.tgz, not nvidia-device-plugin-"
        f"{pins.chart_version('nvidia-device-plugin')}.tgz: installing nvidia-device-plugin 0.20.0 instead of "
        f"{pins.chart_version('nvidia-device-plugin')} (a deviation: the stack's values are written for "
        f"{pins.chart_version('nvidia-device-plugin')})",
    ]


def test_a_folder_without_a_charts_archive_is_refused_with_the_pull_that_fetches_it(tmp_path):
    """The new-cluster mode deploys Karpenter's charts too: the offline folder holds none of them."""
    folder = _folder(tmp_path, OFFLINE_FOLDER)
    with pytest.raises(ConfigError) as error:
        load_stack_config(_with_charts("dev", {"folder": str(folder)}), today=PLAN_DATE)
    version = pins.chart_version("karpenter")
    assert str(error.value) == (
        f"gpushare:charts.folder: {str(folder)!r} lacks the archives of charts the stack deploys: "
        f"karpenter-{version}.tgz (helm pull oci://public.ecr.aws/karpenter/karpenter --version {version}); "
        f"karpenter-crd-{version}.tgz (helm pull oci://public.ecr.aws/karpenter/karpenter-crd --version {version}); "
        "allowed: add them (a folder holding one other version of a chart installs that one, with a warning)"
    )


def test_several_other_versions_are_refused_not_guessed(tmp_path):
    folder = _folder(tmp_path, (*OFFLINE_FOLDER, "nvidia-device-plugin-0.19.0.tgz"))
    with pytest.raises(ConfigError) as error:
        load_stack_config(_with_charts("existing", {"folder": str(folder)}), today=PLAN_DATE)
    version = pins.chart_version("nvidia-device-plugin")
    assert str(error.value).startswith(
        f"gpushare:charts.folder: {str(folder)!r} lacks the archives of charts the stack deploys: "
        f"nvidia-device-plugin-{version}.tgz (helm pull nvidia-device-plugin --repo "
        f"{pins.chart_repository('nvidia-device-plugin')} --version {version}, holding "
        "nvidia-device-plugin-0.19.0.tgz, nvidia-device-plugin-0.20.0.tgz instead); allowed: add them"
    )


def test_a_folder_that_is_not_one_is_refused(tmp_path):
    with pytest.raises(ConfigError) as error:
        load_stack_config(_with_charts("existing", {"folder": str(tmp_path / "nope")}), today=PLAN_DATE)
    assert str(error.value) == (
        f"gpushare:charts.folder: {str(tmp_path / 'nope')!r} is not a folder this program can read; allowed: a "
        "folder of archives"
    )


def test_an_oci_mirror_holds_every_chart_under_its_path():
    config = load_stack_config(_with_charts("dev", {"repository": "oci://mirror.example.com/charts"}), today=PLAN_DATE)
    releases = located(helm_releases(config), choose_charts(config, None).locations)
    assert {(r.chart, r.repository) for r in releases} == {
        (f"oci://mirror.example.com/charts/{r.chart_name}", None) for r in helm_releases(config)
    }


def test_an_http_mirror_is_one_repository_for_every_chart():
    config = load_stack_config(_with_charts("dev", {"repository": "https://charts.example.com"}), today=PLAN_DATE)
    releases = located(helm_releases(config), choose_charts(config, None).locations)
    assert {(r.chart, r.repository) for r in releases} == {
        (r.chart_name, "https://charts.example.com") for r in helm_releases(config)
    }


@pytest.mark.parametrize(
    ("charts", "line"),
    [
        ({}, "gpushare:charts.folder: neither of folder and repository set; allowed: exactly one of them"),
        (
            {"folder": "charts", "repository": "https://charts.example.com"},
            "gpushare:charts.folder: both of folder and repository set; allowed: exactly one of them",
        ),
        (
            {"repository": "https://charts.example.com/"},
            "gpushare:charts.repository: 'https://charts.example.com/' is not an oci:// registry path or http(s):// "
            "Helm repository without trailing slash",
        ),
        ({"folder": ""}, "gpushare:charts.folder: '' is not a non-empty text"),
        ({"mirror": "x"}, "gpushare:charts.mirror: unknown key"),
    ],
    ids=["neither", "both", "trailing slash", "empty folder", "unknown key"],
)
def test_each_bad_chart_source_is_one_line(charts, line):
    with pytest.raises(ConfigError) as error:
        load_stack_config(_with_charts("dev", charts), today=PLAN_DATE)
    assert str(error.value).startswith(line) and "\n" not in str(error.value)


def test_a_relative_folder_reaches_the_releases_as_an_absolute_path(tmp_path, monkeypatch):
    """The provider opening the archive need not run in the program's folder."""
    _folder(tmp_path, OFFLINE_FOLDER)
    monkeypatch.chdir(tmp_path)
    config = load_stack_config(_with_charts("existing", {"folder": "charts"}), today=PLAN_DATE)
    location = choose_charts(config, folder_archives(Path("charts"))).locations["hami"]
    assert location.chart == str(tmp_path / "charts" / "hami-2.10.0.tgz")
