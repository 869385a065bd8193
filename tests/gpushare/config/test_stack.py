"""gpushare/config/stack.py: bad top-level and misspelt keys, engine JSON, each refused on one line naming the key."""

from __future__ import annotations

import pytest

from tests.gpushare.mutations import assert_one_line_names_the_key, drop_key, set_key

BAD_STACK = [
    (
        "unknown top-level key",
        set_key("gpushare:pool", []),
        "gpushare:pool: unknown key; did you mean gpushare:pools? allowed: gpushare:",
    ),
    ("missing region", drop_key("aws:region"), "aws:region: is required"),
    ("missing pools", drop_key("gpushare:pools"), "gpushare:pools: is required"),
    ("invalid json from engine", set_key("gpushare:teams", "[{not json"), "gpushare:teams: is not valid JSON"),
    (
        "mirror for a registry the stack never pulls from",
        set_key("gpushare:registryMirrors", {"gcr.io": "123456789012.dkr.ecr.us-west-2.amazonaws.com/gcr"}),
        "gpushare:registryMirrors.gcr.io: 'gcr.io' is not a registry the stack pulls images from; allowed: "
        "docker.io, nvcr.io, public.ecr.aws, quay.io, registry.k8s.io",
    ),
    (
        "mirror pointing an upstream registry at a personal namespace",
        set_key("gpushare:registryMirrors", {"registry.k8s.io": "docker.io/someone"}),
        "gpushare:registryMirrors.registry.k8s.io: 'docker.io/someone' is a namespace on the public registry "
        "docker.io, where anyone publishes under their own name",
    ),
    (
        "mirror on another public registry",
        set_key("gpushare:registryMirrors", {"docker.io": "ghcr.io/someone/docker-hub"}),
        "gpushare:registryMirrors.docker.io: 'ghcr.io/someone/docker-hub' is a namespace on the public registry "
        "ghcr.io",
    ),
    (
        "mirror on a host imitating a public registry",
        set_key("gpushare:registryMirrors", {"docker.io": "docker.io.example.com"}),
        "gpushare:registryMirrors.docker.io: 'docker.io.example.com' is on docker.io.example.com, a host that imitates "
        "the public registry docker.io without being it",
    ),
    (
        "trusted registry that is a namespace on a public registry",
        set_key("gpushare:trustedRegistries", ["ghcr.io/someone"]),
        "gpushare:trustedRegistries[0]: 'ghcr.io/someone' is a namespace on the public registry ghcr.io",
    ),
    (
        "trusted registry on a host imitating a public registry",
        set_key("gpushare:trustedRegistries", ["nvrc.io"]),
        "gpushare:trustedRegistries[0]: 'nvrc.io' is on nvrc.io, a host that imitates the public registry nvcr.io",
    ),
    (
        "mirror with a scheme",
        set_key("gpushare:registryMirrors", {"docker.io": "https://mirror.example.com/docker-hub"}),
        "gpushare:registryMirrors.docker.io: 'https://mirror.example.com/docker-hub' is not a registry host[/path]",
    ),
    (
        "mirror with a trailing slash",
        set_key("gpushare:registryMirrors", {"quay.io": "mirror.example.com/quay/"}),
        "gpushare:registryMirrors.quay.io: 'mirror.example.com/quay/' is not a registry host[/path]",
    ),
    (
        "mirrors not a map",
        set_key("gpushare:registryMirrors", ["docker.io"]),
        "gpushare:registryMirrors: takes a map of keys to values (got ['docker.io'])",
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), [c[1:] for c in BAD_STACK], ids=[c[0] for c in BAD_STACK])
def test_bad_stack_names_the_key(mutate, expected):
    assert_one_line_names_the_key(mutate, expected)
