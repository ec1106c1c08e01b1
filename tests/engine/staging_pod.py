"""The rendered staging Job's container and the server pods' wait init container (charts/vllm-inference
staging.*), run on this machine: the chart's command and env as rendered, with the pod's paths
mapped to folders (the claim's mounts /staging and /models to one folder, /tmp to an emptyDir
stand-in, the scripts ConfigMap's mount to a folder holding its data) and secretKeyRefs resolved
the way the kubelet would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.engine.scenarios import CHART_VLLM, VALUES, render_chart

SCENARIO = VALUES / "qwen2.5-7b-g6-xlarge" / "vllm-inference.yaml"
SCRIPTS_MOUNT = "/opt/vllm-eks/scripts"


def render(set_values: dict[str, Any]) -> dict[str, Any]:
    """job: the staging container; init: the server's wait-for-staged-weights container; scripts:
    the scripts ConfigMap's data."""
    objects = render_chart(CHART_VLLM, SCENARIO, set_values=set_values)
    (job,) = [o for o in objects if o["kind"] == "Job" and o["metadata"]["name"].endswith("-staging")]
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    (cm,) = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith("-scripts")]
    (init,) = [c for c in deployment["spec"]["template"]["spec"].get("initContainers", [])
               if c["name"] == "wait-for-staged-weights"]
    (job_container,) = job["spec"]["template"]["spec"]["containers"]
    return {"job": job_container, "init": init, "scripts": cm["data"]}


class Paths:
    """Pod path -> local folder, longest prefix first."""

    def __init__(self, mapping: dict[str, Path]) -> None:
        self.mapping = sorted(mapping.items(), key=lambda kv: -len(kv[0]))

    def __call__(self, value: str) -> str:
        for prefix, local in self.mapping:
            if value == prefix or value.startswith(prefix + "/"):
                return str(local) + value[len(prefix):]
        return value


def container_env(container: dict[str, Any], paths: Paths, secrets: dict[tuple[str, str], str]) -> dict[str, str]:
    out = {}
    for e in container.get("env", []):
        if "value" in e:
            out[e["name"]] = paths(e["value"])
        else:
            ref = e["valueFrom"]["secretKeyRef"]
            out[e["name"]] = secrets[(ref["name"], ref["key"])]
    return out


def argv(container: dict[str, Any], paths: Paths, python: Path) -> list[str]:
    """The container's command with python3 as the engine venv's interpreter and paths mapped."""
    return [str(python) if a == "python3" else paths(a) for a in container["command"]]


def write_scripts(data: dict[str, str], folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in data.items():
        (folder / name).write_text(text)
    return folder
