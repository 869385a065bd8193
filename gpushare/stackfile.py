"""The stack file and its keys, read the way the Pulumi engine reads them.

One reader for every place that opens a Pulumi.<stack>.yaml (the offline plan, the tests, the offline cluster, the
simulator, the rules test), and one key parser for both the offline plan and `pulumi up`, so the two can never
read a file differently.

Key forms follow the engine's `ParseKey` (pulumi/pulumi `sdk/go/common/resource/config/key.go`): `<namespace>:<name>`,
or the legacy `<namespace>:config:<name>`, which names the same key; anything else the CLI refuses. The CLI accepts
any namespace and a program reads only what it asks for, so a key in a namespace nobody reads (`gpushar:teams`, a
`karpenter:` key that lost its `gpushare:` prefix) would be dropped without a word: here it is refused, naming the
nearest key that is read. Which namespaces and keys are read: stack-namespaces.yaml beside this file.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from gpushare.errors import ConfigError, UserError
from gpushare.files import read_yaml

NAMESPACES_PATH = Path(__file__).with_name("stack-namespaces.yaml")
LEGACY_MODULE = "config"  # `<namespace>:config:<name>`, from when every config value sat in a "config" module
KEY_FORM = "configuration keys should be of the form <namespace>:<name>"


def read_stack_document(path: Path) -> dict[str, Any]:
    """The whole stack file (`config:` beside Pulumi's own `encryptionsalt`, `secretsprovider`, ...); UserError when
    it cannot be used."""
    document = read_yaml(path)
    if not isinstance(document, dict) or not isinstance(document.get("config"), dict):
        raise UserError(f"{path}: config: missing; a stack file holds a `config:` map of keys")
    return document


def read_stack_file(path: Path) -> dict[str, Any]:
    """The `config:` map of a stack file: what the engine hands the program, keys as written."""
    return read_stack_document(path)["config"]


@dataclass(frozen=True)
class Namespace:
    """A config namespace someone reads: the keys it takes, and whose they are (for the message)."""

    name: str
    reader: str
    keys: frozenset[str]


@cache
def namespaces() -> dict[str, Namespace]:
    """The namespaces Pulumi and this stack's providers read, besides the project's own."""
    data = read_yaml(NAMESPACES_PATH)
    return {name: Namespace(name, entry["reader"], frozenset(entry.get("keys") or ())) for name, entry in data.items()}


def _split(key: Any) -> tuple[str, str] | None:
    """`(namespace, name)` as ParseKey splits a key: one colon, or the legacy form's two around `config`."""
    parts = key.split(":") if isinstance(key, str) else []
    if len(parts) == 2:
        return parts[0], parts[1]
    if len(parts) == 3 and parts[1] == LEGACY_MODULE and parts[0] and parts[2]:
        return parts[0], parts[2]
    return None


def parse_key(key: Any, project: str, project_keys: tuple[str, ...]) -> tuple[str, str]:
    """`(namespace, name)` of a stack-file key, as the engine's ParseKey splits it (the legacy form names the same
    key); otherwise the CLI's refusal, with the key it most likely meant."""
    split = _split(key)
    if split is not None:
        return split
    nearest = nearest_key(str(key), project, project_keys)
    hint = f"; did you mean {nearest}?" if nearest else ""
    raise ConfigError(str(key), f"not a configuration key: {KEY_FORM}{hint}")


def engine_key(key: str) -> str:
    """The key as the engine hands it to the program: `<namespace>:<name>`, also for one written in the legacy form
    (a key it cannot parse stays as written, for the loader to refuse)."""
    split = _split(key)
    return f"{split[0]}:{split[1]}" if split is not None else key


def is_secure(value: Any) -> bool:
    """A stack file's encrypted value, `{secure: v1:...}` (the engine decrypts it before the program runs; offline it
    arrives as written, or as its JSON text)."""
    if isinstance(value, str) and value.startswith('{"secure":'):
        return True
    return isinstance(value, dict) and set(value) == {"secure"}


def foreign_key_problem(namespace: str, name: str, project: str, project_keys: tuple[str, ...]) -> str | None:
    """Why a key outside the project's namespace would be dropped (None when Pulumi or a provider reads it)."""
    known = namespaces().get(namespace)
    if known is not None and name in known.keys:
        return None
    nearest = nearest_key(f"{namespace}:{name}", project, project_keys)
    hint = f"; did you mean {nearest}?" if nearest else ""
    if known is None:
        return f"no one reads namespace {namespace!r}, so the key would be dropped without a word{hint}"
    if not known.keys:
        return f"{known.reader} reads no stack configuration, so the key would be dropped{hint}"
    return f"{known.reader} reads no key {name!r}, so it would be dropped{hint}"


def nearest_key(key: str, project: str, project_keys: tuple[str, ...]) -> str | None:
    """The read key a mistyped one most likely meant: a close spelling (`gpushar:teams`), or the project key whose
    name it carries without the project's prefix (`karpenter`, `karpenter:amiAlias` -> `gpushare:karpenter`)."""
    for part in key.split(":"):
        if part in project_keys:
            return f"{project}:{part}"
    known = [f"{project}:{name}" for name in project_keys]
    known += [f"{ns.name}:{name}" for ns in namespaces().values() for name in sorted(ns.keys)]
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.75)
    return close[0] if close else None
