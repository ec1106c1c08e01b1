"""Is a scenario folder's plan.json the plan its values files were written from?

`check-fit` keeps the plan's DaemonSet reserve on every node, sizes nodes outside the catalog by
the plan's figures and checks `--quota` against the plan's EC2 quota bucket. A plan.json copied
from another scenario (another model, instance type or layout) would make all three silently
wrong, so the facts that identify a plan are compared with the values first: the topology, the
model and the name it is served under, the tensor and pipeline parallel sizes, the vLLM release
the plan was sized for (the image's vllmVersion), and the instance type, which must be one of the
instance types of the GPU pool the servers select.

Only identity is compared: tuning a forked values file (max-model-len, max-num-seqs, replicas)
leaves the plan's reserve and quota figures meaningful, while another model or instance does not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from vllm_eks.core.errors import VllmEksError
from vllm_eks.core.topology import ON_RAY
from vllm_eks.spec.engine_versions import RAY_VLLM, SERVER_VLLM


class PlanIdentityError(VllmEksError):
    """plan.json and the values files beside it describe different scenarios."""


def _read_values(path: Path) -> dict[str, Any]:
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise PlanIdentityError(f"{path}: not a readable YAML values file ({type(e).__name__})") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise PlanIdentityError(f"{path}: a values file is a YAML mapping, got {type(doc).__name__}")
    return doc


def _get(doc: dict[str, Any], dotted: str) -> Any:
    node: Any = doc
    for key in dotted.split("."):
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def _pool_instance_types(infra: dict[str, Any], pool: str) -> list[str] | None:
    """The instanceTypes of the gpu-infra pool named `pool`; None when no pool has that name."""
    for entry in infra.get("pools") or []:
        if isinstance(entry, dict) and entry.get("name") == pool:
            return [str(t) for t in entry.get("instanceTypes") or []]
    return None


def disagreements(plan: dict[str, Any], scenario: Path) -> list[str]:
    """Each fact on which plan.json and the folder's values files disagree, as `what: plan says
    X, values say Y`; empty when the plan is the one the values were written from."""
    server_file, infra_file = scenario / "vllm-inference.yaml", scenario / "gpu-infra.yaml"
    if not server_file.is_file():
        return []  # check-fit names the missing values file itself
    server = _read_values(server_file)
    out: list[str] = []

    def compare(what: str, planned: Any, key: str, default: Any = None) -> None:
        given = _get(server, key)
        given = default if given is None else given
        if given is not None and planned is not None and str(given) != str(planned):
            out.append(f"{what}: plan.json has {planned}, {server_file.name} {key} is {given}")

    compare("topology", plan.get("topology"), "topology")
    compare("model", plan.get("model_source"), "model.name")
    served = _get(server, "model.servedModelName") or _get(server, "model.name")
    if served is not None and plan.get("served_model_name") is not None and served != plan["served_model_name"]:
        out.append(f"served model name: plan.json has {plan['served_model_name']}, "
                   f"{server_file.name} model.servedModelName is {served}")
    compare("tensor parallel size", plan.get("tensor_parallel_size"), "engine.tensorParallelSize")
    compare("pipeline parallel size", plan.get("pipeline_parallel_size"), "engine.pipelineParallelSize")
    # the release the plan was sized for against the one the image declares (unset: the chart's
    # default image's); a plan.json from before the release was recorded says nothing
    on_ray = plan.get("topology") in ON_RAY
    compare("vLLM release", plan.get("vllm_version"), "ray.image.vllmVersion" if on_ray else "image.vllmVersion",
            RAY_VLLM if on_ray else SERVER_VLLM)
    pool = _get(server, "scheduling.pool")
    instance = plan.get("instance")
    if pool and instance and infra_file.is_file():
        types = _pool_instance_types(_read_values(infra_file), str(pool))
        if types is not None and instance not in types:
            out.append(f"instance type: plan.json was sized for {instance}, the pool {pool} of {infra_file.name} "
                       f"launches {', '.join(types) or 'no instance type'}")
    return out


def check_plan_identity(plan: dict[str, Any], scenario: Path, plan_file: Path) -> None:
    """Refuse, in one line, a plan.json that is not the plan of the values beside it."""
    found = disagreements(plan, scenario)
    if found:
        raise PlanIdentityError(
            f"{plan_file}: not the plan these values were written from ({'; '.join(found)}); its DaemonSet "
            f"reserve and quota figures would be another scenario's: run `vllm-eks values` again with --out "
            f"{scenario}, or remove plan.json to check the values alone")
