"""The chart, image and CRD versions the stack pins, read from gpushare/pins.yaml.

One file, so an upgrade (most often a chart bump) touches nothing else and Renovate can propose it; config
defaults, renderers and the policy pack all take their versions from here.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from gpushare.files import read_yaml

PINS_PATH = Path(__file__).resolve().parent / "pins.yaml"


@cache
def _pins() -> dict[str, Any]:
    return read_yaml(PINS_PATH)


def chart_version(chart: str) -> str:
    """The pinned version of a chart (karpenter also pins karpenter-crd)."""
    return str(_pins()["charts"][chart]["version"])


def chart_repository(chart: str) -> str:
    """Where the chart is published: an https Helm repository, or an `oci://` registry path."""
    return str(_pins()["charts"][chart]["repository"])


def image_tag(reference: str) -> str:
    """The pinned tag of an image, by its reference without tag (`registry/repository`)."""
    return str(_pins()["images"][reference])


def image(reference: str) -> str:
    """The full pinned image reference, `registry/repository:tag`."""
    return f"{reference}:{image_tag(reference)}"


def kubernetes_minors() -> tuple[str, ...]:
    """The Kubernetes minors (`1.NN`) the stack supports: those with a pinned kube-scheduler patch."""
    return tuple(_pins()["kubernetes"]["kube-scheduler"])


def kube_scheduler_tag(minor: str) -> str:
    """The pinned kube-scheduler image tag (`v1.NN.P`) of a supported minor; KeyError for any other."""
    return str(_pins()["kubernetes"]["kube-scheduler"][minor])
