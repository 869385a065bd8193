"""Build the offline cluster's binaries from the pinned Go modules under e2e/tools/, once per pin set.

Every binary comes from `go build` of an upstream Go package through the module proxy, pinned by the
go.mod/go.sum next to it. Output goes to ~/.cache/gpushare-e2e/<hash of e2e/tools>/bin, outside the clone,
so a second run (or a fresh clone with the same pins) starts in seconds.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from e2e.errors import RigError

TOOLS = Path(__file__).resolve().parent / "tools"
CACHE_ROOT = Path(os.environ.get("GPUSHARE_E2E_CACHE", Path.home() / ".cache" / "gpushare-e2e"))
KUBERNETES_VERSION = "v1.36.3"


@dataclass(frozen=True)
class Binary:
    """One executable: the module directory it is built in and the package (relative to it or absolute)."""

    name: str
    module: str
    package: str
    ldflags: str = ""


def _kubernetes_ldflags() -> str:
    """Without these the binaries report v0.0.0 and version-gated code paths misbehave."""
    major, minor, _ = KUBERNETES_VERSION.lstrip("v").split(".")
    stamp = {
        "k8s.io/component-base/version.gitVersion": KUBERNETES_VERSION,
        "k8s.io/component-base/version.gitMajor": major,
        "k8s.io/component-base/version.gitMinor": minor,
        "k8s.io/client-go/pkg/version.gitVersion": KUBERNETES_VERSION,
    }
    return " ".join(f"-X {key}={value}" for key, value in stamp.items())


BINARIES: tuple[Binary, ...] = (
    Binary("etcd", "etcd", "go.etcd.io/etcd/server/v3"),
    *(
        Binary(name, "kube", f"k8s.io/kubernetes/cmd/{name}", _kubernetes_ldflags())
        for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
    ),
    Binary("kwok", "kwok", "sigs.k8s.io/kwok/cmd/kwok"),
    Binary("karpenter-kwok", "karpenter", "sigs.k8s.io/karpenter/kwok"),
    Binary("kwok-crds", "karpenter", "./crds"),
    Binary("aws-crds", "awscrds", "."),
    Binary("prometheus", "prometheus", "github.com/prometheus/prometheus/cmd/prometheus"),
)


def pin_hash() -> str:
    """Hash of every file under e2e/tools: a change of pin or of our tiny Go programs rebuilds."""
    digest = hashlib.sha256()
    for path in sorted(TOOLS.rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(TOOLS)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def bin_dir() -> Path:
    return CACHE_ROOT / pin_hash() / "bin"


def go_command() -> str:
    """The go binary, or a RigError that says what to install."""
    go = shutil.which("go")
    if go is None:
        raise RigError("make e2e needs Go (>= 1.21, which fetches the toolchain e2e/tools/*/go.mod names)")
    return go


def build(log: Path) -> Path:
    """Build every missing binary; returns the directory holding them all."""
    target = bin_dir()
    missing = [binary for binary in BINARIES if not (target / binary.name).exists()]
    if not missing:
        return target
    go = go_command()
    target.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "CGO_ENABLED": "0",
        # The go.mod files name the Go versions their upstream modules require; fetch that toolchain.
        "GOTOOLCHAIN": "auto",
        "GOFLAGS": "-mod=readonly",
    }
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as out:
        for binary in missing:
            started = time.monotonic()
            print(f"  building {binary.name} ({binary.package}) ...", file=sys.stderr, flush=True)
            partial = target / f".{binary.name}.partial"
            command = [go, "build", "-trimpath", "-ldflags", f"-s -w {binary.ldflags}".strip(), "-o", str(partial)]
            result = subprocess.run(
                [*command, binary.package], cwd=TOOLS / binary.module, env=env, stdout=out, stderr=out
            )
            if result.returncode != 0:
                raise RigError(f"go build {binary.package} failed (exit {result.returncode}); see {log}")
            partial.rename(target / binary.name)
            print(f"  built {binary.name} in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    return target
