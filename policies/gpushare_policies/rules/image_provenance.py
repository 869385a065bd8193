"""Every image the stack runs is pinned and comes from its project's own registry and namespace, or from a mirror of
that registry: the Helm releases' images as each chart composes them from its defaults and the values (HAMi's
scheduler, kube-scheduler and certificate jobs, Karpenter, the NVIDIA plugin, the monitoring releases), and every
container of the stack's own objects (the mock device plugin).

Judged with gpushare/images.py: IMAGE_HOMES (each image's upstream home), CHART_IMAGES (what each chart pulls when
the values leave it), PUBLIC_REGISTRY (where a namespace is whoever's: an image there is upstream only at its home,
anywhere else a path ending with its home's is a mirror), FLOATING_TAGS.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import Field, field_validator

from gpushare import images

from ..rule import Finding, Rule, RuleConfig, finding
from ..stack import HELM_RELEASE, Resource, StackView, chart_name, sorted_by_name

FIX = (
    "run the image from its upstream home, pinned, through gpushare:registryMirrors, or from a registry you run "
    "declared in image-provenance.trustedRegistries"
)


class ProvenanceConfig(RuleConfig):
    trusted_registries: tuple[str, ...] = Field(
        default=(),
        alias="trustedRegistries",
        description="Registries you run holding copies of upstream images at paths of your own (the stack's "
        "gpushare:trustedRegistries): an image there named like an upstream one counts as it. Never a namespace on a "
        "public registry nor a host imitating one.",
    )

    @field_validator("trusted_registries")
    @classmethod
    def _owned(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        problems = [problem for entry in value if (problem := images.mirror_problem(entry)) is not None]
        if problems:
            raise ValueError("; ".join(problems))
        return value


def _containers(props: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(key, image) of every container and init container anywhere in a Kubernetes object."""
    if isinstance(props, dict):
        for key, value in props.items():
            here = f"{path}.{key}" if path else str(key)
            if key in ("containers", "initContainers") and isinstance(value, list):
                for index, container in enumerate(value):
                    if isinstance(container, dict):
                        yield f"{here}[{index}].image", container.get("image")
            else:
                yield from _containers(value, here)
    elif isinstance(props, list):
        for index, item in enumerate(props):
            yield from _containers(item, f"{path}[{index}]")


def _judged(
    resource: Resource,
    key: str,
    shown: str,
    image: tuple[str, str, str],
    trusted: tuple[str, ...],
    *,
    default: bool = False,
) -> Iterator[Finding]:
    """Findings for one image (reference, tag, digest); `default`: the values leave it, so the chart's own default
    runs."""
    reference, tag, digest = image
    for problem in (images.provenance_problem(reference, trusted), images.pin_problem(tag, digest)):
        if problem is not None:
            said = f"the chart's default {shown} runs: {problem}" if default else problem
            yield finding(resource, key, None if default else shown, said, FIX)


def check_images(view: StackView, config: ProvenanceConfig) -> Iterator[Finding]:
    trusted = config.trusted_registries
    for release in sorted_by_name(view.of_type(HELM_RELEASE)):
        values = release.get("values")
        for image in images.release_images(chart_name(release), values if isinstance(values, dict) else {}):
            default = release.get("values", *image.path.split(".")) is None
            shown = image.reference + (f":{image.tag}" if image.tag and image.tag != images.CHART_TAG else "")
            found = (image.reference, image.tag, image.digest)
            yield from _judged(release, f"values.{image.path}", shown, found, trusted, default=default)
    for resource in sorted_by_name(r for r in view.resources if r.type.startswith("kubernetes:")):
        if resource.type == HELM_RELEASE:
            continue
        for key, image in _containers(resource.props):
            if isinstance(image, str):
                _repository, tag, digest = images.split_reference(image)
                yield from _judged(resource, key, image, (image, tag, digest), trusted)


RULE = Rule(
    name="image-provenance",
    order=25,
    description="Every image the stack runs (each Helm release's, chart defaults included, and every container of "
    "its own objects) is pinned by a tag other than latest/main or by a digest, and comes from its project's own "
    "registry and namespace (gpushare/images.py), a mirror of that registry, or a copy in a registry the stack's owner "
    "runs and declares trusted; no personal namespace, fork, third-party copy or host imitating a public registry.",
    why="A floating tag changes what runs on every restart; an image from someone's namespace or a fork (HAMi's "
    "certificate jobs default to docker.io/liangjw/kube-webhook-certgen) runs code its project never released, "
    "with the rights of the component (those jobs rewrite admission webhooks).",
    remediation="Keep the images gpushare sets (pins.yaml), pull them through gpushare:registryMirrors, or declare the "
    "registry you copy them to in trustedRegistries; add a new image to IMAGE_HOMES in gpushare/images.py with its "
    "source.",
    enforcement="mandatory",
    severity="high",
    check=check_images,
    config=ProvenanceConfig,
)
