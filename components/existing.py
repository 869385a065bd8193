"""ExistingCluster: a cluster the stack does not own. Its one Kubernetes provider, the check that the Karpenter
running there has the gates the stack's objects need, and the GPU EC2NodeClass that Karpenter reads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.kube import declare
from gpushare.existing import gate_problems


@dataclass(frozen=True)
class ExistingClusterArgs:
    """How to reach the cluster (`kubeconfig` text, or the ambient one when None; `context` of it), the running
    Karpenter's Deployment, what the stack file states about the cluster and that Karpenter (`stated`, recorded as
    the component's inputs so the policy pack judges the same facts: gpushare/existing.py stated_cluster), the gates
    the stack needs on (gate -> why) and the rendered EC2NodeClass."""

    kubeconfig: str | None
    context: str | None
    karpenter_namespace: str
    karpenter_deployment: str
    stated: Mapping[str, Any]
    needed_gates: Mapping[str, str]
    node_class: dict[str, Any]


class ExistingCluster(pulumi.ComponentResource):
    """Exposes the provider every Kubernetes resource of the stack must use, and the node class every NodePool and
    NodeOverlay must depend on (it waits for the gate check, so none is created for a Karpenter that ignores it)."""

    provider: k8s.Provider
    node_class: pulumi.CustomResource

    def __init__(self, name: str, args: ExistingClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpushare:index:ExistingCluster", name, dict(args.stated), opts)
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=pulumi.Output.secret(args.kubeconfig) if args.kubeconfig is not None else None,
            context=args.context,
            enable_server_side_apply=True,
            opts=pulumi.ResourceOptions(parent=self),
        )
        where = f"{args.karpenter_namespace}/{args.karpenter_deployment}"
        karpenter = k8s.apps.v1.Deployment.get(
            f"{name}-karpenter", where, opts=pulumi.ResourceOptions(parent=self, provider=self.provider)
        )
        checked = karpenter.spec.apply(lambda spec: _gates_checked(karpenter, where, spec, args.needed_gates))
        self.node_class = declare(
            args.node_class, pulumi.ResourceOptions(parent=self, provider=self.provider, depends_on=[checked])
        )
        self.register_outputs(dict(args.stated))


def _gates_checked(
    karpenter: k8s.apps.v1.Deployment, where: str, spec: Any, needed: Mapping[str, str]
) -> k8s.apps.v1.Deployment:
    """The Deployment once its gates are found on; a RunError naming each gate that is off stops `pulumi up`."""
    template = (spec or {}).get("template") or {}
    containers = (template.get("spec") or {}).get("containers") or []
    problems = gate_problems(where, containers, needed)
    if problems:
        raise pulumi.RunError("\n".join(problems))
    return karpenter
