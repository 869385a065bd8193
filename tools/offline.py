"""Run the Pulumi program offline under Pulumi's mocks and record every resource registration.

The recording is what `make plan` writes as plan.json and what the wiring tests and the policy pack read:
type token, name, parent, dependencies, provider and inputs exactly as the engine would receive them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import runpy
import sys
from datetime import date
from typing import Any

import pulumi
from google.protobuf import json_format
from pulumi.runtime import mocks, rpc, settings
from pulumi.runtime.proto import resource_pb2
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from gpushare import existing
from gpushare.paths import PROJECT_ROOT
from gpushare.stackfile import engine_key

PROGRAM = PROJECT_ROOT / "__main__.py"
ACCOUNT_ID = "123456789012"
# Signature keys of Pulumi's wire format (sdk/go/common/resource/sig).
_SIG = "4dabf18193072939515e22adb298388d"
_SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
_RESOURCE_SIG = "5cf8f73096256a8f31e491e813e4eb8e"
_UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"


# AWS-style id prefixes, so ids in the plan look like the ones `pulumi up` produces.
_ID_PREFIXES = {
    "aws:ec2/vpc:Vpc": "vpc",
    "aws:ec2/subnet:Subnet": "subnet",
    "aws:ec2/eip:Eip": "eipalloc",
    "aws:ec2/natGateway:NatGateway": "nat",
    "aws:ec2/internetGateway:InternetGateway": "igw",
    "aws:ec2/routeTable:RouteTable": "rtb",
}


# An existing cluster's Karpenter Deployment, which `pulumi up` reads to check its gates: offline it runs with every
# gate the stack may need on (a test passes others).
KARPENTER_READ = "kubernetes:apps/v1:Deployment"
PLAN_KARPENTER_GATES = f"{existing.NODE_OVERLAY_GATE}=true,{existing.CAPACITY_BUFFER_GATE}=true"


def running_karpenter(resource_id: str, gates: str) -> dict[str, Any]:
    """The Deployment `namespace/name` of a Karpenter controller whose FEATURE_GATES is `gates`."""
    namespace, _, name = resource_id.partition("/")
    container = {"name": "controller", "env": [{"name": existing.FEATURE_GATES_ENV, "value": gates}]}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"template": {"spec": {"containers": [container]}}},
    }


def _fake_id(prefix: str, name: str) -> str:
    return f"{prefix}-{hashlib.sha256(name.encode()).hexdigest()[:17]}"


class PlanMocks(pulumi.runtime.Mocks):
    """Plausible, deterministic ids, ARNs and kubeconfig: the same stack always yields the same plan."""

    def __init__(self, region: str, karpenter_gates: str = PLAN_KARPENTER_GATES) -> None:
        self.region = region
        self.karpenter_gates = karpenter_gates

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        state = dict(args.inputs)
        name = str(state.get("name") or args.name)
        token = args.typ
        prefix = _ID_PREFIXES.get(token)
        resource_id = _fake_id(prefix, args.name) if prefix else f"{args.name}-id"
        if token == "aws:iam/role:Role":
            state.update(name=name, arn=f"arn:aws:iam::{ACCOUNT_ID}:role/{name}")
        elif token == "aws:sqs/queue:Queue":
            state.update(
                name=name,
                arn=f"arn:aws:sqs:{self.region}:{ACCOUNT_ID}:{name}",
                url=f"https://sqs.{self.region}.amazonaws.com/{ACCOUNT_ID}/{name}",
            )
            resource_id = state["url"]
        elif token == "aws:kms/key:Key":
            state["arn"] = f"arn:aws:kms:{self.region}:{ACCOUNT_ID}:key/{_fake_id('mrk', args.name)}"
        elif token == "aws:cloudwatch/eventRule:EventRule":
            state["name"] = name
        elif token == "eks:index:Cluster":
            state["kubeconfigJson"] = json.dumps(_kubeconfig(name, self.region))
            state["clusterSecurityGroupId"] = _fake_id("sg", name)
        elif token == KARPENTER_READ and args.resource_id:
            return args.resource_id, running_karpenter(args.resource_id, self.karpenter_gates)
        return resource_id, state

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        if args.token == "aws:index/getCallerIdentity:getCallerIdentity":
            return {"accountId": ACCOUNT_ID, "arn": f"arn:aws:iam::{ACCOUNT_ID}:user/plan", "userId": "plan"}, []
        if args.token == "aws:index/getPartition:getPartition":
            return {"partition": "aws", "dnsSuffix": "amazonaws.com", "id": "aws"}, []
        if args.token == "aws:index/getAvailabilityZones:getAvailabilityZones":
            # Zone IDs as EC2 spells them (us-east-1 -> use1-az1 ...), minus the ones the program excludes.
            area, direction, number = self.region.split("-")
            prefix = f"{area}{direction[0]}{number}"
            excluded = set(args.args.get("excludeZoneIds") or ())
            ids = [f"{prefix}-az{n}" for n in range(1, 5) if f"{prefix}-az{n}" not in excluded]
            names = [f"{self.region}{letter}" for letter in "abcd"[: len(ids)]]
            return {"names": names, "zoneIds": ids, "id": self.region}, []
        return {}, []


def _kubeconfig(cluster: str, region: str) -> dict[str, Any]:
    server = f"https://{_fake_id('eks', cluster)[4:]}.gr7.{region}.eks.amazonaws.com"
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster, "cluster": {"server": server, "certificate-authority-data": "UExBTgo="}}],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": cluster}}],
        "current-context": cluster,
        "users": [
            {
                "name": cluster,
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "aws",
                        "args": ["eks", "get-token", "--cluster-name", cluster],
                    }
                },
            }
        ],
    }


def wire_to_json(value: Any) -> Any:
    """Wire-format value -> JSON data: secrets shown as [secret], resource references as their URN."""
    if isinstance(value, dict):
        if value.get(_SIG) == _SECRET_SIG:
            return "[secret]"
        if value.get(_SIG) == _RESOURCE_SIG:
            return value.get("urn")
        return {key: wire_to_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [wire_to_json(item) for item in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if value == _UNKNOWN:
        return "[unknown]"
    return value


class RecordingMonitor(mocks.MockMonitor):
    """MockMonitor that keeps each registration as the engine would see it (`recorded`, in order)."""

    def __init__(self, mocks_impl: pulumi.runtime.Mocks) -> None:
        super().__init__(mocks_impl)
        self.recorded: list[dict[str, Any]] = []
        self.outputs: dict[str, Any] = {}

    def RegisterResource(self, request: Any) -> Any:
        """Like MockMonitor's, but inputs stay wire data: resource references are not rehydrated into
        Resource objects (that would start SDK work on this monitor thread's own event loop)."""
        urn = self.make_urn(request.parent, request.type, request.name)
        if request.type == "pulumi:pulumi:Stack":
            return resource_pb2.RegisterResourceResponse(urn=urn)
        inputs = wire_to_json(json_format.MessageToDict(request.object))
        self.recorded.append(
            {
                "urn": urn,
                "type": request.type,
                "name": request.name,
                "custom": bool(request.custom),
                "parent": request.parent or None,
                "dependencies": sorted(set(request.dependencies)),
                "provider": request.provider.rsplit("::", 1)[0] if request.provider else None,
                "inputs": inputs,
            }
        )
        args = pulumi.runtime.MockResourceArgs(
            typ=request.type, name=request.name, inputs=inputs, provider=request.provider, custom=request.custom
        )
        resource_id, state = self.mocks.new_resource(args)
        self.resources[urn] = mocks.MockMonitor.ResourceRegistration(urn, resource_id, state)
        state_proto = _sync_await(rpc.serialize_properties(state, {}))
        return resource_pb2.RegisterResourceResponse(urn=urn, id=resource_id, object=state_proto)


class _EngineLog(logging.Formatter):
    """The program's pulumi.log lines as the Pulumi CLI shows them: `warning: <message>` on stderr."""

    def format(self, record: logging.LogRecord) -> str:
        return f"{record.levelname.lower()}: {record.getMessage()}"


def _engine_logger() -> logging.Logger:
    """Writing to the stderr of this run (a test's captured stream is another each time)."""
    logger = logging.getLogger("gpushare.offline.engine")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_EngineLog())
    logger.handlers = [handler]
    logger.propagate = False
    return logger


def run_program(
    raw_config: dict[str, Any], stack: str, today: date, plan_mocks: PlanMocks | None = None
) -> RecordingMonitor:
    """Run __main__.py with `raw_config` (a stack file's config map), judged on `today` (which the program reads as
    OFFLINE_TODAY), and return what it registered; `plan_mocks` answers in place of the default ones (a test's other
    cluster)."""
    config = {engine_key(str(key)): _config_text(value) for key, value in raw_config.items()}
    pulumi.runtime.set_all_config(config)
    monitor = RecordingMonitor(plan_mocks or PlanMocks(str(config.get("aws:region", "us-east-1"))))
    mocks.set_mocks(
        monitor.mocks, project="gpushare", stack=stack, preview=False, monitor=monitor, logger=_engine_logger()
    )
    _sync_await(run_pulumi_func(lambda: runpy.run_path(str(PROGRAM), {"OFFLINE_TODAY": today}, run_name="__main__")))
    # Under mocks the root stack is finished before the program runs, so exports are read off it here.
    for key, value in settings.get_root_resource().outputs.items():
        output = pulumi.Output.from_input(value)
        secret = _sync_await(output.is_secret())
        monitor.outputs[key] = "[secret]" if secret else _sync_await(output.future())
    return monitor


def _config_text(value: Any) -> str:
    """Pulumi hands every config value to the program as text; objects as JSON."""
    return value if isinstance(value, str) else json.dumps(value)
