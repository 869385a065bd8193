"""Build the offline cluster's binaries from the pinned Go modules under e2e/cluster/tools/, once per pin set.

Every binary comes from `go build` of an upstream Go package through the module proxy, pinned by the
go.mod/go.sum next to it. Output goes to ~/.cache/gpushare-e2e/<hash of e2e/cluster/tools>/bin, outside the clone,
so a second run (or a fresh clone with the same pins) starts in seconds.

HAMi and its mock device plugin are required in e2e/cluster/tools/hami/go.mod and mock/go.mod like any module, but
the Go module proxy reachable here refuses both (403). Where it does, the build takes their upstream source archives
from the directory named by GPUSHARE_UPSTREAM_SOURCES, checks each archive's sha256 against the pin below, unpacks it
into the cache (never into the clone) and points a `replace` at it in a copy of the go.mod kept beside the unpacked
source (`go build -modfile`); the module itself is never edited and the source never patched.

The Pulumi engine's parts (the engine phase) build the same way: the CLI from e2e/cluster/tools/pulumi with the Python
language host, whose module the proxy refuses too (its archive also holds the exec shim the host starts, copied beside
it), and the pulumi-kubernetes provider from e2e/cluster/tools/pulumi-kubernetes. The provider's main package embeds
files its module zip lacks: the build copies that module from the Go module cache into the cache, runs upstream's
generator there (GeneratedModule) and builds through a `replace` onto the copy.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from e2e.cluster.errors import RigError

TOOLS = Path(__file__).resolve().parent / "tools"
CACHE_ROOT = Path(os.environ.get("GPUSHARE_E2E_CACHE", Path.home() / ".cache" / "gpushare-e2e"))
KUBERNETES_VERSION = "v1.36.3"
SOURCES_ENV = "GPUSHARE_UPSTREAM_SOURCES"


@dataclass(frozen=True)
class UpstreamSource:
    """A module the proxy may refuse, the `git archive` of its release tag that stands in for it, and the module
    under e2e/cluster/tools that requires it."""

    module: str
    version: str
    tag: str
    archive: str
    sha256: str
    folder: str
    required_by: str
    # The module's folder inside the unpacked archive, when it is not the archive's top folder.
    module_dir: str = ""


# HAMi v2.10.0 (commit 4707fb02c91c) has no /v2 module path, so it is required as its commit's pseudo-version.
UPSTREAM_SOURCES = (
    UpstreamSource(
        "github.com/Project-HAMi/HAMi",
        "v0.0.0-20260821062039-4707fb02c91c",
        "v2.10.0",
        "hami-v2.10.0.tar.gz",
        "26cd0ee485efc2cda3efd70b6593928ee4d755b0f9b6af17a4f674194aab7fc4",
        "HAMi-2.10.0",
        "hami",
    ),
    UpstreamSource(
        "github.com/HAMi/mock-device-plugin",
        "v1.0.1",
        "v1.0.1",
        "hami-mock-device-plugin-v1.0.1.tar.gz",
        "5104874897066afa371e9185f0876ba8afbd1c112e2173abc69fda2b8db843fa",
        "mock-device-plugin-1.0.1",
        "mock",
    ),
    # The language host's module has a /v3 path but no tag of its own: required as its commit's pseudo-version.
    UpstreamSource(
        "github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3",
        "v3.0.0-20260821191800-1b5949891b3c",
        "commit 1b5949891b3c",
        "pulumi-language-python-1b5949891b3c.tar.gz",
        "5eeb6380be777ede85116d6de81625ae745d355c4e9d50de57c2507d5ccd4de6",
        "pulumi-language-python-1b5949891b3c",
        "pulumi",
        "sdk/python/cmd/pulumi-language-python",
    ),
)
PULUMI_VERSION = "v3.274.1"
# e2e/cluster/tools/helm/go.mod's Helm: the Helm library the pulumi-kubernetes provider embeds.
HELM_VERSION = "v3.18.6"
PULUMI_KUBERNETES_VERSION = "4.25.0"


@dataclass(frozen=True)
class GeneratedModule:
    """A module whose main package embeds files upstream's `go generate` writes and its module zip lacks: copied
    from the Go module cache into the cache, the generator run in the copy, the copy `replace`d in."""

    module: str
    version: str
    tag: str
    # The generator's folder inside the module, its file and the environment it reads.
    package_dir: str
    generator: str
    environment: tuple[tuple[str, str], ...]
    required_by: str


GENERATED_MODULES = (
    GeneratedModule(
        "github.com/pulumi/pulumi-kubernetes/provider/v4",
        "v4.0.0-20260115033456-f47bc2d6f199",
        f"v{PULUMI_KUBERNETES_VERSION}",
        "cmd/pulumi-resource-kubernetes",
        "generate.go",
        (("VERSION", PULUMI_KUBERNETES_VERSION),),
        "pulumi-kubernetes",
    ),
)


@dataclass(frozen=True)
class Binary:
    """One executable: the module directory it is built in and the package (relative to it or absolute)."""

    name: str
    module: str
    package: str
    ldflags: str = ""
    # Go build tags: Prometheus's `remove_all_sd` leaves out every service discovery but static, file and HTTP (the
    # rig scrapes static targets), and with them Kubernetes' client and the clouds' SDKs: a third of its packages.
    tags: str = ""
    # HAMi loads NVML through cgo (dlopen at run time; no GPU is needed to start).
    cgo: bool = False
    # A script taken from the unpacked UpstreamSource of `package` (a module path) instead of built: its path there.
    script: str = ""


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


def _pulumi_ldflags() -> str:
    """The CLI and the language host report this version (without it, an empty one)."""
    return f"-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version={PULUMI_VERSION}"


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
    Binary("prometheus", "prometheus", "github.com/prometheus/prometheus/cmd/prometheus", tags="remove_all_sd"),
    # Without the stamp Helm reports (and renders .Capabilities.HelmVersion as) its main branch's version.
    Binary("helm", "helm", "helm.sh/helm/v3/cmd/helm", f"-X helm.sh/helm/v3/internal/version.version={HELM_VERSION}"),
    Binary("hami-scheduler", "hami", "github.com/Project-HAMi/HAMi/cmd/scheduler", cgo=True),
    Binary("rig-gpu-node", "hami", "./gpunode", cgo=True),
    Binary("mock-device-plugin", "mock", "github.com/HAMi/mock-device-plugin/cmd/k8s-device-plugin", cgo=True),
    Binary("pulumi", "pulumi", "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi", _pulumi_ldflags()),
    Binary(
        "pulumi-language-python",
        "pulumi",
        "github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3",
        _pulumi_ldflags(),
    ),
    Binary(
        "pulumi-language-python-exec",
        "pulumi",
        "github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3",
        script="../pulumi-language-python-exec",
    ),
    Binary(
        "pulumi-resource-kubernetes",
        "pulumi-kubernetes",
        "github.com/pulumi/pulumi-kubernetes/provider/v4/cmd/pulumi-resource-kubernetes",
        f"-X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version={PULUMI_KUBERNETES_VERSION}",
    ),
)


def _tree_hash(root: Path, binaries: tuple[Binary, ...]) -> str:
    """Hash of every file under `root` and of how `binaries` are built (a new tag or stamp rebuilds them)."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    digest.update(repr(binaries).encode())
    return digest.hexdigest()[:16]


def pin_hash() -> str:
    """Hash of every file under e2e/cluster/tools and every binary's build: names the directory the rig takes its
    binaries from."""
    return _tree_hash(TOOLS, BINARIES)


def module_cache(module: str) -> Path:
    """Where one module's binaries and staged files live: a change of its pins, of our Go programs in it or of how
    its binaries are built rebuilds that module's binaries only."""
    built_here = tuple(binary for binary in BINARIES if binary.module == module)
    return CACHE_ROOT / "modules" / f"{module}-{_tree_hash(TOOLS / module, built_here)}"


def bin_dir() -> Path:
    return CACHE_ROOT / pin_hash() / "bin"


def go_command() -> str:
    """The go binary, or a RigError that says what to install."""
    go = shutil.which("go")
    if go is None:
        raise RigError("make e2e needs Go (>= 1.21, which fetches the toolchain e2e/cluster/tools/*/go.mod names)")
    return go


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as archive:
        for block in iter(lambda: archive.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sources_of(module: str) -> tuple[UpstreamSource, ...]:
    """The UpstreamSources e2e/cluster/tools/<module>/go.mod requires."""
    return tuple(source for source in UPSTREAM_SOURCES if source.required_by == module)


def generated_of(module: str) -> tuple[GeneratedModule, ...]:
    """The GeneratedModules e2e/cluster/tools/<module>/go.mod requires."""
    return tuple(generated for generated in GENERATED_MODULES if generated.required_by == module)


def unpack_sources(sources: tuple[UpstreamSource, ...], directory: Path, into: Path) -> dict[str, Path]:
    """Each source's archive from `directory`, sha256-checked, unpacked under `into` once; module -> its folder."""
    folders = {}
    for source in sources:
        archive = directory / source.archive
        if not archive.is_file():
            raise RigError(
                f"{SOURCES_ENV}={directory}: {source.archive} is not there ({source.module} {source.version})"
            )
        found = _sha256(archive)
        if found != source.sha256:
            raise RigError(f"{archive}: sha256 {found}, expected {source.sha256}; refusing to build from it")
        folder = into / source.folder
        if not folder.is_dir():
            partial = into / f".{source.folder}.partial"
            shutil.rmtree(partial, ignore_errors=True)
            partial.mkdir(parents=True)
            with tarfile.open(archive) as tar:
                tar.extractall(partial, filter="data")
            (partial / source.folder).rename(folder)
            partial.rmdir()
        folders[source.module] = folder / source.module_dir
    return folders


def _module_dir(go: str, module: str, version: str, cwd: Path, env: dict[str, str], out: object) -> Path:
    """Where the Go module cache holds `module@version` (downloaded, checked against go.sum, if it is not there)."""
    result = subprocess.run(
        [go, "mod", "download", "-json", f"{module}@{version}"], cwd=cwd, env=env, capture_output=True, text=True
    )
    print(result.stderr, file=out, flush=True)
    if result.returncode != 0:
        raise RigError(f"go mod download {module}@{version} failed (exit {result.returncode}): {result.stdout}")
    return Path(json.loads(result.stdout)["Dir"])


def generate_sources(
    go: str, generated: tuple[GeneratedModule, ...], module: str, env: dict[str, str], out: object
) -> dict[str, Path]:
    """Each GeneratedModule copied from the Go module cache under the stage of `module` and its generator run there
    once (with a plain copy of e2e/cluster/tools/<module>/go.mod, which requires what the generator imports);
    module -> the copy."""
    stage = module_cache(module) / "stage"
    folders = {}
    for each in generated:
        folder = stage / "generated" / each.module.replace("/", "_")
        if not folder.is_dir():
            partial = folder.with_name(f".{folder.name}.partial")
            shutil.rmtree(partial, ignore_errors=True)
            shutil.copytree(_module_dir(go, each.module, each.version, TOOLS / module, env, out), partial)
            # The module cache is read-only; the generator writes beside its inputs.
            for path in (partial, *partial.rglob("*")):
                path.chmod(path.stat().st_mode | 0o200)
            plain = stage / f"{module}.generate.mod"
            shutil.copyfile(TOOLS / module / "go.mod", plain)
            shutil.copyfile(TOOLS / module / "go.sum", plain.with_suffix(".sum"))
            print(f"  generating {each.module}/{each.package_dir} ({each.generator}) ...", file=sys.stderr, flush=True)
            result = subprocess.run(
                [go, "run", f"-modfile={plain}", each.generator],
                cwd=partial / each.package_dir,
                env={**env, **dict(each.environment)},
                stdout=out,
                stderr=out,
            )
            if result.returncode != 0:
                raise RigError(f"go run {each.generator} of {each.module} failed (exit {result.returncode})")
            partial.rename(folder)
        folders[each.module] = folder
    return folders


def _proxy_serves(
    go: str, sources: tuple[UpstreamSource, ...], module_dir: Path, env: dict[str, str], out: object
) -> bool:
    """Whether the Go module proxy gives every one of `sources` (checked against the checksum database)."""
    modules = [f"{source.module}@{source.version}" for source in sources]
    return (
        subprocess.run([go, "mod", "download", *modules], cwd=module_dir, env=env, stdout=out, stderr=out).returncode
        == 0
    )


@dataclass(frozen=True)
class Staged:
    """A module's go.mod copy to build with, its -mod mode, and where each replaced module's source is."""

    modfile: Path
    mode: str
    folders: dict[str, Path]


def staged_modfile(go: str, module: str, env: dict[str, str], out: object) -> Staged:
    """A copy of e2e/cluster/tools/<module>/go.mod (and go.sum) in the cache, with a `replace` for each UpstreamSource
    it requires, unpacked from GPUSHARE_UPSTREAM_SOURCES, and for each GeneratedModule, and the -mod mode to build it
    with: readonly there; where the proxy serves the UpstreamSources, `mod`, so go records their sums in the copy,
    checked against the checksum database."""
    sources = sources_of(module)
    stage = module_cache(module) / "stage"
    stage.mkdir(parents=True, exist_ok=True)
    modfile = stage / f"{module}.mod"
    shutil.copyfile(TOOLS / module / "go.sum", stage / f"{module}.sum")
    folders = generate_sources(go, generated_of(module), module, env, out)
    mode = "-mod=readonly"
    directory = os.environ.get(SOURCES_ENV)
    if directory:
        folders |= unpack_sources(sources, Path(directory).resolve(), stage / "src")
    elif sources and _proxy_serves(go, sources, TOOLS / module, env, out):
        mode = "-mod=mod"
    elif sources:
        listed = ", ".join(f"{source.module} {source.version}" for source in sources)
        raise RigError(
            f"the Go module proxy refuses {listed}; set {SOURCES_ENV} to a directory holding "
            + " and ".join(f"{source.archive} (sha256 {source.sha256})" for source in sources)
        )
    text = (TOOLS / module / "go.mod").read_text()
    modfile.write_text(text + "".join(f"\nreplace {name} => {folder}\n" for name, folder in folders.items()))
    return Staged(modfile, mode, folders)


def build(log: Path) -> Path:
    """Build every missing binary; returns a directory holding them all (links to each module's build)."""
    target = bin_dir()
    missing = [binary for binary in BINARIES if not (module_cache(binary.module) / "bin" / binary.name).exists()]
    if missing:
        started = time.monotonic()
        _build(missing, log)
        # CI and a first run say what the cold build cost (the cache makes every later run start in seconds).
        print(
            f"  built {len(missing)} of {len(BINARIES)} binaries in {time.monotonic() - started:.0f} s "
            f"(cached in {CACHE_ROOT})",
            file=sys.stderr,
            flush=True,
        )
    target.mkdir(parents=True, exist_ok=True)
    for binary in BINARIES:
        # Made aside and renamed over the old link: two runs starting at once (.ci/run's chaos beside the
        # simulations) never see a link missing or fail to make one.
        link = target / f".{binary.name}.{os.getpid()}"
        link.unlink(missing_ok=True)
        link.symlink_to(module_cache(binary.module) / "bin" / binary.name)
        link.replace(target / binary.name)
    return target


def _build(missing: list[Binary], log: Path) -> None:
    go = go_command()
    env = {
        **os.environ,
        "CGO_ENABLED": "0",
        # The go.mod files name the Go versions their upstream modules require; fetch that toolchain.
        "GOTOOLCHAIN": "auto",
        "GOFLAGS": "-mod=readonly",
    }
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as out:
        staged = {
            module: staged_modfile(go, module, env, out)
            for module in {binary.module for binary in missing}
            if sources_of(module) or generated_of(module)
        }
        for binary in missing:
            target = module_cache(binary.module) / "bin"
            target.mkdir(parents=True, exist_ok=True)
            partial = target / f".{binary.name}.partial"
            if binary.script:
                _take_script(binary, staged[binary.module], partial)
                partial.rename(target / binary.name)
                continue
            started = time.monotonic()
            print(f"  building {binary.name} ({binary.package}) ...", file=sys.stderr, flush=True)
            command = [go, "build", "-trimpath", "-ldflags", f"-s -w {binary.ldflags}".strip(), "-o", str(partial)]
            if binary.tags:
                command.append(f"-tags={binary.tags}")
            flags = env["GOFLAGS"]
            if binary.module in staged:
                flags = staged[binary.module].mode
                command.append(f"-modfile={staged[binary.module].modfile}")
            result = subprocess.run(
                [*command, binary.package],
                cwd=TOOLS / binary.module,
                env={**env, "CGO_ENABLED": "1" if binary.cgo else "0", "GOFLAGS": flags},
                stdout=out,
                stderr=out,
            )
            if result.returncode != 0:
                raise RigError(f"go build {binary.package} failed (exit {result.returncode}); see {log}")
            partial.rename(target / binary.name)
            print(f"  built {binary.name} in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)


def _take_script(binary: Binary, staged: Staged, partial: Path) -> None:
    """Copy a script out of its UpstreamSource's unpacked archive (a module zip from the proxy would not hold it: the
    language host's exec shim lies beside its module's folder)."""
    folder = staged.folders.get(binary.package)
    if folder is None:
        raise RigError(f"{binary.name} comes only from its source archive: set {SOURCES_ENV} (see docs/engine.md)")
    shutil.copyfile((folder / binary.script).resolve(), partial)
    partial.chmod(0o755)
