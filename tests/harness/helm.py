"""Render and lint charts with the pinned Helm binaries (Helm 3 and Helm 4).

Every call runs the real `helm` binary installed by `make setup`; output is parsed with a YAML
loader that rejects duplicate keys, because the API server's strict decoding rejects them too
while a plain YAML load would silently keep the last value.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from .tools import require_tool, tool_path

# Pinned versions (mk/tools.mk installs exactly these).
PINNED_VERSIONS: dict[str, str] = {"helm3": "v3.17.2", "helm4": "v4.1.4"}
HELM_VERSIONS: dict[str, str] = {name: str(tool_path(name)) for name in PINNED_VERSIONS}

PathLike = str | os.PathLike[str]
_TIMEOUT_S = 300


class HelmError(RuntimeError):
    """`helm` exited non-zero; carries the command, exit code and stderr."""

    def __init__(self, cmd: Sequence[str], returncode: int, stdout: str, stderr: str) -> None:
        self.cmd = list(cmd)
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        # `helm lint` prints its findings on stdout and only a summary on stderr.
        detail = "\n".join(part for part in (stdout.strip(), stderr.strip()) if part)
        super().__init__(f"{' '.join(self.cmd)} exited {returncode}:\n{detail}")


class DuplicateKeyError(yaml.YAMLError):
    pass


class _StrictLoader(yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader):  # type: ignore[misc]
    """Safe loader that fails on a key repeated in one mapping."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    loader.flatten_mapping(node)
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise DuplicateKeyError(f"duplicate key {key!r} {key_node.start_mark}")
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_documents(text: str) -> list[dict[str, Any]]:
    """All non-empty YAML documents of a multi-document stream (duplicate keys are errors)."""
    docs: list[dict[str, Any]] = []
    for doc in yaml.load_all(text, Loader=_StrictLoader):
        if doc is None or doc == {}:
            continue
        if not isinstance(doc, dict):
            raise ValueError(f"rendered document is a {type(doc).__name__}, not a mapping: {doc!r:.200}")
        docs.append(doc)
    return docs


@lru_cache(maxsize=None)
def _helm_home(helm: str) -> str:
    # A private config/cache/data home per binary keeps a user's repositories and plugins (and
    # Helm 3 vs Helm 4 state) out of the results.
    return tempfile.mkdtemp(prefix=f"vllm-eks-{helm}-")


def _binary(helm: str) -> Path:
    if helm not in HELM_VERSIONS:
        raise ValueError(f"helm must be one of {sorted(HELM_VERSIONS)}, got {helm!r}")
    return require_tool(helm)


def _run(helm: str, args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    home = _helm_home(helm)
    env = dict(os.environ)
    env.update(
        HELM_CONFIG_HOME=os.path.join(home, "config"),
        HELM_CACHE_HOME=os.path.join(home, "cache"),
        HELM_DATA_HOME=os.path.join(home, "data"),
    )
    cmd = [str(_binary(helm)), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=_TIMEOUT_S)
    if proc.returncode != 0:
        raise HelmError([helm, *args], proc.returncode, proc.stdout, proc.stderr)
    return proc


def _value_args(
    values_files: Sequence[PathLike] | None, set_values: Mapping[str, Any] | None
) -> list[str]:
    args: list[str] = []
    for vf in values_files or ():
        if not Path(vf).is_file():
            raise FileNotFoundError(f"values file not found: {vf}")
        args += ["--values", str(vf)]
    # --set-json keeps the Python value's type exactly (--set would coerce "1" to 1, "true" to true).
    for key, value in (set_values or {}).items():
        args += ["--set-json", f"{key}={json.dumps(value)}"]
    return args


def template_text(
    chart_dir: PathLike,
    values_files: Sequence[PathLike] | None = None,
    set_values: Mapping[str, Any] | None = None,
    helm: str = "helm4",
    release: str = "vllm",
    namespace: str = "default",
    extra_args: Sequence[str] = (),
    kube_version: str | None = None,
    show_only: Sequence[str] = (),
) -> str:
    """Raw stdout of `helm template` (hooks and test pods included, CRDs in crds/ excluded)."""
    args = ["template", release, str(chart_dir), "--namespace", namespace]
    args += _value_args(values_files, set_values)
    if kube_version:
        args += ["--kube-version", kube_version]
    for template in show_only:
        args += ["--show-only", template]
    args += list(extra_args)
    return _run(helm, args).stdout


def render(
    chart_dir: PathLike,
    values_files: Sequence[PathLike] | None = None,
    set_values: Mapping[str, Any] | None = None,
    helm: str = "helm4",
    release: str = "vllm",
    namespace: str = "default",
    extra_args: Sequence[str] = (),
    kube_version: str | None = None,
    show_only: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """`helm template` parsed into objects; empty documents dropped. Raises HelmError."""
    text = template_text(
        chart_dir,
        values_files,
        set_values,
        helm=helm,
        release=release,
        namespace=namespace,
        extra_args=extra_args,
        kube_version=kube_version,
        show_only=show_only,
    )
    return load_documents(text)


def lint(
    chart_dir: PathLike,
    values_files: Sequence[PathLike] | None = None,
    helm: str = "helm4",
    set_values: Mapping[str, Any] | None = None,
    kube_version: str | None = None,
) -> str:
    """`helm lint --strict` (warnings are failures); returns its output, raises HelmError."""
    args = ["lint", "--strict", str(chart_dir)] + _value_args(values_files, set_values)
    if kube_version:
        args += ["--kube-version", kube_version]
    return _run(helm, args).stdout


def version(helm: str = "helm4") -> str:
    """`helm version --short`, e.g. 'v4.1.4+g05fa379'."""
    return _run(helm, ["version", "--short"]).stdout.strip()


@lru_cache(maxsize=None)
def _render_cached(chart_dir: str, values_file: str, set_json: str, helm: str, release: str,
                   namespace: str) -> tuple[dict[str, Any], ...]:
    return tuple(render(chart_dir, [values_file], set_values=json.loads(set_json), helm=helm,
                        release=release, namespace=namespace))


def render_case(chart_dir: PathLike, values_file: PathLike, set_values: Mapping[str, Any], helm: str = "helm4",
                release: str = "vllm", namespace: str = "llm") -> list[dict[str, Any]]:
    """`render` of one values file with --set-json overrides, each combination rendered once per
    session (the render tests check the same case many ways); a fresh list of the shared objects."""
    return list(_render_cached(str(chart_dir), str(values_file), json.dumps(dict(set_values), sort_keys=True),
                               helm, release, namespace))
