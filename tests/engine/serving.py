"""Scenario servers: a rendered scenario's serve command with the CPU substitutions applied,
and the client checks every served scenario gets (the same requests a user and the chart's
`helm test` pod send)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import scenarios as sc
from .cpu import Substituted, cpu_substitutions, tiny_model_for
from .server import VllmServer, free_port

if TYPE_CHECKING:
    from .pod_sandbox import PodSandbox

# The scenario whose server also serves the Prometheus and drain checks (the README's default
# model and instance); it is served last so that its server is still up for those tests.
METRICS_SCENARIO = "llama-3.1-8b-g6e-xlarge"


@dataclass
class ScenarioRun:
    name: str
    objects: list[dict[str, Any]]
    invocation: sc.ServeInvocation
    tiny: str
    tiny_path: str
    sub: Substituted
    server: VllmServer | None = None

    @property
    def served_model_name(self) -> str:
        return sc.flag_value(self.invocation.args, "--served-model-name") or self.invocation.args[0]

    @property
    def deployment_pod_spec(self) -> dict[str, Any]:
        return self.invocation.pod_spec


def scenario_order(names: list[str]) -> list[str]:
    rest = sorted(n for n in names if n != METRICS_SCENARIO)
    return rest + ([METRICS_SCENARIO] if METRICS_SCENARIO in names else [])


def single_node_invocation(name: str, objects: list[dict[str, Any]]) -> sc.ServeInvocation | None:
    """The server container of a single-node scenario (a Deployment), else None."""
    invs = [i for i in sc.serve_invocations(name, objects) if i.owner.get("kind") == "Deployment"]
    if len(invs) > 1:
        raise AssertionError(f"{name}: {len(invs)} Deployments run vllm serve; expected one")
    return invs[0] if invs else None


def prepare(name: str, objects: list[dict[str, Any]], tiny_models: dict[str, dict]) -> ScenarioRun:
    inv = single_node_invocation(name, objects)
    assert inv is not None, f"{name}: no single-node Deployment running vllm serve"
    plan = json.loads((sc.VALUES / name / "plan.json").read_text())
    tiny = tiny_model_for(plan["model"])
    path = tiny_models[tiny]["path"]
    port = free_port()
    return ScenarioRun(name, objects, inv, tiny, path,
                       cpu_substitutions(inv.args, tiny_model=path, port=port))


def sandboxed_server(run: ScenarioRun, container: dict[str, Any], box: "PodSandbox", name: str,
                     log_path: Path) -> tuple[list[str], dict[str, str], VllmServer]:
    """The scenario's server as its pod runs it, in `box` (tests/engine/pod_sandbox.py): the
    rendered env unchanged plus the CPU substitutions, the stand-in model bound read-only.
    Returns the sandbox's argv prefix, the env and the (not yet started) server."""
    from .engine_env import SCRIPTS, engine_venv

    model = box.bind_model(Path(run.tiny_path))
    venv = engine_venv()
    wrapper = box.wrapper([venv.root, Path(os.path.realpath(venv.python)).parents[1], SCRIPTS])
    env = {e["name"]: str(e["value"]) for e in container["env"] if "value" in e}
    env.update(run.sub.env)
    args = [a.replace(run.tiny_path, model) for a in run.sub.args]
    port = free_port()
    args[args.index("--port") + 1] = str(port)
    return wrapper, env, VllmServer(name=name, args=args, env=env, port=port, log_path=log_path, wrapper=wrapper)


def server_key(run: ScenarioRun) -> tuple:
    """Scenarios whose substituted command lines are equal (port aside) share one server."""
    port = sc.flag_value(run.sub.args, "--port")
    args = tuple(a for a in run.sub.args if a != port)
    return (args, tuple(sorted(run.sub.env.items())))


# ---------------------------------------------------------------------------------------------
# The helm test pod's own script, run here against the loopback server.

def _service_url_pattern(objects: list[dict[str, Any]]) -> re.Pattern[str]:
    names = [o["metadata"]["name"] for o in objects if o.get("kind") == "Service"]
    assert names, "no Service rendered"
    alt = "|".join(re.escape(n) for n in names)
    return re.compile(rf"https?://(?:{alt})(?:\.[a-z0-9-]+)?(?:\.svc(?:\.cluster\.local)?)?(?::\d+)?")


@dataclass
class HelmTestRun:
    pod: str
    container: str
    returncode: int
    output: str
    substitutions: list[str]


def api_test_containers(objects: list[dict[str, Any]]) -> list[tuple[dict, dict]]:
    """(pod, container) of the `helm.sh/hook: test` Pods that call the model server through its
    Service. Test pods that act on the cluster instead (e.g. the pods/exec diagnostics of a
    multi-node group) need a cluster and are not run here."""
    pattern = _service_url_pattern(objects)
    out = []
    for pod in sc.helm_test_pods(objects):
        for c in pod["spec"]["containers"]:
            text = " ".join(list(c.get("command") or []) + list(c.get("args") or []) +
                            [str(e.get("value", "")) for e in c.get("env") or []])
            if pattern.search(text):
                out.append((pod, c))
    return out


def env_value(var: dict[str, Any], secrets: dict[str, dict[str, str]] | None) -> str | None:
    """A container env entry's value as the kubelet resolves it: a literal, or a secretKeyRef
    looked up in `secrets` (name -> key -> value, the Secrets a test puts in the namespace);
    None for an optional reference that is missing (the kubelet leaves the variable unset).
    Any other source cannot be resolved without a cluster."""
    if "value" in var:
        return str(var["value"])
    ref = (var.get("valueFrom") or {}).get("secretKeyRef")
    if ref is not None:
        secret = (secrets or {}).get(ref.get("name"), {})
        if ref.get("key") in secret:
            return secret[ref["key"]]
        if ref.get("optional"):
            return None
        raise AssertionError(f"env {var['name']}: Secret {ref.get('name')} key {ref.get('key')} "
                             "is not among the Secrets of this test")
    raise AssertionError(f"env {var['name']} is neither a literal nor a secretKeyRef; cannot run it here")


def run_helm_test_pods(objects: list[dict[str, Any]], base_url: str, workdir: Path,
                       secrets: dict[str, dict[str, str]] | None = None) -> list[HelmTestRun]:
    """Each API test container, with its command and env as rendered (secretKeyRef entries from
    `secrets`), the Service URL replaced by the loopback server URL. Its tools (sh, curl, ...)
    must be on this machine's PATH: a missing tool is a failure, not a skip."""
    return [run_container(objects, pod["metadata"]["name"], c, base_url, workdir, secrets)
            for pod, c in api_test_containers(objects)]


def run_container(objects: list[dict[str, Any]], pod_name: str, c: dict[str, Any], base_url: str,
                  workdir: Path, secrets: dict[str, dict[str, str]] | None = None,
                  mounts: dict[str, Path] | None = None, extra_env: dict[str, str] | None = None,
                  timeout: float = 300) -> HelmTestRun:
    """One rendered container's command run here as run_helm_test_pods does, and: env values under
    a volume's mountPath moved to the local folder `mounts` gives it (mountPath -> folder), and
    `extra_env` (e.g. PATH with the vllm shim first) added before the container's own env."""
    pattern = _service_url_pattern(objects)
    argv = list(c.get("command") or []) + list(c.get("args") or [])
    assert argv, f"pod {pod_name} container {c['name']} has no command"
    subs: list[str] = []
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL")}
    env["HOME"] = str(workdir)
    env.update(extra_env or {})
    for e in c.get("env") or []:
        rendered = env_value(e, secrets)
        if rendered is None:
            continue
        value, n = pattern.subn(base_url, rendered)
        if n:
            subs.append(f"env {e['name']}: {rendered} -> {value}")
        for mount, local in (mounts or {}).items():
            if value == mount or value.startswith(mount + "/"):
                value = str(local) + value[len(mount):]
                subs.append(f"env {e['name']}: {mount} -> {local}")
        env[e["name"]] = value
    new_argv = []
    for a in argv:
        b, n = pattern.subn(base_url, a)
        if n:
            subs.append(f"command: Service URL -> {base_url}")
        new_argv.append(b)
    exe = shutil.which(new_argv[0], path=env.get("PATH")) or (
        new_argv[0] if Path(new_argv[0]).exists() else None)
    assert exe, f"pod {pod_name} command {new_argv[0]} not found on this machine"
    proc = subprocess.run(new_argv, env=env, capture_output=True, text=True, timeout=timeout, cwd=workdir)
    return HelmTestRun(pod_name, c["name"], proc.returncode, proc.stdout + proc.stderr, subs)
