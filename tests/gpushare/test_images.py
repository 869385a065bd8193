"""Registry mirrors: every image the stack deploys, its own and the charts' defaults, is pulled through the
mirror of its registry when one is configured, and nothing changes without one."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import pytest
import yaml

from gpushare import compat, images, names, pins
from tests.conftest import PLAN_DATE, raw_stack, run_plan
from tools.offline import run_program

ECR = "123456789012.dkr.ecr.us-west-2.amazonaws.com"
MIRRORS = {
    "docker.io": f"{ECR}/docker-hub",
    "nvcr.io": f"{ECR}/nvidia",
    "public.ecr.aws": f"{ECR}/ecr-public",
    "quay.io": f"{ECR}/quay",
    "registry.k8s.io": f"{ECR}/k8s",
}
# (release or object, value path) of every image prod deploys, once every registry has a mirror.
PROD_IMAGES = {
    ("karpenter", "controller.image"),
    ("hami", "scheduler.kubeScheduler.image"),
    ("hami", "scheduler.extender.image"),
    ("hami", "scheduler.patch.image"),
    ("hami", "scheduler.patch.imageNew"),
    ("hami", "devicePlugin.image"),
    ("hami", "devicePlugin.monitor.image"),
    ("nvidia-device-plugin", "image"),
    ("kube-prometheus-stack", "prometheusOperator.image"),
    ("kube-prometheus-stack", "prometheusOperator.prometheusConfigReloader.image"),
    ("kube-prometheus-stack", "prometheusOperator.admissionWebhooks.patch.image"),
    ("kube-prometheus-stack", "prometheus.prometheusSpec.image"),
    ("kube-prometheus-stack", "alertmanager.alertmanagerSpec.image"),
    ("kube-prometheus-stack", "grafana.image"),
    ("kube-prometheus-stack", "grafana.sidecar.image"),
    ("kube-prometheus-stack", "kube-state-metrics.image"),
    ("kube-prometheus-stack", "prometheus-node-exporter.image"),
    ("dcgm-exporter", "image"),
    ("hami-webui", "image.frontend"),
    ("hami-webui", "image.backend"),
    ("daemonset-kube-system-hami-mock-device-plugin", "spec.template.spec.containers[0].image"),
    # Never pulled (Karpenter only simulates the warm pods), mirrored like every image the stack names.
    ("podtemplate-inference-gpushare-headroom-g5-shared", "template.spec.containers[0].image"),
}


def _deployed(resources: list[dict[str, Any]]) -> dict[str, Any]:
    """Release chart -> values, object id -> object: everything the stack deploys, as its offline plan has it."""
    deployed: dict[str, Any] = {}
    for resource in resources:
        inputs = resource["inputs"]
        if resource["type"] == "kubernetes:helm.sh/v3:Release":
            deployed[inputs["chart"].rsplit("/", 1)[-1]] = inputs.get("values", {})
        elif resource["type"].startswith("kubernetes:"):
            deployed[resource["name"]] = inputs  # named by object id, as the plan's manifests/ files are
    return deployed


@cache
def _planned(stack: str, mirrors: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    raw = raw_stack(stack)
    raw["gpushare:registryMirrors"] = dict(mirrors)
    return _deployed(run_program(raw, stack, PLAN_DATE).recorded)


@pytest.fixture(scope="module")
def mirrored_prod_plan(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """prod behind every mirror, planned as `make plan` does (in a fresh interpreter): its plan.json."""
    work = tmp_path_factory.mktemp("mirrored")
    stack_file = work / "stacks" / "Pulumi.prod.yaml"
    stack_file.parent.mkdir()
    stack_file.write_text(yaml.safe_dump({"config": {**raw_stack("prod"), "gpushare:registryMirrors": MIRRORS}}))
    completed = run_plan(stack_file, work / "out")
    assert completed.returncode == 0, completed.stderr
    return json.loads((work / "out" / "prod" / "plan.json").read_text())


@pytest.fixture
def rendered(plans, mirrored_prod_plan) -> Callable[[str, dict[str, str]], dict[str, Any]]:
    """What `stack` deploys behind `mirrors`: read off the shipped plans and the mirrored prod plan the other tests
    read too, any other stack and mirrors run once."""

    def render(stack: str, mirrors: dict[str, str]) -> dict[str, Any]:
        if not mirrors:
            return _deployed(plans[stack]["resources"])
        if stack == "prod" and mirrors == MIRRORS:
            return _deployed(mirrored_prod_plan["resources"])
        return _planned(stack, tuple(sorted(mirrors.items())))

    return render


def _walk(data: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    yield path, data
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _walk(value, f"{path}.{key}" if path else key)
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _walk(value, f"{path}[{i}]")


def image_refs(rendered: dict[str, Any]) -> dict[tuple[str, str], str]:
    """(owner, path) -> full image reference of every image map and every string under an `image` key."""
    found = {}
    for owner, data in rendered.items():
        for path, value in _walk(data):
            if images.is_image_map(value):
                found[owner, path] = "/".join(filter(None, (value.get("registry"), value["repository"])))
            elif path.endswith(".image") and isinstance(value, str):
                found[owner, path] = value
    return found


def _upstream_strings(rendered: dict[str, Any]) -> list[str]:
    """Any string anywhere naming an upstream registry host: an image no walk of image keys would catch."""
    hosts = tuple(f"{registry}/" for registry in images.UPSTREAM_REGISTRIES)
    return [
        f"{owner} {path}: {value}"
        for owner, data in rendered.items()
        for path, value in _walk(data)
        if isinstance(value, str) and value.startswith(hosts)
    ]


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("projecthami/hami:v2.8.3", f"{ECR}/docker-hub/projecthami/hami:v2.8.3"),
        ("docker.io/projecthami/mock-device-plugin:1.0.1", f"{ECR}/docker-hub/projecthami/mock-device-plugin:1.0.1"),
        ("busybox:1.38.0", f"{ECR}/docker-hub/library/busybox:1.38.0"),
        ("docker.io/busybox", f"{ECR}/docker-hub/library/busybox"),
        ("registry.k8s.io/kube-scheduler:v1.36.0", f"{ECR}/k8s/kube-scheduler:v1.36.0"),
        (
            "public.ecr.aws/karpenter/controller:1.15.1@sha256:" + "a" * 64,
            f"{ECR}/ecr-public/karpenter/controller:1.15.1@sha256:" + "a" * 64,
        ),
        ("gcr.io/other/image:1", "gcr.io/other/image:1"),
        ("localhost:5000/mine:1", "localhost:5000/mine:1"),
        (f"{ECR}/docker-hub/projecthami/hami:v2.8.3", f"{ECR}/docker-hub/projecthami/hami:v2.8.3"),
    ],
)
def test_mirrored_rewrites_only_the_registry(image, expected):
    assert images.mirrored(image, MIRRORS) == expected


def test_an_image_of_a_registry_without_mirror_is_left_as_written():
    assert images.mirrored("busybox:1", {"quay.io": f"{ECR}/quay"}) == "busybox:1"
    assert images.mirrored("projecthami/hami:v1", {}) == "projecthami/hami:v1"


def test_image_maps_keep_the_chart_split_and_tag():
    split = {"registry": "docker.io", "repository": "busybox", "tag": "1.38.0", "sha": ""}
    assert images.mirrored_image_map(split, MIRRORS) == {
        "registry": f"{ECR}/docker-hub",
        "repository": "library/busybox",
        "tag": "1.38.0",
        "sha": "",
    }
    joined = {"repository": "nvcr.io/nvidia/k8s/dcgm-exporter", "tag": "4.5.3-4.8.2-distroless"}
    assert images.mirrored_image_map(joined, MIRRORS) == {
        "repository": f"{ECR}/nvidia/nvidia/k8s/dcgm-exporter",
        "tag": "4.5.3-4.8.2-distroless",
    }


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_every_image_goes_through_the_mirror_of_its_registry(rendered, stack):
    deployed = rendered(stack, MIRRORS)
    refs = image_refs(deployed)
    assert refs
    outside = {where: ref for where, ref in refs.items() if not ref.startswith(tuple(MIRRORS.values()))}
    assert outside == {}
    assert _upstream_strings(deployed) == []


def test_every_image_prod_deploys_is_written_out_behind_mirrors(rendered):
    assert set(image_refs(rendered("prod", MIRRORS))) == PROD_IMAGES


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_without_mirrors_the_stack_sets_only_its_own_images(rendered, stack):
    refs = image_refs(rendered(stack, {}))
    assert {path for _, path in refs} <= {
        "scheduler.kubeScheduler.image",
        "scheduler.patch.image",
        "scheduler.patch.imageNew",
        "prometheusOperator.admissionWebhooks.patch.image",
        "spec.template.spec.containers[0].image",
        "template.spec.containers[0].image",
    }
    assert refs["daemonset-kube-system-hami-mock-device-plugin", "spec.template.spec.containers[0].image"] == (
        pins.image(compat.MOCK_IMAGE_REPOSITORY)
    )


@pytest.mark.parametrize("registry", images.UPSTREAM_REGISTRIES)
def test_one_mirror_moves_the_images_of_its_registry_and_no_other(rendered, registry):
    plain = image_refs(rendered("prod", {}))
    full = image_refs(rendered("prod", MIRRORS))
    one = image_refs(rendered("prod", {registry: MIRRORS[registry]}))
    for where, ref in one.items():
        if ref.startswith(f"{MIRRORS[registry]}/"):
            assert full[where] == ref
        else:
            assert plain[where] == ref, where
    assert any(ref.startswith(f"{MIRRORS[registry]}/") for ref in one.values())


def test_chart_defaults_keep_their_tags_and_digests(rendered):
    deployed = rendered("prod", MIRRORS)
    assert deployed["karpenter"]["controller"]["image"] == {"repository": f"{ECR}/ecr-public/karpenter/controller"}
    assert deployed["hami"]["devicePlugin"]["image"] == {
        "registry": f"{ECR}/docker-hub",
        "repository": "projecthami/hami",
    }
    assert deployed["dcgm-exporter"]["image"]["tag"] == pins.image_tag("nvcr.io/nvidia/k8s/dcgm-exporter")
    assert deployed["hami-webui"]["image"]["frontend"] == {
        "tag": f"v{pins.chart_version(names.WEBUI_CHART)}",
        "repository": f"{ECR}/docker-hub/projecthami/hami-webui-fe-oss",
    }


def test_a_mirrored_plan_passes_the_policy_pack_as_the_shipped_one_does(plans, mirrored_prod_plan):
    plan = mirrored_prod_plan
    assert sorted(v["policy"] for v in plan["violations"]) == sorted(v["policy"] for v in plans["prod"]["violations"])
    kubernetes = {r["urn"]: r["inputs"] for r in plan["resources"] if r["type"].startswith("kubernetes:")}
    assert _upstream_strings(kubernetes) == []


@pytest.mark.parametrize(
    ("host", "imitated"),
    [
        ("docker.io.example.com", "docker.io"),
        ("quay.io-cache.net", "quay.io"),
        ("nvrc.io", "nvcr.io"),
        ("docker.i0", "docker.io"),
        ("registry.k8s.io.example.com:5000", "registry.k8s.io"),
        ("123456789012.dkr.ecr.us-west-2.amazonaws.com", None),
        ("harbor.example.com:5000", None),
        ("docker.io", None),  # the registry itself: public, not an imitation
        ("us.gcr.io", None),  # one of GCR's own names
    ],
)
def test_a_host_imitating_a_public_registry_is_told_from_one_of_your_own(host, imitated):
    assert images.imitated_registry(host) == imitated


def test_a_registry_under_a_public_registrys_own_domain_is_public():
    assert images.is_public("us.gcr.io") and images.is_public("registry-1.docker.io")
    assert not images.is_public("123456789012.dkr.ecr.us-west-2.amazonaws.com")
