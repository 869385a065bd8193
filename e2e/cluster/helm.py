"""The chart archives the rig installs or renders, and Helm's own rendering of a release of the stack's plan.

The archives come from the folder GPUSHARE_CHART_ARCHIVES names (an air-gapped user's folder, or a mirror's pull of
it: `<chart>-<version>.tgz`). The rig's scenarios and the simulator start HAMi's scheduler as the HAMi chart renders
it: `helm template` of the archive with the release values the plan holds, by Helm v3.18.6 (the Helm library the
pulumi-kubernetes provider embeds, built from e2e/cluster/tools/helm), for the rig's Kubernetes version. The engine
phase installs the same archives with the provider's Helm.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from e2e.cluster.errors import RigError
from gpushare.charts import folder_archives, pull_command

CHARTS_ENV = "GPUSHARE_CHART_ARCHIVES"


def charts_folder() -> Path:
    """The folder of chart archives; RigError when it is not named or not there."""
    folder = os.environ.get(CHARTS_ENV)
    if not folder:
        raise RigError(
            f"the rig renders and installs the stack's charts from a folder of archives (<chart>-<version>.tgz): set "
            f"{CHARTS_ENV}"
        )
    path = Path(folder).resolve()
    if not path.is_dir():
        raise RigError(f"{CHARTS_ENV}={folder}: no such folder")
    return path


@dataclass(frozen=True)
class ChartArchive:
    """The archive a release's chart comes from, and the deviation when the folder holds another version."""

    path: Path
    version: str
    deviation: str | None


def chart_archive(chart: str, version: str) -> ChartArchive:
    """`<chart>-<version>.tgz` from the charts folder; the one other version it holds, as a deviation; else RigError
    naming the archive and how to fetch it."""
    folder = charts_folder()
    held = (folder_archives(folder) or {}).get(chart, {})
    if version in held:
        return ChartArchive(folder / held[version], version, None)
    if len(held) == 1:
        [(other, archive)] = held.items()
        deviation = f"{chart}: chart {other} rendered from {archive} in {CHARTS_ENV}, the stack pins {version}"
        return ChartArchive(folder / archive, other, deviation)
    raise RigError(f"{CHARTS_ENV}={folder} lacks {chart}-{version}.tgz ({pull_command(chart, version)})")


def render(
    helm: Path, release: str, namespace: str, archive: Path, values: dict[str, Any], kube_version: str, work: Path
) -> list[dict[str, Any]]:
    """The objects `helm template` renders for the release: what `helm install` would create, as plain objects."""
    work.mkdir(parents=True, exist_ok=True)
    values_file = work / f"{release}-values.yaml"
    values_file.write_text(yaml.safe_dump(values))
    command = [str(helm), "template", release, str(archive), "--namespace", namespace, "--values", str(values_file)]
    command += ["--kube-version", kube_version]
    # Helm keeps its caches and config under these; rendering an archive needs none, and none is left in $HOME.
    home = str(work / "helm-home")
    env = {**os.environ, "HELM_CACHE_HOME": home, "HELM_CONFIG_HOME": home, "HELM_DATA_HOME": home}
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if result.returncode != 0:
        raise RigError(f"helm template of {archive.name} failed: {result.stderr.strip()}")
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]
