"""Container images: where each comes from (its upstream home), whether it is pinned, and how registry mirrors
(`gpushare:registryMirrors`) move it, as pure functions on plain data.

A mirror such as an ECR pull-through cache serves one upstream registry under a repository prefix:
`docker.io/projecthami/hami:v2.8.3` is pulled as `<account>.dkr.ecr.<region>.amazonaws.com/docker-hub/
projecthami/hami:v2.8.3`. Tags and digests stay as they are; only the registry part changes.

Config validation (`mirror_problem`, `provenance_problem` for the mock image) and the policy pack (rule
`image-provenance`, over every image a plan runs) judge images with the same table and functions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

from gpushare import names

DOCKER_HUB: Final = "docker.io"


@dataclass(frozen=True)
class ImageHome:
    """Where the project that builds an image publishes it, and what in the stack runs it."""

    reference: str  # registry/repository
    project: str
    runs: str
    charts: tuple[str, ...]  # the releases that run it (the mock comes with HAMi's)

    @property
    def registry(self) -> str:
        return self.reference.split("/", 1)[0]

    @property
    def path(self) -> str:
        return self.reference.split("/", 1)[1]


# Every image the stack runs, at its upstream home: the registry and namespace of the project that builds it (read
# from each project's release workflow or chart defaults). Copies in a personal namespace or a fork are not listed:
# the HAMi chart's certificate jobs default to docker.io/liangjw/ and docker.io/jettech/ kube-webhook-certgen, and
# kube-prometheus-stack's (since 80.2.2) to ghcr.io/jkroepke/kube-webhook-certgen, a maintainer's fork of
# ingress-nginx's; the stack runs ingress-nginx's own image for both instead. HAMi's kube-scheduler defaults to a
# copy on registry.cn-hangzhou.aliyuncs.com/google_containers; the stack runs registry.k8s.io's.
IMAGE_HOMES: Final = (
    ImageHome(
        "docker.io/projecthami/hami",
        "Project-HAMi/HAMi",
        "HAMi scheduler extender, device plugin, monitor",
        (names.HAMI_CHART,),
    ),
    ImageHome(
        "docker.io/projecthami/mock-device-plugin",
        "Project-HAMi/mock-device-plugin",
        "mock device plugin",
        (names.HAMI_CHART,),
    ),
    ImageHome(
        "docker.io/projecthami/hami-webui-fe-oss",
        "Project-HAMi/HAMi-WebUI",
        "HAMi-WebUI frontend",
        (names.WEBUI_CHART,),
    ),
    ImageHome(
        "docker.io/projecthami/hami-webui-be-oss", "Project-HAMi/HAMi-WebUI", "HAMi-WebUI backend", (names.WEBUI_CHART,)
    ),
    ImageHome("registry.k8s.io/kube-scheduler", "kubernetes/kubernetes", "HAMi's kube-scheduler", (names.HAMI_CHART,)),
    # No release runs it: a warm-headroom PodTemplate names it, and Karpenter only simulates that template's pods.
    ImageHome("registry.k8s.io/pause", "kubernetes/kubernetes", "warm-headroom PodTemplates (never pulled)", ()),
    ImageHome(
        "registry.k8s.io/ingress-nginx/kube-webhook-certgen",
        "kubernetes/ingress-nginx",
        "webhook certificate jobs of HAMi and kube-prometheus-stack",
        (names.HAMI_CHART, names.KUBE_PROMETHEUS_STACK_CHART),
    ),
    ImageHome(
        "nvcr.io/nvidia/k8s-device-plugin",
        "NVIDIA/k8s-device-plugin",
        "NVIDIA device plugin",
        (names.NVIDIA_PLUGIN_CHART,),
    ),
    ImageHome("nvcr.io/nvidia/k8s/dcgm-exporter", "NVIDIA/dcgm-exporter", "GPU exporter", (names.DCGM_CHART,)),
    ImageHome(
        "public.ecr.aws/karpenter/controller",
        "aws/karpenter-provider-aws",
        "Karpenter controller",
        (names.KARPENTER_CHART,),
    ),
    ImageHome(
        "quay.io/prometheus-operator/prometheus-operator",
        "prometheus-operator/prometheus-operator",
        "Prometheus operator",
        (names.KUBE_PROMETHEUS_STACK_CHART,),
    ),
    ImageHome(
        "quay.io/prometheus-operator/prometheus-config-reloader",
        "prometheus-operator/prometheus-operator",
        "config reloader of Prometheus and Alertmanager",
        (names.KUBE_PROMETHEUS_STACK_CHART,),
    ),
    ImageHome(
        "quay.io/prometheus/prometheus", "prometheus/prometheus", "Prometheus", (names.KUBE_PROMETHEUS_STACK_CHART,)
    ),
    ImageHome(
        "quay.io/prometheus/alertmanager",
        "prometheus/alertmanager",
        "Alertmanager",
        (names.KUBE_PROMETHEUS_STACK_CHART,),
    ),
    ImageHome(
        "quay.io/prometheus/node-exporter",
        "prometheus/node_exporter",
        "node exporter",
        (names.KUBE_PROMETHEUS_STACK_CHART,),
    ),
    ImageHome("docker.io/grafana/grafana", "grafana/grafana", "Grafana", (names.KUBE_PROMETHEUS_STACK_CHART,)),
    ImageHome(
        "quay.io/kiwigrid/k8s-sidecar",
        "kiwigrid/k8s-sidecar",
        "Grafana's dashboard sidecar",
        (names.KUBE_PROMETHEUS_STACK_CHART,),
    ),
    ImageHome(
        "registry.k8s.io/kube-state-metrics/kube-state-metrics",
        "kubernetes/kube-state-metrics",
        "kube-state-metrics",
        (names.KUBE_PROMETHEUS_STACK_CHART,),
    ),
)
# Every registry an image of the stack comes from (its own values and the charts' defaults it pulls).
UPSTREAM_REGISTRIES: Final = tuple(sorted({home.registry for home in IMAGE_HOMES}))
# Registries where namespaces belong to whoever signs up (or to a project other than the image's): an image there is
# the upstream one only at its exact home, and a mirror there is someone's namespace, not a mirror the stack's owner
# runs. Docker Hub under its other names, the upstream registries above, GHCR, GCR, GitLab, Aliyun ACR.
PUBLIC_REGISTRY: Final = re.compile(
    r"^((registry-1|index)\.docker\.io|ghcr\.io|gcr\.io|registry\.gitlab\.com|registry(-vpc)?\.[a-z0-9-]+\.aliyuncs\.com|"
    + "|".join(re.escape(registry) for registry in UPSTREAM_REGISTRIES)
    + r")$"
)
# The public registries by name, for telling a registry the stack's owner runs from one that imitates them.
PUBLIC_HOSTS: Final = tuple(sorted({"docker.io", "ghcr.io", "gcr.io", "registry.gitlab.com", *UPSTREAM_REGISTRIES}))
# Image tags that move: an image pinned to one of them is not reproducible.
FLOATING_TAGS: Final = frozenset({"", "latest", "main", "master"})
# A mirror prefix: registry host (optionally :port), then optional repository path; no scheme, no trailing slash.
MIRROR_PATTERN: Final = (
    r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+(:[0-9]{1,5})?(/[a-z0-9]+([._-][a-z0-9]+)*)*$"
)
# Image value maps set in a chart's values: `{registry, repository, tag}` or `{repository, tag}`.
ImageMaps = Mapping[str, Mapping[str, str]]


@dataclass(frozen=True)
class ChartImage:
    """An image a chart pulls at a value path when the values leave it: `registry` None where the chart's
    `repository` holds the registry; `pinned` whether the chart's own tag is fixed (its version or a literal)."""

    registry: str | None
    repository: str
    tag: str  # the chart's default tag, for messages ("" when derived from the chart version)
    pinned: bool

    @property
    def value_map(self) -> dict[str, str]:
        """The chart's value map without its tag: what a mirror rewrites."""
        return (
            {"repository": self.repository}
            if self.registry is None
            else {
                "registry": self.registry,
                "repository": self.repository,
            }
        )


# What each chart pulls by default (values.yaml at the pinned versions; read, not vendored):
# - hami 2.7.0-2.10.0 charts/hami/values.yaml and templates/_helpers.tpl: the extender, device plugin and monitor take
#   global.imageTag (the chart version) over their own tag; kube-scheduler's empty tag becomes the live API server's
#   version at `helm install` (resolvedKubeSchedulerTag), so it floats; the certificate jobs run a personal image
#   (scheduler.patch.imageNew; its `image` twin runs only below Kubernetes 1.22, templates/scheduler/job-patch).
# - karpenter 1.14-1.15 charts/karpenter/values.yaml controller.image (tag and digest, the chart's appVersion).
# - nvidia-device-plugin 0.20 deployments/helm/nvidia-device-plugin/values.yaml image (tag v<appVersion>).
# - kube-prometheus-stack 88.5.3 values.yaml and its subcharts grafana 12.11.1, kube-state-metrics 8.4.0,
#   prometheus-node-exporter 4.56.1 (tags from their appVersions); its webhook jobs run a fork (see IMAGE_HOMES).
# - dcgm-exporter 4.8.4 deployment/values.yaml image (the chart's own tag); hami-webui 1.2.0 charts/hami-webui/
#   values.yaml image.frontend and image.backend (tag `main`, floating).
CHART_IMAGES: Final[Mapping[str, Mapping[str, ChartImage]]] = {
    names.HAMI_CHART: {
        "scheduler.extender.image": ChartImage("docker.io", "projecthami/hami", "", True),
        "devicePlugin.image": ChartImage("docker.io", "projecthami/hami", "", True),
        "devicePlugin.monitor.image": ChartImage("docker.io", "projecthami/hami", "", True),
        "scheduler.kubeScheduler.image": ChartImage(
            "registry.cn-hangzhou.aliyuncs.com", "google_containers/kube-scheduler", "", False
        ),
        "scheduler.patch.imageNew": ChartImage("docker.io", "liangjw/kube-webhook-certgen", "v1.1.1", True),
    },
    names.KARPENTER_CHART: {"controller.image": ChartImage(None, "public.ecr.aws/karpenter/controller", "", True)},
    names.NVIDIA_PLUGIN_CHART: {"image": ChartImage(None, "nvcr.io/nvidia/k8s-device-plugin", "", True)},
    names.KUBE_PROMETHEUS_STACK_CHART: {
        "prometheusOperator.image": ChartImage("quay.io", "prometheus-operator/prometheus-operator", "", True),
        "prometheusOperator.prometheusConfigReloader.image": ChartImage(
            "quay.io", "prometheus-operator/prometheus-config-reloader", "", True
        ),
        "prometheusOperator.admissionWebhooks.patch.image": ChartImage(
            "ghcr.io", "jkroepke/kube-webhook-certgen", "1.8.7", True
        ),
        "prometheus.prometheusSpec.image": ChartImage("quay.io", "prometheus/prometheus", "", True),
        "alertmanager.alertmanagerSpec.image": ChartImage("quay.io", "prometheus/alertmanager", "", True),
        "grafana.image": ChartImage("docker.io", "grafana/grafana", "", True),
        "grafana.sidecar.image": ChartImage("quay.io", "kiwigrid/k8s-sidecar", "", True),
        "kube-state-metrics.image": ChartImage("registry.k8s.io", "kube-state-metrics/kube-state-metrics", "", True),
        "prometheus-node-exporter.image": ChartImage("quay.io", "prometheus/node-exporter", "", True),
    },
    names.DCGM_CHART: {"image": ChartImage(None, "nvcr.io/nvidia/k8s/dcgm-exporter", "", True)},
    names.WEBUI_CHART: {
        "image.frontend": ChartImage(None, "projecthami/hami-webui-fe-oss", "main", False),
        "image.backend": ChartImage(None, "projecthami/hami-webui-be-oss", "main", False),
    },
}
# Charts whose templates put `global.imageRegistry` in front of every image they pull (HAMi's common.images.image;
# kube-prometheus-stack's templates and subcharts), and HAMi's images that take `global.imageTag` over their own tag.
GLOBAL_REGISTRY_CHARTS: Final = (names.HAMI_CHART, names.KUBE_PROMETHEUS_STACK_CHART)
GLOBAL_TAG_IMAGES: Final = {
    names.HAMI_CHART: ("scheduler.extender.image", "devicePlugin.image", "devicePlugin.monitor.image")
}


def chart_image_maps(chart: str, paths: tuple[str, ...] | None = None) -> dict[str, dict[str, str]]:
    """The chart's default image value maps (all, or those at `paths`): what a renderer writes out for a mirror."""
    return {path: image.value_map for path, image in CHART_IMAGES[chart].items() if paths is None or path in paths}


def split_reference(image: str) -> tuple[str, str, str]:
    """`repo[:tag][@sha256:...]` -> (repo, tag, digest); a registry port (`host:5000/x`) is not a tag."""
    name, _, digest = image.partition("@")
    repository, _, tag = name.rpartition(":")
    if not repository or "/" in tag:
        return name, "", digest
    return repository, tag, digest


def split_registry(image: str) -> tuple[str, str]:
    """`projecthami/hami:v1` -> (`docker.io`, `projecthami/hami:v1`); `busybox` -> (`docker.io`, `library/busybox`).

    Like the container runtime: the first path segment is a registry only when it looks like a host.
    """
    first, slash, rest = image.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        registry, path = first, rest
    else:
        registry, path = DOCKER_HUB, image
    if registry == DOCKER_HUB and "/" not in path:
        path = f"library/{path}"  # Docker Hub's official images; ECR's cache needs the segment spelled out
    return registry, path


def mirrored(image: str, mirrors: Mapping[str, str]) -> str:
    """The image pulled through the mirror of its registry; unchanged when that registry has none."""
    registry, path = split_registry(image)
    mirror = mirrors.get(registry)
    return image if mirror is None else f"{mirror}/{path}"


def mirrored_image_map(image: Mapping[str, Any], mirrors: Mapping[str, str]) -> dict[str, Any]:
    """A chart's image value map with its registry mirrored, keeping the chart's split: charts with a
    `registry` key get the mirror there, the others carry the registry at the front of `repository`."""
    if "registry" not in image:
        return {**image, "repository": mirrored(str(image["repository"]), mirrors)}
    registry, path = split_registry(f"{image['registry']}/{image['repository']}")
    mirror = mirrors.get(registry)
    return dict(image) if mirror is None else {**image, "registry": mirror, "repository": path}


def is_image_map(value: Any) -> bool:
    """Helm charts spell an image as a map with a `repository` (and `registry`, `tag`, `digest`...)."""
    return isinstance(value, Mapping) and isinstance(value.get("repository"), str)


def mirror_images(data: Any, mirrors: Mapping[str, str]) -> Any:
    """Every image in Helm values or a Kubernetes object mirrored: image maps, and strings under `image`."""
    if not mirrors:
        return data
    if isinstance(data, list):
        return [mirror_images(item, mirrors) for item in data]
    if not isinstance(data, Mapping):
        return data
    if is_image_map(data):
        return mirrored_image_map(data, mirrors)
    return {
        key: mirrored(value, mirrors) if key == "image" and isinstance(value, str) else mirror_images(value, mirrors)
        for key, value in data.items()
    }


def with_chart_images(values: dict[str, Any], chart_images: ImageMaps, mirrors: Mapping[str, str]) -> dict[str, Any]:
    """Release values with every image mirrored, the chart's own default images included: those are written
    out (at `chart_images` value paths) only when a mirror covers their registry, as the chart would otherwise
    pull them upstream; without a mirror the values stay exactly as rendered."""
    merged = values
    for path, image in chart_images.items():
        if mirrored_image_map(image, mirrors) != image:
            merged = _merge_at(merged, path.split("."), image)
    return mirror_images(merged, mirrors)


def _merge_at(values: Mapping[str, Any], path: list[str], image: Mapping[str, str]) -> dict[str, Any]:
    """Values with `image` under `path`; keys the values already set there (a pinned tag) win."""
    head, *rest = path
    current = values.get(head, {})
    merged = _merge_at(current, rest, image) if rest else {**image, **current}
    return {**values, head: merged}


def _reference_path(image: str) -> tuple[str, str]:
    """(registry, repository path) of an image reference, tag and digest dropped."""
    return split_registry(split_reference(image)[0])


def _edits(a: str, b: str) -> int:
    """Levenshtein distance: how many characters to change, add or drop to turn `a` into `b`."""
    previous = list(range(len(b) + 1))
    for i, char in enumerate(a, 1):
        current = [i]
        for j, other in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char != other)))
        previous = current
    return previous[-1]


def is_public(host: str) -> bool:
    """A public registry, under any of its names (`us.gcr.io` is GCR's): a namespace there is whoever's."""
    host = host.split(":", 1)[0]
    return bool(PUBLIC_REGISTRY.match(host)) or any(host.endswith(f".{public}") for public in PUBLIC_HOSTS)


@cache
def imitated_registry(host: str) -> str | None:
    """The public registry a host imitates without being it or one of its own names: one spelled inside it
    (`docker.io.example.com`, `quay.io-cache.net`) or within two characters of it (`nvrc.io`, `docker.i0`)."""
    host = host.split(":", 1)[0]
    if is_public(host):
        return None
    return next(
        (public for public in PUBLIC_HOSTS if public in host or (host != public and _edits(host, public) <= 2)),
        None,
    )


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def home_of(image: str, trusted: tuple[str, ...] = ()) -> ImageHome | None:
    """The upstream home `image` is, mirrors or copies: on a public registry only the home itself; on a host that
    imitates one, nothing; on any other host a repository path ending with a home's path (a mirror's
    `<prefix>/<upstream path>`), or, under one of the `trusted` registries the stack's owner runs, any path whose
    image name is a home's (a copy at a path of their own). None for anything else."""
    registry, path = _reference_path(image)
    exact = next((home for home in IMAGE_HOMES if (home.registry, home.path) == (registry, path)), None)
    if exact is not None or is_public(registry) or imitated_registry(registry):
        return exact
    mirror = next((home for home in IMAGE_HOMES if path == home.path or path.endswith(f"/{home.path}")), None)
    if mirror is not None or not any(f"{registry}/{path}".startswith(f"{prefix}/") for prefix in trusted):
        return mirror
    return next((home for home in IMAGE_HOMES if _name(home.path) == _name(path)), None)


def provenance_problem(image: str, trusted: tuple[str, ...] = ()) -> str | None:
    """Why `image` is not its project's own (or a mirror or trusted copy of it), with what is allowed; None when it
    is."""
    if home_of(image, trusted) is not None:
        return None
    registry, path = _reference_path(image)
    name = _name(path)
    homes = [home.reference for home in IMAGE_HOMES if _name(home.path) == name]
    imitated = imitated_registry(registry)
    if imitated is not None:
        return (
            f"{registry}/{path} is on {registry.split(':', 1)[0]}, a host that imitates the public registry "
            f"{imitated} without being it; allowed: {', '.join(homes) or 'an image listed in IMAGE_HOMES'}, or that "
            "image behind a mirror or in a registry you run (gpushare:registryMirrors, gpushare:trustedRegistries)"
        )
    if not homes:
        return (
            f"{registry}/{path} is no image whose upstream home gpushare knows (gpushare/images.py IMAGE_HOMES); "
            "allowed: an image listed there, at its home or behind a mirror of its registry"
        )
    what = (
        "a personal namespace, a fork or a third-party copy"
        if is_public(registry)
        else "a path that mirrors none of its upstream homes, in no registry declared trusted"
    )
    return (
        f"{registry}/{path} is not where its project publishes it ({what}); allowed: {', '.join(homes)}, that "
        "path behind a mirror of its registry (gpushare:registryMirrors), or a copy named "
        f"{name} in a registry you run declared in gpushare:trustedRegistries"
    )


def pin_problem(tag: str, digest: str) -> str | None:
    """Why an image of this tag and digest may run other code on the next pull; None when it is pinned."""
    if digest or tag not in FLOATING_TAGS:
        return None
    moving = "has no tag of its own" if not tag else f"tag {tag!r} moves"
    return f"{moving}: every pull may run other code; allowed: a fixed version tag or a digest"


def mirror_problem(prefix: str) -> str | None:
    """Why a mirror prefix (or a trusted registry) is no registry the stack's owner runs, or None."""
    if not re.fullmatch(MIRROR_PATTERN, prefix):
        return (
            f"{prefix!r} is not a registry host[/path] in lower case, without scheme or trailing slash; allowed: "
            "e.g. 123456789012.dkr.ecr.us-west-2.amazonaws.com/docker-hub"
        )
    host = prefix.split("/", 1)[0]
    imitated = imitated_registry(host)
    if imitated is not None:
        return (
            f"{prefix!r} is on {host.split(':', 1)[0]}, a host that imitates the public registry {imitated} without "
            "being it; allowed: a registry you run under a name of its own, e.g. "
            "123456789012.dkr.ecr.us-west-2.amazonaws.com"
        )
    if not is_public(host):
        return None
    return (
        f"{prefix!r} is a namespace on the public registry {host}, where anyone publishes under their own name: every "
        "image pulled from it would come from whoever owns that namespace; allowed: a registry you run, e.g. an ECR "
        "pull-through cache or repository <account>.dkr.ecr.<region>.amazonaws.com/<prefix>"
    )


# The tag of a chart default that the chart derives from its own version: fixed for a chart version.
CHART_TAG: Final = "<the chart's version>"


@dataclass(frozen=True)
class RunImage:
    """An image a release runs: at a value path, as the chart composes it from the values and its defaults."""

    path: str
    reference: str  # registry/repository
    tag: str
    digest: str


def _at(values: Any, path: str) -> Any:
    for key in path.split("."):
        values = values.get(key) if isinstance(values, Mapping) else None
    return values


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def release_images(chart: str, values: Mapping[str, Any]) -> list[RunImage]:
    """Every image a release of `chart` runs: the chart's defaults (CHART_IMAGES) with the values merged over them as
    its templates do, and every other image map the values set (a chart's `repository` + `tag`/`digest`/`sha`)."""
    found: list[RunImage] = []
    known = CHART_IMAGES.get(chart, {})
    global_registry = _text(_at(values, "global.imageRegistry")) if chart in GLOBAL_REGISTRY_CHARTS else ""
    global_tag = _at(values, "global")
    for path, default in known.items():
        given = _at(values, path)
        given = given if isinstance(given, Mapping) else {}
        repository = _text(given.get("repository")) or default.repository
        registry = global_registry or _text(given.get("registry")) or (default.registry or "")
        tag = _text(given.get("tag")) if "tag" in given else (default.tag or (CHART_TAG if default.pinned else ""))
        if path in GLOBAL_TAG_IMAGES.get(chart, ()) and isinstance(global_tag, Mapping) and "imageTag" in global_tag:
            tag = _text(global_tag["imageTag"]) or _text(given.get("tag"))
        digest = _text(given.get("digest") or given.get("sha"))
        found.append(RunImage(path, f"{registry}/{repository}" if registry else repository, tag, digest))
    for path, image in _image_maps(values):
        if path not in known:
            registry = global_registry or _text(image.get("registry"))
            repository = _text(image.get("repository"))
            found.append(
                RunImage(
                    path,
                    f"{registry}/{repository}" if registry else repository,
                    _text(image.get("tag")),
                    _text(image.get("digest") or image.get("sha")),
                )
            )
    return found


def _image_maps(values: Any, path: str = "") -> list[tuple[str, Mapping[str, Any]]]:
    found: list[tuple[str, Mapping[str, Any]]] = []
    if isinstance(values, Mapping):
        for key, value in values.items():
            here = f"{path}.{key}" if path else str(key)
            if is_image_map(value):
                found.append((here, value))
            else:
                found += _image_maps(value, here)
    return found


def registries(charts: set[str]) -> set[str]:
    """The registries the images of these releases come from (the stack's own images with them)."""
    return {home.registry for home in IMAGE_HOMES if set(home.charts) & charts}
