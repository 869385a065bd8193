"""Reading user-supplied files: any failure is one UserError line naming the file, never a traceback."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from gpushare.errors import UserError

# libyaml's C loader where PyYAML was built with it (the wheels are), the pure-Python one otherwise: same
# data, several times faster.
SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _UniqueKeyLoader(SAFE_LOADER):  # type: ignore[valid-type,misc]
    """Refuses a mapping that repeats a key: PyYAML would silently keep the last value."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (first on line {seen[key]})", key_node.start_mark
                )
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _UniqueKeyLoader.construct_mapping)


def read_yaml(path: Path) -> Any:
    """One YAML document; UserError with line and column for syntax errors, tabs and duplicate keys."""
    return _loaded(path, lambda text: yaml.load(text, Loader=_UniqueKeyLoader))


def read_yaml_documents(path: Path) -> list[Any]:
    """Every document of a multi-document YAML file (`---` between them), as read_yaml reads one; a syntax error
    anywhere refuses the whole file, naming line and column (documents after it cannot be told apart)."""
    return _loaded(path, lambda text: list(yaml.load_all(text, Loader=_UniqueKeyLoader)))


def _loaded(path: Path, load: Callable[[str], Any]) -> Any:
    """`load` of the file's text, every failure a UserError naming the file (and line and column where YAML has one)."""
    try:
        text = path.read_text()
        return load(text)
    except OSError as error:
        raise UserError(f"{path}: cannot read ({error.strerror})") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not valid YAML (not UTF-8 text)") from None
    except yaml.constructor.ConstructorError as error:  # parsed, but not data: a duplicate key, an unknown tag
        mark = error.problem_mark
        where = f" at line {mark.line + 1} col {mark.column + 1}" if mark else ""
        raise UserError(f"{path}: YAML error{where}: {error.problem}") from None
    except yaml.MarkedYAMLError as error:
        raise UserError(f"{path}: {_syntax_error(text, error)}") from None
    except yaml.YAMLError as error:
        raise UserError(f"{path}: YAML syntax error ({str(error).splitlines()[0]})") from None


def _syntax_error(text: str, error: yaml.MarkedYAMLError) -> str:
    """The parser's complaint as a YAML syntax error at line and column; a tab where indentation is read is named
    as such (PyYAML says a character "cannot start any token", or "a tab character that violates indentation")."""
    mark = error.problem_mark or error.context_mark
    problem = error.problem or error.context or "not valid YAML"
    if mark is None:
        return f"YAML syntax error: {problem}"
    lines = text.splitlines()
    line = lines[mark.line] if mark.line < len(lines) else ""
    if "tab" in problem or line[mark.column : mark.column + 1] == "\t":
        problem = "tabs are not allowed for indentation in YAML"
    return f"YAML syntax error at line {mark.line + 1} col {mark.column + 1}: {problem}"


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except OSError as error:
        raise UserError(f"{path}: cannot read ({error.strerror})") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not valid JSON (not UTF-8 text)") from None
    except json.JSONDecodeError as error:
        raise UserError(f"{path}: not valid JSON ({error.msg}, line {error.lineno})") from None
