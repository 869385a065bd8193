"""Stack-file keys read as the Pulumi engine reads them: parsed like ParseKey, every key read by someone or refused."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from pulumi_aws.provider import ProviderArgs as AwsProviderArgs
from pulumi_kubernetes.provider import ProviderArgs as KubernetesProviderArgs

from gpushare.config import CONFIG_KEYS, PROJECT
from gpushare.errors import ConfigError, UserError
from gpushare.loader import load_stack_config
from gpushare.stackfile import namespaces, parse_key, read_stack_document, read_stack_file
from tests.conftest import PLAN_DATE, ROOT, raw_stack
from tools.offline import run_program


def _provider_keys(args: type) -> set[str]:
    """The config keys a provider takes: the names of its ProviderArgs getters (the SDK generates one per key)."""
    return {getattr(p.fget, "_pulumi_name", name) for name, p in vars(args).items() if isinstance(p, property)}


def test_provider_keys_are_those_the_pinned_sdks_take():
    assert namespaces()["aws"].keys == _provider_keys(AwsProviderArgs)
    assert namespaces()["kubernetes"].keys == _provider_keys(KubernetesProviderArgs)
    eks_sdk = Path(importlib.util.find_spec("pulumi_eks").origin).parent
    assert (eks_sdk / "provider.py").exists() and not (eks_sdk / "config").exists()  # pulumi-eks takes no config
    assert namespaces()["eks"].keys == frozenset()


@pytest.mark.parametrize(
    ("key", "parsed"),
    [
        ("gpushare:teams", ("gpushare", "teams")),
        ("aws:region", ("aws", "region")),
        ("gpushare:config:teams", ("gpushare", "teams")),  # the legacy form names the same key
    ],
)
def test_keys_parse_as_the_engine_parses_them(key, parsed):
    assert parse_key(key, PROJECT, CONFIG_KEYS) == parsed


@pytest.mark.parametrize("key", ["teams", "gpushare:pools:0", "a:b:c:d", "gpushare:config:", 7])
def test_keys_the_engine_cannot_parse_are_refused_as_the_cli_does(key):
    with pytest.raises(ConfigError, match="configuration keys should be of the form <namespace>:<name>"):
        parse_key(key, PROJECT, CONFIG_KEYS)


def _lines(raw: dict[str, Any], **kwargs: Any) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_stack_config(raw, today=PLAN_DATE, **kwargs)
    return str(caught.value).splitlines()


def _renamed(old: str, new: str) -> dict[str, Any]:
    raw = raw_stack("dev")
    raw[new] = raw.pop(old)
    return raw


@pytest.mark.parametrize(
    ("raw", "line"),
    [
        (
            _renamed("gpushare:teams", "gpushar:teams"),
            "gpushar:teams: no one reads namespace 'gpushar', so the key would be dropped without a word; did you "
            "mean gpushare:teams?",
        ),
        (
            _renamed("gpushare:karpenter", "karpenter"),
            "karpenter: not a configuration key: configuration keys should be of the form <namespace>:<name>; did "
            "you mean gpushare:karpenter?",
        ),
        (
            {**raw_stack("dev"), "karpenter:amiVersion": "v20260903"},
            "karpenter:amiVersion: no one reads namespace 'karpenter', so the key would be dropped without a word; "
            "did you mean gpushare:karpenter?",
        ),
        (
            {**raw_stack("dev"), "aws:regoin": "us-east-1"},
            "aws:regoin: the AWS provider (pulumi-aws) reads no key 'regoin', so it would be dropped; did you mean "
            "aws:region?",
        ),
        (
            {**raw_stack("dev"), "eks:version": "1.36"},
            "eks:version: the EKS provider (pulumi-eks) reads no stack configuration, so the key would be dropped",
        ),
        (
            {**raw_stack("dev"), "gpushare:pools:0": {}},
            "gpushare:pools:0: not a configuration key: configuration keys should be of the form <namespace>:<name>; "
            "did you mean gpushare:pools?",
        ),
    ],
)
def test_a_key_nobody_reads_is_one_line_naming_the_key_it_meant(raw, line):
    """The misspelt key is the one problem: the key it meant is not also reported as required."""
    assert _lines(raw) == [line]


def test_keys_pulumi_and_the_providers_read_pass_and_change_nothing():
    raw = {
        **raw_stack("dev"),
        "pulumi:disable-default-providers": ["kubernetes"],
        "aws:profile": "gpu-admin",
        "aws:secretKey": {"secure": "v1:Zm9vYmFy:YmF6"},  # Pulumi's encrypted value: the provider's to decrypt
        "kubernetes:enableServerSideApply": True,
    }
    assert load_stack_config(raw, today=PLAN_DATE) == load_stack_config(raw_stack("dev"), today=PLAN_DATE)


def test_the_legacy_key_form_loads_the_same_stack():
    raw = {key.replace(":", ":config:", 1): value for key, value in raw_stack("dev").items()}
    assert load_stack_config(raw, today=PLAN_DATE) == load_stack_config(raw_stack("dev"), today=PLAN_DATE)


def test_a_secret_project_value_is_refused_offline_and_under_the_engine():
    """The offline plan cannot decrypt it and the engine would: both refuse it, so they never read it apart."""
    offline = {**raw_stack("dev"), "gpushare:hami": {"secure": "v1:Zm9vYmFy:YmF6"}}
    [line] = _lines(offline)
    assert line.startswith("gpushare:hami: is a secret (secure:): gpushare keys hold no secrets")
    assert _lines(raw_stack("dev"), secret_keys={"gpushare:hami"}) == [line]
    decrypted = {**raw_stack("dev"), "gpushare:hami": {"chartVersion": "s3cr3t"}}
    assert _lines(decrypted, secret_keys={"gpushare:hami"}) == [line]  # refused, never validated and echoed


def test_pulumi_up_refuses_a_key_nobody_reads_as_the_plan_does():
    """__main__.py judges the whole config the engine passes with the same loader."""
    with pytest.raises(pulumi.RunError, match=r"^gpushar:teams: no one reads namespace 'gpushar'"):
        run_program(_renamed("gpushare:teams", "gpushar:teams"), "dev", PLAN_DATE)


def test_pulumis_own_stack_file_fields_are_read_beside_config(tmp_path: Path):
    document = {
        "encryptionsalt": "v1:c2FsdA==:v1:aXY=:Y2lwaGVy",
        "secretsprovider": "awskms://alias/gpushare",
        "config": raw_stack("dev"),
    }
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(yaml.safe_dump(document))
    assert read_stack_document(path) == document
    assert read_stack_file(path) == raw_stack("dev")


@pytest.mark.parametrize("text", ["[]\n", "config: [a]\n", "encryptionsalt: x\n"])
def test_a_file_without_a_config_map_is_refused(tmp_path: Path, text: str):
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text(text)
    with pytest.raises(UserError, match="config: missing; a stack file holds a `config:` map of keys"):
        read_stack_file(path)


def test_no_module_reads_a_stack_file_but_the_one_reader():
    """Every place that opens a Pulumi.<stack>.yaml goes through gpushare/stackfile.py (it used to be read five
    ways): no other module parses one itself."""
    readers = re.compile(r"(read_yaml|safe_load|yaml\.load)\(.*Pulumi\.|\[\"config\"\] for stack in")
    own = ROOT / "gpushare" / "stackfile.py"
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in ("gpushare", "components", "policies", "tools", "e2e", "tests")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path != own
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if readers.search(line)
    ]
    assert found == []
