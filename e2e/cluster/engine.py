"""The engine phase: the real Pulumi CLI, Python language host and pulumi-kubernetes provider install the rig's stack
onto the offline cluster in the existing-cluster mode, the rig's Karpenter being the existing one.

Everything the engine keeps lives under build/engine/ (PULUMI_HOME, the file backend, the project folder), nothing
reaches the network (no update check, no plugin download; the provider and the language host are the rig's builds,
found on PATH). The charts come from the folder named by GPUSHARE_CHART_ARCHIVES (docs/engine.md). The program runs
unchanged under the rig's transforms (e2e.cluster.engine_program).
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from e2e.cluster.engine_program import STARTED_ENV
from e2e.cluster.errors import RigError
from e2e.cluster.kubectl import Kubectl, KubectlError
from e2e.cluster.rig import KUBELET_STARTED
from e2e.cluster.stack import KWOK_NODE_CLASS, Plan, for_rig, plan_of
from gpushare import names
from gpushare.paths import PROJECT_ROOT

ENGINE_DIR = PROJECT_ROOT / "build" / "engine"
STACK = "rig"
# The file backend holds one run's state under build/: the passphrase guards nothing secret.
PASSPHRASE = "gpushare-rig"
# The Deployment the existing-cluster mode reads the running Karpenter's gates from. The rig's Karpenter is a
# process, so the rig records it as a Deployment of no replicas whose FEATURE_GATES are the process's flags.
KARPENTER_NAMESPACE = "kube-system"
KARPENTER_DEPLOYMENT = "karpenter"
# The rig's Karpenter core (e2e/cluster/tools/karpenter/go.mod).
KARPENTER_VERSION = "1.15.0"
# Keys the existing-cluster mode refuses (docs/existing-cluster.md): the rig's stack is planned with them for its
# own cluster, the engine's without.
NEW_CLUSTER_KEYS = ("network", "systemNodeGroup", "endpoint", "adminPrincipalArns", "logRetentionDays", "supportType")
# A node the charts' controllers and hook Jobs run on (KWOK plays it): the existing cluster's system nodes.
SYSTEM_NODE = "rig-system"


def existing_document(source: Mapping[str, Any], gates: Mapping[str, str], charts: Path) -> dict[str, Any]:
    """The stack file `source` in the existing-cluster mode on the rig: the ambient kubeconfig (the rig's, context
    `rig`), the rig's Karpenter with its gates, charts from `charts`, monitoring off (its charts bring the Prometheus
    operator, which the rig does not run)."""
    document = copy.deepcopy(dict(source))
    config = document["config"]
    cluster = config["gpushare:cluster"]
    for key in NEW_CLUSTER_KEYS:
        cluster.pop(key, None)
    config.get("gpushare:karpenter", {}).pop("chartVersion", None)
    for team in config.get("gpushare:teams", []):
        team.pop("namespaceAccessRoleArn", None)
    config.pop("gpushare:monitoring", None)
    config["gpushare:existingCluster"] = {
        "context": "rig",
        "karpenter": {
            "namespace": KARPENTER_NAMESPACE,
            "deployment": KARPENTER_DEPLOYMENT,
            "version": KARPENTER_VERSION,
            "featureGates": {
                "nodeOverlay": gates.get("NodeOverlay") == "true",
                "capacityBuffer": gates.get("CapacityBuffer") == "true",
            },
        },
        "nodeClass": {"role": "rig-gpu-node-role"},
    }
    config["gpushare:charts"] = {"folder": str(charts)}
    return document


def karpenter_record(gates: Mapping[str, str]) -> dict[str, Any]:
    """The rig's Karpenter as the Deployment an existing cluster runs it in: no replicas (the process is the rig's),
    its FEATURE_GATES as the process gets them."""
    labels = {"app.kubernetes.io/name": "karpenter"}
    env = [{"name": "FEATURE_GATES", "value": ",".join(f"{gate}={value}" for gate, value in gates.items())}]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": KARPENTER_DEPLOYMENT, "namespace": KARPENTER_NAMESPACE, "labels": labels},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "controller", "image": "rig/karpenter-kwok", "env": env}]},
            },
        },
    }


def system_node(kubelet_started: tuple[str, str]) -> dict[str, Any]:
    """An untainted node KWOK plays (the annotation hands it to KWOK), for the charts' pods."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": SYSTEM_NODE,
            "annotations": {kubelet_started[0]: kubelet_started[1], "kwok.x-k8s.io/node": "fake"},
            "labels": {"kubernetes.io/hostname": SYSTEM_NODE, "kubernetes.io/os": "linux", "type": "kwok"},
        },
        "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"}},
    }


def existing_cluster_records(gates: Mapping[str, str]) -> list[dict[str, Any]]:
    """What the rig's cluster holds before `pulumi up` in the existing-cluster mode, as an existing cluster would: the
    rig's KWOKNodeClass, its Karpenter recorded as a Deployment, and a system node for the charts' pods."""
    return [KWOK_NODE_CLASS, karpenter_record(gates), system_node(KUBELET_STARTED)]


@dataclass(frozen=True)
class Outcome:
    """One engine command: its exit code, what it printed and how long it took."""

    command: str
    code: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


@dataclass
class Engine:
    """The Pulumi CLI on the engine's project folder, its state and home under build/engine/."""

    bin_dir: Path
    kubeconfig: Path
    started: datetime
    directory: Path = ENGINE_DIR
    log: list[Outcome] = field(default_factory=list)

    @property
    def project(self) -> Path:
        return self.directory / "project"

    def environment(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        path = f"{self.bin_dir}:{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"
        return {
            **os.environ,
            "PATH": path,
            "PULUMI_HOME": str(self.directory / "home"),
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_SKIP_CONFIRMATIONS": "true",
            "KUBECONFIG": str(self.kubeconfig),
            STARTED_ENV: self.started.isoformat(),
            **(extra or {}),
        }

    def prepare(self, document: Mapping[str, Any]) -> None:
        """A fresh project folder, home and file backend, logged in, the stack created with `document`'s config."""
        shutil.rmtree(self.directory, ignore_errors=True)
        self.project.mkdir(parents=True)
        (self.directory / "state").mkdir()
        virtualenv = Path(sys.executable).parent.parent
        project = {
            "name": "gpushare",
            "runtime": {"name": "python", "options": {"toolchain": "pip", "virtualenv": str(virtualenv)}},
        }
        (self.project / "Pulumi.yaml").write_text(yaml.safe_dump(project))
        (self.project / "__main__.py").write_text(
            f"import sys\nsys.path.insert(0, {str(PROJECT_ROOT)!r})\n"
            "from e2e.cluster.engine_program import run\n\nrun()\n"
        )
        self.must("login", f"file://{self.directory / 'state'}")
        self.must("stack", "init", STACK)
        self.write_config(document)

    def write_config(self, document: Mapping[str, Any]) -> None:
        """The stack file's config (the encryption salt `stack init` wrote kept)."""
        stack_file = self.project / f"Pulumi.{STACK}.yaml"
        kept = yaml.safe_load(stack_file.read_text()) if stack_file.exists() else None
        stack_file.write_text(yaml.safe_dump({**(kept or {}), "config": document["config"]}))

    def run(self, *args: str, extra: Mapping[str, str] | None = None, timeout_s: float = 900) -> Outcome:
        started = time.monotonic()
        command = [str(self.bin_dir / "pulumi"), *args, "--non-interactive", "--color=never"]
        if args[0] not in ("login", "stack", "version", "plugin"):
            command += ["--stack", STACK]
        try:
            result = subprocess.run(
                command,
                cwd=self.project,
                env=self.environment(extra),
                capture_output=True,
                text=True,
                timeout=timeout_s,
            )
            code, stdout, stderr = result.returncode, result.stdout, result.stderr
        except subprocess.TimeoutExpired as expired:
            code, stdout, stderr = -1, str(expired.stdout or ""), f"timed out after {timeout_s:.0f} s"
        outcome = Outcome(" ".join(["pulumi", *args]), code, stdout, stderr, time.monotonic() - started)
        self.log.append(outcome)
        with (self.directory / "engine.log").open("a") as log:
            log.write(f"$ {outcome.command}  (exit {code}, {outcome.seconds:.0f} s)\n{outcome.output}\n")
        return outcome

    def must(self, *args: str, extra: Mapping[str, str] | None = None) -> Outcome:
        outcome = self.run(*args, extra=extra)
        if outcome.code != 0:
            tail = "\n".join(outcome.output.strip().splitlines()[-15:])
            raise RigError(f"{outcome.command} failed (exit {outcome.code}):\n{tail}")
        return outcome

    def version(self) -> str:
        return self.must("version").output.strip()

    def preview_steps(self, *args: str, extra: Mapping[str, str] | None = None) -> tuple[Outcome, list[dict]]:
        """`pulumi preview --json`: the outcome and the steps it would take."""
        outcome = self.run("preview", "--json", *args, extra=extra)
        try:
            steps = json.loads(outcome.stdout).get("steps", [])
        except ValueError:
            steps = []
        return outcome, steps


def object_key(obj: Mapping[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{obj['kind']}/{meta.get('namespace', '')}/{meta['name']}"


def rig_objects(plan: Plan, started: datetime) -> list[dict[str, Any]]:
    """The plan's objects as the engine creates them under the rig's transforms."""
    return [for_rig(obj, started) for obj in plan.objects]


def contained(want: Any, have: Any, path: str = "") -> list[str]:
    """Where `have` (an object as the API server holds it) lacks or differs from `want` (as the plan shows it); what
    the server adds (defaults, status) is not a difference, nor a zero value it omits (`globalDefault: false`)."""
    if have is None and want in (False, 0, "", [], {}):
        return []
    if isinstance(want, Mapping):
        if not isinstance(have, Mapping):
            return [f"{path}: {have!r} instead of an object"]
        return [line for key, value in want.items() for line in contained(value, have.get(key), f"{path}.{key}")]
    if isinstance(want, list):
        if not isinstance(have, list) or len(have) != len(want):
            return [f"{path}: {have!r} instead of {want!r}"]
        return [line for index, item in enumerate(want) for line in contained(item, have[index], f"{path}[{index}]")]
    if want != have and str(want) != str(have):
        return [f"{path}: {have!r} instead of {want!r}"]
    return []


def differences(kubectl: Kubectl, objects: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Per object of `objects` that the API server lacks or holds otherwise, what differs."""
    found = {}
    for obj in objects:
        try:
            [live] = kubectl.get([obj])
        except KubectlError as error:
            found[object_key(obj)] = [str(error).splitlines()[-1]]
            continue
        body = {key: value for key, value in obj.items() if key not in ("apiVersion", "kind", "status")}
        lines = contained(body, live)
        if lines:
            found[object_key(obj)] = lines
    return found


def engine_plan(name: str, document: Mapping[str, Any], work: Path) -> Plan:
    """The offline plan of the engine's stack file (the program under Pulumi's mocks)."""
    return plan_of(name, dict(document), work)


def changed_objects(before: Plan, after: Plan) -> set[str]:
    """Objects whose manifests differ between two plans (or that only one has)."""
    old = {object_key(obj): obj for obj in before.objects}
    new = {object_key(obj): obj for obj in after.objects}
    return {key for key in old.keys() | new.keys() if old.get(key) != new.get(key)}


def hami_webhooks(kubectl: Kubectl) -> list[str]:
    """MutatingWebhookConfigurations of the HAMi release."""
    listed = json.loads(kubectl.run("get", "mutatingwebhookconfigurations", "-o", "json"))["items"]
    return [item["metadata"]["name"] for item in listed if item["metadata"]["name"].startswith(names.HAMI_RELEASE)]
