"""Changes that break `image-provenance`: every image of the stack, each way it can break (a personal namespace or
fork, a chart default that is one, a floating tag, a public registry posing as a mirror), is caught with the fix;
mirrors and digests pass."""

from __future__ import annotations

import re

import pytest

from gpushare import images
from policies.gpushare_policies.registry import PolicyConfig, PolicyConfigError
from tests.gpushare.test_images import MIRRORS
from tests.policies.helpers import messages, resources_of
from tests.policies.rules.breaking import caught, delete_at, mock, release, set_at

POLICY = "image-provenance"
CONTAINER = ["spec", "template", "spec", "containers", 0, "image"]


def _values(r, name):
    return release(r, name)["values"]


# (policy, change, every fragment one message must contain), on the prod plan (every release deploys there)
CASES = {
    "HAMi's certificate job back on the chart's personal image": (
        POLICY,
        lambda r: delete_at(_values(r, "hami"), ["scheduler", "patch", "imageNew"]),
        [
            "Release hami: values.scheduler.patch.imageNew not set",
            "the chart's default docker.io/liangjw/kube-webhook-certgen:v1.1.1 runs",
            "personal namespace",
            "allowed: registry.k8s.io/ingress-nginx/kube-webhook-certgen",
            "gpushare:registryMirrors",
        ],
    ),
    "HAMi's kube-scheduler back on the chart's third-party copy": (
        POLICY,
        lambda r: set_at(
            _values(r, "hami"), ["scheduler", "kubeScheduler", "image", "registry"], "registry.cn-hangzhou.aliyuncs.com"
        ),
        [
            "values.scheduler.kubeScheduler.image",
            "registry.cn-hangzhou.aliyuncs.com/kube-scheduler",
            "registry.k8s.io/kube-scheduler",
        ],
    ),
    "HAMi's kube-scheduler without a tag": (
        POLICY,
        lambda r: delete_at(_values(r, "hami"), ["scheduler", "kubeScheduler", "image", "tag"]),
        ["values.scheduler.kubeScheduler.image", "has no tag of its own"],
    ),
    "HAMi's images from a fork": (
        POLICY,
        lambda r: set_at(
            _values(r, "hami"), ["devicePlugin", "image"], {"registry": "docker.io", "repository": "someone/hami"}
        ),
        ['Release hami: values.devicePlugin.image is "docker.io/someone/hami"', "allowed: docker.io/projecthami/hami"],
    ),
    "HAMi's images floating on latest through global.imageTag": (
        POLICY,
        lambda r: set_at(_values(r, "hami"), ["global"], {"imageTag": "latest"}),
        ["values.scheduler.extender.image not set", "tag 'latest' moves"],
    ),
    "every kube-prometheus-stack image from a personal registry namespace": (
        POLICY,
        lambda r: set_at(_values(r, "kube-prometheus-stack"), ["global"], {"imageRegistry": "docker.io/someone"}),
        [
            "values.prometheus.prometheusSpec.image",
            "docker.io/someone/prometheus/prometheus",
            "allowed: quay.io/prometheus/prometheus",
        ],
    ),
    "kube-prometheus-stack's certificate jobs back on the chart's fork": (
        POLICY,
        lambda r: delete_at(_values(r, "kube-prometheus-stack")["prometheusOperator"], ["admissionWebhooks"]),
        [
            "values.prometheusOperator.admissionWebhooks.patch.image not set",
            "ghcr.io/jkroepke/kube-webhook-certgen:1.8.7",
        ],
    ),
    "the WebUI on the chart's floating main": (
        POLICY,
        lambda r: set_at(_values(r, "hami-webui"), ["image", "frontend", "tag"], "main"),
        ['Release hami-webui: values.image.frontend is "projecthami/hami-webui-fe-oss:main"', "tag 'main' moves"],
    ),
    "the WebUI's tag dropped (the chart's default floats)": (
        POLICY,
        lambda r: delete_at(_values(r, "hami-webui"), ["image", "backend"]),
        ["values.image.backend not set", "the chart's default projecthami/hami-webui-be-oss:main runs"],
    ),
    "dcgm-exporter from a copy": (
        POLICY,
        lambda r: set_at(_values(r, "dcgm-exporter")["image"], ["repository"], "docker.io/someone/dcgm-exporter"),
        ["values.image", "allowed: nvcr.io/nvidia/k8s/dcgm-exporter"],
    ),
    "Karpenter's controller from another ECR alias": (
        POLICY,
        lambda r: set_at(
            _values(r, "karpenter"),
            ["controller", "image"],
            {"repository": "public.ecr.aws/someone/controller", "tag": "1.15.1"},
        ),
        [
            'Release karpenter: values.controller.image is "public.ecr.aws/someone/controller:1.15.1"',
            "public.ecr.aws/karpenter/controller",
        ],
    ),
    "the NVIDIA plugin on latest": (
        POLICY,
        lambda r: set_at(_values(r, "nvidia-device-plugin"), ["image"], {"tag": "latest"}),
        ['Release nvidia-device-plugin: values.image is "nvcr.io/nvidia/k8s-device-plugin:latest"', "moves"],
    ),
    "the mock from a personal namespace": (
        POLICY,
        lambda r: set_at(mock(r), CONTAINER, "docker.io/someone/mock-device-plugin:1.0.1"),
        [
            "DaemonSet hami-mock-device-plugin: spec.template.spec.containers[0].image is",
            "docker.io/projecthami/mock-device-plugin",
        ],
    ),
    "the mock untagged": (
        POLICY,
        lambda r: set_at(mock(r), CONTAINER, "docker.io/projecthami/mock-device-plugin"),
        ["spec.template.spec.containers[0].image", "has no tag of its own"],
    ),
    "the mock copied into a private repository under another path": (
        POLICY,
        lambda r: set_at(mock(r), CONTAINER, "mirror.example.com:5000/hub/mock-device-plugin:1.0.1"),
        ["mirror.example.com:5000/hub/mock-device-plugin", "a path that mirrors none of its upstream homes"],
    ),
    "an image nobody listed": (
        POLICY,
        lambda r: set_at(
            _values(r, "hami"), ["devicePlugin", "extra"], {"image": {"repository": "busybox", "tag": "1"}}
        ),
        ["values.devicePlugin.extra.image", "no image whose upstream home gpushare knows"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["prod"], case, CASES[case])


def test_images_behind_a_mirror_or_pinned_by_digest_pass(plans):
    resources = resources_of(plans["prod"])
    set_at(mock(resources), CONTAINER, f"{MIRRORS['docker.io']}/projecthami/mock-device-plugin:1.0.1")
    set_at(_values(resources, "nvidia-device-plugin"), ["image"], {"tag": "latest", "digest": "sha256:" + "a" * 64})
    set_at(_values(resources, "hami"), ["global"], {"imageRegistry": MIRRORS["docker.io"]})
    assert messages(resources, POLICY) == []


@pytest.mark.parametrize("home", images.IMAGE_HOMES, ids=lambda home: home.reference)
def test_every_upstream_home_and_its_mirror_pass_and_a_public_copy_does_not(home):
    assert images.provenance_problem(f"{home.reference}:1") is None
    assert images.provenance_problem(f"mirror.example.com/{home.registry}/{home.path}:1") is None
    assert images.provenance_problem(f"quay.io/someone/{home.path}:1") is not None


OWN = "123456789012.dkr.ecr.us-west-2.amazonaws.com/platform"
TRUSTED = {POLICY: {"trustedRegistries": [OWN]}}


def test_copies_at_a_path_of_their_own_pass_in_a_registry_declared_trusted(plans):
    resources = resources_of(plans["prod"])
    set_at(mock(resources), CONTAINER, f"{OWN}/gpu/mock-device-plugin:1.0.1")
    set_at(_values(resources, "hami"), ["devicePlugin", "image"], {"registry": OWN, "repository": "hami"})
    assert messages(resources, POLICY, TRUSTED) == []
    assert any(f"{OWN}/gpu/mock-device-plugin" in m and "trustedRegistries" in m for m in messages(resources, POLICY))


@pytest.mark.parametrize(
    ("image", "fragment"),
    [
        ("docker.io/someone/mock-device-plugin:1.0.1", "personal namespace"),
        ("docker.io.example.com/projecthami/mock-device-plugin:1.0.1", "imitates the public registry docker.io"),
        (f"{OWN}/mock-device-plugin:latest", "tag 'latest' moves"),
        (f"{OWN}/not-an-upstream-image:1.0.1", "no image whose upstream home gpushare knows"),
        ("123456789012.dkr.ecr.us-west-2.amazonaws.com/elsewhere/mock-device-plugin:1.0.1", "in no registry declared"),
    ],
)
def test_trust_admits_no_fork_look_alike_floating_tag_or_stranger(plans, image, fragment):
    resources = resources_of(plans["prod"])
    set_at(mock(resources), CONTAINER, image)
    assert any(fragment in m for m in messages(resources, POLICY, TRUSTED)), messages(resources, POLICY, TRUSTED)


def test_a_look_alike_host_is_no_mirror(plans):
    resources = resources_of(plans["prod"])
    set_at(mock(resources), CONTAINER, "quay.io-cache.net/docker.io/projecthami/mock-device-plugin:1.0.1")
    assert any("imitates the public registry quay.io" in m for m in messages(resources, POLICY))


@pytest.mark.parametrize(
    ("entry", "fragment"),
    [
        ("docker.io/me", "namespace on the public registry docker.io"),
        ("ghcr.io/me", "namespace on the public registry ghcr.io"),
        ("nvrc.io/nvidia", "imitates the public registry nvcr.io"),
        ("https://registry.example.com", "not a registry host[/path]"),
    ],
)
def test_the_pack_refuses_a_trusted_registry_nobody_owns(entry, fragment):
    with pytest.raises(PolicyConfigError, match=re.escape(fragment)) as caught:
        PolicyConfig.parse({POLICY: {"trustedRegistries": [entry]}})
    assert "Value error" not in str(caught.value)
