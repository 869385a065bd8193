"""Container images behind registry mirrors (`gpushare:registryMirrors`), as pure functions on plain data.

A mirror such as an ECR pull-through cache serves one upstream registry under a repository prefix:
`docker.io/projecthami/hami:v2.8.3` is pulled as `<account>.dkr.ecr.<region>.amazonaws.com/docker-hub/
projecthami/hami:v2.8.3`. Tags and digests stay as they are; only the registry part changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

DOCKER_HUB: Final = "docker.io"
# Every registry an image of the stack comes from (its own values and the charts' defaults it pulls).
UPSTREAM_REGISTRIES: Final = ("docker.io", "ghcr.io", "nvcr.io", "public.ecr.aws", "quay.io", "registry.k8s.io")
# A mirror prefix: registry host (optionally :port), then optional repository path; no scheme, no trailing slash.
MIRROR_PATTERN: Final = (
    r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+(:[0-9]{1,5})?(/[a-z0-9]+([._-][a-z0-9]+)*)*$"
)
# Image value maps set in a chart's values: `{registry, repository, tag}` or `{repository, tag}`.
ImageMaps = Mapping[str, Mapping[str, str]]


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
