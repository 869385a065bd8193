"""Declare rendered Kubernetes objects as Pulumi resources on the cluster's provider."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpushare.render.releases import object_id

# Core kinds use their typed classes (type tokens like kubernetes:core/v1:Namespace); anything else is a
# CustomResource, whose token is kubernetes:<apiVersion>:<kind>.
_TYPED: dict[str, Callable[..., pulumi.CustomResource]] = {
    "Namespace": k8s.core.v1.Namespace,
    "ConfigMap": k8s.core.v1.ConfigMap,
    "ResourceQuota": k8s.core.v1.ResourceQuota,
    "LimitRange": k8s.core.v1.LimitRange,
    "PodTemplate": k8s.core.v1.PodTemplate,
    "ServiceAccount": k8s.core.v1.ServiceAccount,
    "ClusterRole": k8s.rbac.v1.ClusterRole,
    "ClusterRoleBinding": k8s.rbac.v1.ClusterRoleBinding,
    "DaemonSet": k8s.apps.v1.DaemonSet,
    "PriorityClass": k8s.scheduling.v1.PriorityClass,
    "MutatingAdmissionPolicy": k8s.admissionregistration.v1.MutatingAdmissionPolicy,
    "MutatingAdmissionPolicyBinding": k8s.admissionregistration.v1.MutatingAdmissionPolicyBinding,
    "ValidatingAdmissionPolicy": k8s.admissionregistration.v1.ValidatingAdmissionPolicy,
    "ValidatingAdmissionPolicyBinding": k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding,
}
# Top-level fields whose Python argument name differs from the Kubernetes field name.
_PYTHON_ARG = {"roleRef": "role_ref", "globalDefault": "global_default", "preemptionPolicy": "preemption_policy"}


def declare(obj: dict[str, Any], opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    """One rendered object as a Pulumi resource; camelCase keys inside the body pass to the engine as-is."""
    name = object_id(obj)
    kind = obj["kind"]
    if kind in _TYPED:
        args = {_PYTHON_ARG.get(key, key): value for key, value in obj.items() if key not in ("apiVersion", "kind")}
        return _TYPED[kind](name, opts=opts, **args)
    return k8s.apiextensions.CustomResource(
        name, api_version=obj["apiVersion"], kind=kind, metadata=obj["metadata"], spec=obj["spec"], opts=opts
    )


def declare_all(
    objects: Sequence[dict[str, Any]],
    parent: pulumi.Resource,
    provider: pulumi.ProviderResource,
    depends_on: Sequence[pulumi.Resource] = (),
    timeouts: pulumi.CustomTimeouts | None = None,
) -> list[pulumi.CustomResource]:
    """Declare objects in order; each waits for `depends_on` (CRDs, controllers) to exist first."""
    opts = pulumi.ResourceOptions(
        parent=parent, provider=provider, depends_on=list(depends_on), custom_timeouts=timeouts
    )
    return [declare(obj, opts) for obj in objects]


def helm_release(
    release: Any, parent: pulumi.Resource, provider: pulumi.ProviderResource, depends_on: Sequence[pulumi.Resource]
) -> k8s.helm.v3.Release:
    """A Helm release from a rendered gpushare.render.releases.HelmRelease (values stay visible to policies)."""
    return k8s.helm.v3.Release(
        release.name,
        name=release.name,
        namespace=release.namespace,
        chart=release.chart,
        version=release.version,
        repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=release.repository) if release.repository else None,
        values=release.values,
        skip_crds=release.skip_crds,
        atomic=True,
        cleanup_on_fail=True,
        opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=list(depends_on)),
    )
