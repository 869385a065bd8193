"""Start and stop the offline cluster's processes: etcd, the Kubernetes control plane, KWOK and Karpenter.

The whole rig runs inside a private network namespace (`python -m e2e` re-executes itself under
`unshare --net`), so every server, including Karpenter's metrics and health endpoints that bind all
interfaces, is reachable only on that namespace's loopback. Every process runs in its own process group
and is stopped by `Rig.stop`, which the harness calls on success, failure and Ctrl-C alike.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from e2e.cluster.api import Api
from e2e.cluster.errors import RigError
from e2e.cluster.hami_installed import HamiInstalled
from e2e.cluster.kwok_stages import pod_stages

TOKEN = "gpushare-e2e-admin"
API_PORT = 6443
ETCD_CLIENT_PORT = 2379
ETCD_PEER_PORT = 2380
# KWOK only plays the kubelet of nodes carrying this annotation: the rig's kubelet stand-in adds it after it
# has zeroed the node's extended resources, as a real kubelet registers them 0 until device plugins report.
KUBELET_STARTED = ("rig.gpushare.io/kubelet", "started")
SERVICE_CIDR = "10.96.0.0/16"
PROMETHEUS_PORT = 9090
# Karpenter's default --metrics-port, which its chart's Service exposes as `http-metrics`.
KARPENTER_METRICS_PORT = 8080
GPU_NODE_PREFIX = "gpu-node-"
# The HAMi release's kube-scheduler runs beside the rig's default one: its own secure port (a Pod has its own).
HAMI_KUBE_SCHEDULER_PORT = 10260
# The rig's knobs of both kube-schedulers, each in the report's deviations with its production value: a pod refused
# (by HAMi's extender, or before its node registered its resources) is retried within seconds, not after up to 10 s
# of back-off (podInitialBackoffSeconds 1, podMaxBackoffSeconds 10) or 5 minutes in the unschedulable queue.
KUBE_SCHEDULER_BACKOFF = {"podInitialBackoffSeconds": 1, "podMaxBackoffSeconds": 2}
UNSCHEDULABLE_FLUSH = "--pod-max-in-unschedulable-pods-duration=15s"


def wait_for(what: str, condition: Callable[[], bool], timeout_s: float, interval_s: float = 0.5) -> float:
    """Seconds it took `condition` to hold; RigError naming `what` after `timeout_s`."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout_s:
            raise RigError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(interval_s)
    return time.monotonic() - started


@dataclass
class Rig:
    bin_dir: Path
    work_dir: Path
    # As EKS allows: the NVIDIA device plugin chart's MPS control daemon is privileged. Only the engine phase, which
    # installs the real charts, needs it; the scenarios' rig keeps kube-apiserver's default.
    allow_privileged: bool = False
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    # What each process was started with (its command and environment), so a fault can restart it as it was.
    launched: dict[str, tuple[list[str], dict[str, str]]] = field(default_factory=dict)

    @property
    def log_dir(self) -> Path:
        return self.work_dir / "logs"

    @property
    def kubeconfig(self) -> Path:
        return self.work_dir / "kubeconfig"

    @property
    def api(self) -> Api:
        return Api(f"https://127.0.0.1:{API_PORT}", TOKEN)

    def binary(self, name: str) -> str:
        return str(self.bin_dir / name)

    def _start(self, name: str, args: list[str], env: dict[str, str] | None = None) -> None:
        self.launched[name] = (list(args), dict(env or {}))
        log = (self.log_dir / f"{name}.log").open("ab")
        self.processes[name] = subprocess.Popen(
            args,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
            cwd=self.work_dir,
            start_new_session=True,
        )

    def exit_code(self, name: str) -> int | None:
        """The process's exit status, None while it runs (negative: the signal that ended it)."""
        return self.processes[name].poll()

    def alive(self, name: str) -> bool:
        return self.exit_code(name) is None

    def kill(self, name: str) -> None:
        """SIGKILL the process and everything it started (a crash, an OOM kill): nothing gets to clean up."""
        process = self.processes[name]
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    def restart(self, name: str) -> None:
        """Start the process again with the command and environment it was last started with (its log goes on)."""
        if name in self.processes and self.alive(name):
            raise RigError(f"{name} is still running; kill it first")
        args, env = self.launched[name]
        self._start(name, args, env)

    def _write_credentials(self) -> None:
        pki = self.work_dir / "pki"
        pki.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["openssl", "genrsa", "-out", str(pki / "service-account.key"), "2048"],
            check=True,
            capture_output=True,
        )
        (self.work_dir / "tokens.csv").write_text(f"{TOKEN},gpushare-e2e,gpushare-e2e,system:masters\n")
        self.kubeconfig.write_text(
            "apiVersion: v1\nkind: Config\n"
            f"clusters:\n- name: rig\n  cluster:\n    server: https://127.0.0.1:{API_PORT}\n"
            "    insecure-skip-tls-verify: true\n"
            f"users:\n- name: admin\n  user:\n    token: {TOKEN}\n"
            "contexts:\n- name: rig\n  context:\n    cluster: rig\n    user: admin\n"
            "current-context: rig\n"
        )

    def start_control_plane(self) -> dict[str, float]:
        """etcd, kube-apiserver, kube-controller-manager, kube-scheduler; seconds each took to be ready."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._write_credentials()
        key = str(self.work_dir / "pki" / "service-account.key")
        timings = {}
        self._start(
            "etcd",
            [
                self.binary("etcd"),
                f"--data-dir={self.work_dir / 'etcd'}",
                f"--listen-client-urls=http://127.0.0.1:{ETCD_CLIENT_PORT}",
                f"--advertise-client-urls=http://127.0.0.1:{ETCD_CLIENT_PORT}",
                f"--listen-peer-urls=http://127.0.0.1:{ETCD_PEER_PORT}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{ETCD_PEER_PORT}",
                f"--initial-cluster=default=http://127.0.0.1:{ETCD_PEER_PORT}",
                "--unsafe-no-fsync",
            ],
        )
        self._start(
            "kube-apiserver",
            [
                self.binary("kube-apiserver"),
                f"--etcd-servers=http://127.0.0.1:{ETCD_CLIENT_PORT}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={API_PORT}",
                f"--cert-dir={self.work_dir / 'pki'}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--endpoint-reconciler-type=none",
                "--service-account-issuer=https://kubernetes.default.svc",
                f"--service-account-key-file={key}",
                f"--service-account-signing-key-file={key}",
                f"--token-auth-file={self.work_dir / 'tokens.csv'}",
                "--authorization-mode=RBAC",
                *(["--allow-privileged=true"] if self.allow_privileged else []),
            ],
        )
        timings["kube-apiserver"] = wait_for("kube-apiserver /readyz", self._api_ready, 120)
        kubeconfig = f"--kubeconfig={self.kubeconfig}"
        self._start(
            "kube-controller-manager",
            [
                self.binary("kube-controller-manager"),
                kubeconfig,
                f"--service-account-private-key-file={key}",
                f"--root-ca-file={self.work_dir / 'pki' / 'apiserver.crt'}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                "--use-service-account-credentials=false",
            ],
        )
        configuration = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "clientConnection": {"kubeconfig": str(self.kubeconfig)},
            "leaderElection": {"leaderElect": False},
            **KUBE_SCHEDULER_BACKOFF,
        }
        config_file = self.work_dir / "kube-scheduler.yaml"
        config_file.write_text(yaml.safe_dump(configuration))
        self._start(
            "kube-scheduler",
            [self.binary("kube-scheduler"), f"--config={config_file}", UNSCHEDULABLE_FLUSH, "--bind-address=127.0.0.1"],
        )
        return timings

    def _api_ready(self) -> bool:
        for name in ("etcd", "kube-apiserver"):
            if not self.alive(name):
                raise RigError(f"{name} exited; see {self.log_dir / (name + '.log')}")
        return self.api.ready()

    def start_kwok(self) -> None:
        """KWOK with the rig's pod stages (e2e.cluster.kwok_stages: a Job's pod runs as long as it asks)."""
        config = self.work_dir / "kwok.yaml"
        config.write_text(yaml.safe_dump_all(pod_stages(), sort_keys=False))
        self._start(
            "kwok",
            [
                self.binary("kwok"),
                f"--config={config}",
                f"--kubeconfig={self.kubeconfig}",
                f"--manage-nodes-with-annotation-selector={KUBELET_STARTED[0]}={KUBELET_STARTED[1]}",
                "--server-address=127.0.0.1:10247",
                "--node-ip=127.0.0.1",
            ],
        )

    def start_karpenter(self, instance_types: Path, gates: dict[str, str]) -> None:
        """Karpenter with the feature gates the stack's chart values set (e2e.cluster.stack.feature_gates)."""
        self._start(
            "karpenter",
            [
                self.binary("karpenter-kwok"),
                "--disable-leader-election",
                "--feature-gates=" + ",".join(f"{gate}={value}" for gate, value in gates.items()),
                "--log-level=debug",
            ],
            env={
                "KUBECONFIG": str(self.kubeconfig),
                "SYSTEM_NAMESPACE": "kube-system",
                "INSTANCE_TYPES_FILE_PATH": str(instance_types),
            },
        )

    def start_prometheus(self, config: Path) -> None:
        self._start(
            "prometheus",
            [
                self.binary("prometheus"),
                f"--config.file={config}",
                f"--storage.tsdb.path={self.work_dir / 'prometheus'}",
                f"--web.listen-address=127.0.0.1:{PROMETHEUS_PORT}",
            ],
        )

    def start_gpu_node(self, node: str, args: list[str]) -> None:
        """rig-gpu-node for one fake HAMi GPU node (kubelet stand-in, HAMi device plugin stand-in, and the real
        mock device plugin as its child) in a private mount namespace: a tmpfs over /var/lib gives each node
        its own /var/lib/kubelet/device-plugins, the fixed path where the mock finds the kubelet's socket."""
        private = 'mount -t tmpfs rig-node /var/lib && mkdir -p /var/lib/kubelet/device-plugins && exec "$@"'
        command = ["unshare", "--mount", "--propagation", "private", "sh", "-c", private, "sh"]
        self._start(f"{GPU_NODE_PREFIX}{node}", [*command, self.binary("rig-gpu-node"), *args])

    @property
    def hami_dir(self) -> Path:
        return self.work_dir / "hami"

    def _webhook_certificate(self) -> tuple[Path, Path]:
        """A serving certificate for 127.0.0.1, where the chart's cert-gen job makes one for its Service."""
        self.hami_dir.mkdir(parents=True, exist_ok=True)
        cert, key = self.hami_dir / "tls.crt", self.hami_dir / "tls.key"
        subject = ["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]
        request = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
        subprocess.run(
            [*request, "-keyout", str(key), "-out", str(cert), *subject],
            check=True,
            capture_output=True,
        )
        return cert, key

    def start_installed_hami(self, hami: HamiInstalled) -> Path:
        """HAMi's scheduler extender and its kube-scheduler as processes, run with the command lines, env and mounted
        files of the containers Helm created (e2e.cluster.hami_installed); returns the webhook's certificate.

        Rig additions, because they run as processes, not in a Pod: the mounted files under the rig's work dir, the
        rig's serving certificate where the extender's --cert_file/--key_file point (the chart's cert-gen Job makes
        that Secret in a cluster; KWOK completes the Job without running it), the rig's kubeconfig (a Pod uses its
        ServiceAccount; env the Pod takes from its fieldRefs is left out), and for the kube-scheduler the rig's
        kubeconfig, its back-off and its own port beside the rig's default scheduler. Leader election stays as Helm
        configured it: the extender filters only while the kube-scheduler of its host holds the lease."""
        cert, key = self._webhook_certificate()
        extender = hami.extender.materialize(self.hami_dir / "extender")
        for flag, source in (("--cert_file=", cert), ("--key_file=", key)):
            for arg in extender:
                if arg.startswith(flag):
                    target = Path(arg.removeprefix(flag))
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(source.read_bytes())
        env = {**hami.extender.env, "KUBECONFIG": str(self.kubeconfig)}
        self._start("hami-scheduler", [self.binary("hami-scheduler"), *extender], env=env)
        scheduler = hami.kube_scheduler.materialize(self.hami_dir / "kube-scheduler")
        configuration = {
            **hami.scheduler_configuration,
            **KUBE_SCHEDULER_BACKOFF,
            "clientConnection": {"kubeconfig": str(self.kubeconfig)},
        }
        [config_file] = [arg.removeprefix("--config=") for arg in scheduler if arg.startswith("--config=")]
        Path(config_file).write_text(yaml.safe_dump(configuration))
        self._start_hami_kube_scheduler(scheduler)
        return cert

    def _start_hami_kube_scheduler(self, args: list[str]) -> None:
        """The HAMi release's kube-scheduler with the rig's unschedulable flush, on loopback and its own port."""
        command = [self.binary("kube-scheduler"), *args, UNSCHEDULABLE_FLUSH, "--bind-address=127.0.0.1"]
        self._start("hami-kube-scheduler", [*command, f"--secure-port={HAMI_KUBE_SCHEDULER_PORT}"])

    def stop_process(self, name: str) -> None:
        process = self.processes.pop(name, None)
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    def stop(self) -> None:
        """Stop every process this rig started: the GPU nodes' together, then the rest newest first."""
        nodes = [name for name in self.processes if name.startswith(GPU_NODE_PREFIX)]
        running = [self.processes.pop(name) for name in nodes]
        running = [process for process in running if process.poll() is None]
        for process in running:
            os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for process in running:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        for name in reversed(list(self.processes)):
            self.stop_process(name)
