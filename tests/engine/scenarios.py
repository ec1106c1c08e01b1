"""The committed scenarios and the `vllm serve` argument lists their rendered pods would run.

Rendering uses the harness (real Helm). Extraction takes the pod templates of every rendered
object from the generator's workload walker (vllm_eks.check.workloads: Deployment, StatefulSet,
LeaderWorkerSet leader/worker, RayService head and worker groups, Jobs, bare Pods), and a pod
spec found anywhere else in an object (a kind added later) is an error: the walker, which
`check-fit` uses too, must learn that kind first. A container that runs the vLLM image or mentions vLLM but whose
`vllm serve` arguments cannot be found is an error, not a skip. Ray Serve LLM applications
carry the engine settings as `engine_kwargs` in serveConfigV2 instead of a command line; those
are turned into the equivalent flags (the mapping vLLM's own EngineArgs uses: field name with
dashes, booleans as presence / --no-, dicts and lists as JSON).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.harness.paths import CHARTS, VALUES
from vllm_eks.check.workloads import PodTemplate, pod_templates
from vllm_eks.spec.engine_settings import serve_flags

CHART_VLLM = CHARTS / "vllm-inference"
CHART_OBSERVABILITY = CHARTS / "observability"
RELEASE = "vllm"
NAMESPACE = "llm"

# Module paths that start the OpenAI server the way `vllm serve` does.
_SERVER_MODULES = ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.launchers.api_server.entry",
                   "vllm.entrypoints.cli.main")
_SHELL_SEPARATORS = {";", "&&", "||", "|", "&", "\n"}
_K8S_VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


class ExtractionError(AssertionError):
    """A container looks like a model server but its vLLM arguments could not be read."""


@dataclass(frozen=True)
class ServeInvocation:
    scenario: str
    where: str  # kind/name/path of the container, for messages
    role: str  # server, leader, prefill, decode, ray-serve, ...
    args: tuple[str, ...]  # everything after `vllm serve`
    pod_spec: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    owner: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


def scenario_dirs() -> list[Path]:
    if not VALUES.is_dir():
        return []
    return sorted(p.parent for p in VALUES.glob("*/vllm-inference.yaml"))


def render_chart(chart: Path, values_file: Path, helm: str = "helm4",
                 set_values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    from tests.harness.helm import render

    return render(chart, values_files=[values_file], set_values=set_values, helm=helm,
                  release=RELEASE, namespace=NAMESPACE)


def render_scenario(scenario: Path) -> list[dict[str, Any]]:
    return render_chart(CHART_VLLM, scenario / "vllm-inference.yaml")


def is_helm_test(obj: dict[str, Any]) -> bool:
    hooks = (obj.get("metadata", {}).get("annotations") or {}).get("helm.sh/hook", "")
    return "test" in [h.strip() for h in hooks.split(",")]


def _pod_specs(node: Any, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every dict with a `containers` list below `node`, with a JSON-ish path to it."""
    if isinstance(node, dict):
        if isinstance(node.get("containers"), list):
            yield path, node
        for key, value in node.items():
            yield from _pod_specs(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _pod_specs(value, f"{path}[{i}]")


def _expand(arg: str, env: dict[str, str]) -> str:
    # Kubernetes expands $(VAR) in command/args from the container's env; unresolvable
    # references stay as written (the kubelet does the same).
    return _K8S_VAR.sub(lambda m: env.get(m.group(1), m.group(0)), arg)


def _serve_args_from_tokens(tokens: list[str]) -> list[str] | None:
    """Arguments after `vllm serve` (or after a module that runs the same server)."""
    for i, tok in enumerate(tokens):
        if Path(tok).name == "vllm" and i + 1 < len(tokens) and tokens[i + 1] == "serve":
            rest = tokens[i + 2:]
            break
        if tok == "-m" and i + 1 < len(tokens) and tokens[i + 1] in _SERVER_MODULES:
            rest = tokens[i + 2:]
            if tokens[i + 1] == "vllm.entrypoints.cli.main":
                if not rest or rest[0] != "serve":
                    return None
                rest = rest[1:]
            break
    else:
        return None
    out: list[str] = []
    for tok in rest:
        if tok in _SHELL_SEPARATORS:
            break
        out.append(tok)
    return out


def _shell_tokens(script: str) -> list[str]:
    """Words of a shell script, with separators (; && || | & newline) as their own tokens."""
    tokens: list[str] = []
    for line in script.replace("\\\n", " ").splitlines():
        lex = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lex.whitespace_split = True
        tokens.extend(list(lex))
        tokens.append("\n")
    return tokens


def lws_env(lws: dict[str, Any], worker_index: int) -> dict[str, str]:
    """The variables the LeaderWorkerSet controller puts on every container of a group
    (kubernetes-sigs/lws pkg/utils/pod: LWS_LEADER_ADDRESS = <lws>-<group>.<lws>.<namespace>,
    the leader's hostname on the group's headless Service; LWS_GROUP_SIZE; LWS_WORKER_INDEX,
    0 on the leader), for group 0."""
    name = lws["metadata"]["name"]
    namespace = lws["metadata"].get("namespace", NAMESPACE)
    return {"LWS_LEADER_ADDRESS": f"{name}-0.{name}.{namespace}",
            "LWS_GROUP_SIZE": str(lws["spec"]["leaderWorkerTemplate"]["size"]),
            "LWS_WORKER_INDEX": str(worker_index)}


def container_serve_args(container: dict[str, Any], extra_env: dict[str, str] | None = None) -> list[str] | None:
    """`vllm serve` arguments of a container; `extra_env` holds variables a controller injects
    at admission (LWS_*), which the kubelet expands in $(VAR) like the literal env."""
    env = dict(extra_env or {})
    env.update({e["name"]: str(e["value"]) for e in container.get("env") or [] if "value" in e})
    argv = [_expand(str(a), env) for a in (container.get("command") or []) + (container.get("args") or [])]
    direct = _serve_args_from_tokens(argv)
    if direct is not None:
        return direct
    # `sh -c "...; vllm serve ..." NAME ARG...`: the script is the word after -c; the words
    # after it are $0 and the positional parameters that "$@" expands to.
    if argv and Path(argv[0]).name in ("sh", "bash", "dash"):
        for i, tok in enumerate(argv[:-1]):
            if tok.startswith("-") and tok.endswith("c") and not tok.startswith("--"):
                positional = argv[i + 3:]
                tokens: list[str] = []
                for word in _shell_tokens(argv[i + 1]):
                    tokens += positional if word in ("$@", "$*") else [word]
                return _serve_args_from_tokens(tokens)
    return None


def _looks_like_vllm(container: dict[str, Any]) -> bool:
    """The image is a vLLM image or the container invokes vLLM (`vllm ...`, `-m vllm...`): a
    release named vllm in another program's arguments (the endpoint picker's --pool-name) is not."""
    if "vllm" in str(container.get("image", "")).lower():
        return True
    text = " ".join(str(a) for a in (container.get("command") or []) + (container.get("args") or []))
    return re.search(r"(^|[\s;&|/])vllm(\s|$)|-m\s+vllm\b", text) is not None


def _is_ray_worker(container: dict[str, Any]) -> bool:
    """A Ray node container: `ray start`, written out or KubeRay's generated command."""
    text = " ".join(str(a) for a in (container.get("command") or []) + (container.get("args") or []))
    return ("ray start" in text or "KUBERAY_GEN_RAY_START_CMD" in text) and "vllm serve" not in text


def _is_bench_client(container: dict[str, Any]) -> bool:
    """The benchmark Job's container: it runs `vllm bench serve` (a client), never `vllm serve`."""
    text = " ".join(str(a) for a in (container.get("command") or []) + (container.get("args") or []))
    return "vllm bench serve" in text and not re.search(r"(^|[\s;&|])vllm serve\b", text)


def _is_staging_copy(container: dict[str, Any]) -> bool:
    """The staging Job's container: the vLLM image running the weight copy script, never `vllm serve`."""
    words = [str(a) for a in (container.get("command") or []) + (container.get("args") or [])]
    return any(w.endswith("/stage_weights.py") for w in words) and "serve" not in words


def _role(obj: dict[str, Any], template: PodTemplate) -> str:
    labels = obj.get("metadata", {}).get("labels") or {}
    component = labels.get("app.kubernetes.io/component", "")
    if obj.get("kind") == "LeaderWorkerSet" and template.role in ("leader", "worker"):
        return f"{component or 'server'}/{template.role}"
    return component or "server"


def engine_kwargs_to_flags(model: str, kwargs: dict[str, Any]) -> list[str]:
    """Ray Serve LLM's engine_kwargs -> the `vllm serve` command line they stand for, rendered
    by the generator's one settings-to-flags function."""
    return [model, *serve_flags(kwargs)]


def _llm_configs(node: Any, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Ray Serve LLM configs below an application's args, wherever the builder puts them
    (`llm_configs: [...]` for build_openai_app, `prefill_config`/`decode_config` for
    build_pd_openai_app): every dict with a model_loading_config."""
    if isinstance(node, dict):
        if "model_loading_config" in node:
            yield path, node
            return
        for key, value in node.items():
            yield from _llm_configs(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _llm_configs(value, f"{path}[{i}]")


def _ray_serve_invocations(scenario: str, obj: dict[str, Any]) -> list[ServeInvocation]:
    raw = obj.get("spec", {}).get("serveConfigV2")
    if raw is None:
        return []
    config = yaml.safe_load(raw) if isinstance(raw, str) else raw
    out = []
    name = f"{obj['kind']}/{obj['metadata']['name']}"
    for app in config.get("applications") or []:
        found = list(_llm_configs(app.get("args") or {}, "args"))
        if not found:
            raise ExtractionError(f"{scenario}: {name} application {app.get('name')!r} has no LLM "
                                  "config (model_loading_config) in its args: cannot find its "
                                  "engine settings")
        for path, llm in found:
            loading = llm["model_loading_config"] or {}
            model = loading.get("model_source") or loading.get("model_id")
            if not model:
                raise ExtractionError(f"{scenario}: {name} {path} has no model_source/model_id")
            kwargs = dict(llm.get("engine_kwargs") or {})
            if "served_model_name" not in kwargs and loading.get("model_id"):
                kwargs["served_model_name"] = loading["model_id"]
            role = "ray-serve/" + (path.rsplit(".", 1)[-1].removesuffix("_config") or "llm")
            out.append(ServeInvocation(scenario, f"{name} serveConfigV2 {app.get('name')} {path}",
                                       role, tuple(engine_kwargs_to_flags(model, kwargs)), {}, obj))
    return out


def serve_invocations(scenario: str, objects: list[dict[str, Any]]) -> list[ServeInvocation]:
    found: list[ServeInvocation] = []
    for obj in objects:
        if is_helm_test(obj):
            continue
        if obj.get("kind") == "RayService":
            found += _ray_serve_invocations(scenario, obj)
        templates = pod_templates([obj], daemonsets=True)
        walked = {id(tpl.spec) for tpl in templates}
        unknown = [path for path, spec in _pod_specs(obj.get("spec", {}), "spec") if id(spec) not in walked]
        if unknown:
            raise ExtractionError(f"{scenario}: {obj.get('kind')}/{obj.get('metadata', {}).get('name')} has pod "
                                  f"specs at {unknown} that vllm_eks.check.workloads.pod_templates does not know")
        for tpl in templates:
            spec = tpl.spec
            injected = None
            if obj.get("kind") == "LeaderWorkerSet":
                injected = lws_env(obj, 0 if tpl.role == "leader" else 1)
            for container in spec.get("containers") or []:
                where = f"{tpl.workload} {tpl.role} container {container.get('name')}"
                args = container_serve_args(container, injected)
                if args is not None:
                    found.append(ServeInvocation(scenario, where, _role(obj, tpl), tuple(args), spec, obj))
                elif _looks_like_vllm(container) and not _is_ray_worker(container) \
                        and not _is_bench_client(container) and not _is_staging_copy(container) \
                        and obj.get("kind") != "RayService":
                    raise ExtractionError(
                        f"{scenario}: {where} runs vLLM but no `vllm serve` arguments were found "
                        f"in command={container.get('command')} args={container.get('args')}")
    return found


def helm_test_pods(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objects if o.get("kind") == "Pod" and is_helm_test(o)]


def flag_value(args: tuple[str, ...] | list[str], flag: str) -> str | None:
    """Value of `--flag v` or `--flag=v` (last one wins, as argparse does)."""
    value = None
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            value = args[i + 1]
        elif a.startswith(flag + "="):
            value = a.split("=", 1)[1]
    return value
