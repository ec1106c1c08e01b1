"""What a rendered release must satisfy beyond its schemas, and what a refused render must say.

`manifest_problems` is the oracle of a `helm template` that exited 0: every object validates
strictly (vllm_eks.verify.objects), and the rules the API server, the controllers or the runtime apply
that no schema expresses hold as well:
- pod template metadata and label selectors follow the API server's syntax rules (k8s_meta);
- every workload's selector matches its own pod template (the API server refuses the workload
  otherwise), and every Service, PodDisruptionBudget and NetworkPolicy of the release selects at
  least one pod the release creates (one that selects none renders, installs and does nothing);
- every container's resource requests are at most its limits (extended resources and hugepages:
  equal), all of them valid quantities;
- a memory-backed /dev/shm is no larger than the memory limit of the container that mounts it
  (it is counted against that limit: a larger one only moves the failure to an OOM kill);
- Pod Security "restricted" (harness.pod_security), when the caller does not exempt the release;
- no string shows a Go template leak: `<no value>` (a missing key), `%!` (a printf verb error),
  `map[` (a map printed with %v or toString), `<nil>` (nil printed).

`rejection_problems` is the oracle of a `helm template` that exited non-zero: no template crash,
and the message is the schema's report or the chart's own "invalid values" block."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from vllm_eks.core.units import parse_quantity
from vllm_eks.verify import k8s_meta
from vllm_eks.verify.crd_schema import CrdRegistry
from vllm_eks.verify.objects import validate_all

from . import pod_security, pods

# Text of a Go template leak in a rendered string (see the module docstring).
LEAKS = ("<no value>", "%!", "map[", "<nil>")
# Text of a template that crashed instead of failing on purpose: a nil map or field reached
# (`nil pointer`, `can't evaluate field`), a function refused its argument (`error calling`,
# `wrong type for value`, `interface conversion`), or Go itself gave up (`runtime error`, `panic`).
CRASHES = ("nil pointer", "runtime error", "error calling", "wrong type for value", "can't evaluate field",
           "interface conversion", "panic")
# How Helm reports values that fail values.schema.json (Helm 3 and Helm 4 print the same header).
SCHEMA_HEADER = "values don't meet the specifications of the schema"
# How each chart's validate helper (templates/_validate.tpl) opens its one failure.
VALIDATE_HEADERS = {"vllm-inference": "vllm-inference: invalid values:",
                    "gpu-infra": "gpu-infra values are invalid:",
                    "observability": "observability: invalid values:"}

# Workload kinds whose spec.selector must select their own pod template.
_SELECTED_TEMPLATES = {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"}
# Resource names compared as requests <= limits; any other (extended resources such as
# nvidia.com/gpu, hugepages-*) must have requests equal to limits.
_OVERCOMMITTABLE = {"cpu", "memory", "ephemeral-storage"}


def pod_templates(objects: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(what, pod template {metadata, spec}) of every pod template a release renders (bare Pods
    as their own template)."""
    for obj in objects:
        kind, name = obj.get("kind"), (obj.get("metadata") or {}).get("name")
        spec = obj.get("spec") or {}
        if kind == "Pod":
            yield f"Pod/{name}", obj
        elif kind in _SELECTED_TEMPLATES or kind == "Job":
            yield f"{kind}/{name}", spec.get("template") or {}
        elif kind == "CronJob":
            yield f"{kind}/{name}", spec["jobTemplate"]["spec"]["template"]
        elif kind == "LeaderWorkerSet":
            lwt = spec.get("leaderWorkerTemplate") or {}
            for role in ("leaderTemplate", "workerTemplate"):
                if role in lwt:
                    yield f"{kind}/{name} {role}", lwt[role]
        elif kind in ("RayService", "RayCluster"):
            cluster = spec.get("rayClusterConfig") if kind == "RayService" else spec
            cluster = cluster or {}
            yield f"{kind}/{name} head", (cluster.get("headGroupSpec") or {}).get("template") or {}
            for group in cluster.get("workerGroupSpecs") or []:
                yield f"{kind}/{name} {group.get('groupName')}", group.get("template") or {}


def _selector_syntax(selector: Any, where: str) -> list[str]:
    if not isinstance(selector, dict):
        return []
    out = k8s_meta.labels_errors(selector.get("matchLabels"), f"{where}.matchLabels")
    for expr in selector.get("matchExpressions") or []:
        out += [f"{where}.matchExpressions: {e}"
                for e in k8s_meta.labels_errors({str(expr.get("key")): ""}, "key")]
    return out


def metadata_problems(objects: list[dict[str, Any]]) -> list[str]:
    """Syntax of what validate_all leaves out: pod template labels and annotations, selectors,
    Service selectors and nodeSelector keys (the API server checks them all like labels)."""
    out: list[str] = []
    for what, tpl in pod_templates(objects):
        meta = dict(tpl.get("metadata") or {})
        meta["name"] = "template"  # the template has none; its labels and annotations are checked
        out += [f"{what}: template {e}" for e in k8s_meta.metadata_errors({"kind": "Pod", "metadata": meta})]
        node_selector = (tpl.get("spec") or {}).get("nodeSelector")
        out += [f"{what}: {e}" for e in k8s_meta.labels_errors(node_selector, "spec.nodeSelector")]
    for obj in objects:
        what = f"{obj.get('kind')}/{(obj.get('metadata') or {}).get('name')}"
        spec = obj.get("spec") or {}
        if obj.get("kind") == "Service":
            out += [f"{what}: {e}" for e in k8s_meta.labels_errors(spec.get("selector"), "spec.selector")]
        for key in ("selector", "podSelector"):
            if isinstance(spec.get(key), dict) and obj.get("kind") != "Service":
                out += [f"{what}: {e}" for e in _selector_syntax(spec[key], f"spec.{key}")]
    return out


def selector_problems(objects: list[dict[str, Any]]) -> list[str]:
    """Workload selectors select their templates; Services, PodDisruptionBudgets and
    NetworkPolicies select at least one pod of the release."""
    out: list[str] = []
    for obj in objects:
        kind, name = obj.get("kind"), obj["metadata"].get("name")
        if kind in _SELECTED_TEMPLATES:
            selector = obj["spec"].get("selector")
            labels = (obj["spec"]["template"].get("metadata") or {}).get("labels") or {}
            if not selector or not (selector.get("matchLabels") or selector.get("matchExpressions")):
                out.append(f"{kind}/{name}: spec.selector is empty")
            elif not pods.selector_matches(selector, labels):
                out.append(f"{kind}/{name}: spec.selector {selector} does not match the template labels {labels}")
    created = pods.created_pods(objects)
    for obj in objects:
        kind, meta = obj.get("kind"), obj["metadata"]
        spec = obj.get("spec") or {}
        namespace = meta.get("namespace", "")
        if kind == "Service" and spec.get("selector"):
            selects = lambda p: pods.selects(spec["selector"], p.labels)  # noqa: E731
        elif kind == "PodDisruptionBudget":
            selects = lambda p: pods.selector_matches(spec.get("selector"), p.labels)  # noqa: E731
        elif kind == "NetworkPolicy":
            selects = lambda p: pods.selector_matches(spec.get("podSelector"), p.labels)  # noqa: E731
        else:
            continue
        if not any(p.namespace == namespace and selects(p) for p in created):
            out.append(f"{kind}/{meta.get('name')}: selects none of the pods the release creates "
                       f"({', '.join(p.what for p in created) or 'none'})")
    return out


def _quantity(value: Any) -> Any:
    try:
        return parse_quantity(value)
    except ValueError:
        return None


def resource_problems(objects: list[dict[str, Any]]) -> list[str]:
    """Requests at most limits (equal for extended resources), every quantity valid, and a
    memory-backed /dev/shm within the memory limit of the container mounting it."""
    out: list[str] = []
    for what, spec, _ in pod_security.rendered_pod_specs(objects):
        shm = {v.get("name"): (v.get("emptyDir") or {}).get("sizeLimit") for v in spec.get("volumes") or []
               if (v.get("emptyDir") or {}).get("medium") == "Memory"}
        for path, container in pod_security.containers(spec):
            where = f"{what} {path}"
            resources = container.get("resources") or {}
            requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
            for section, values in (("requests", requests), ("limits", limits)):
                for resource, value in values.items():
                    if _quantity(value) is None:
                        out.append(f"{where}: resources.{section}.{resource} {value!r} is not a quantity")
            for resource in set(requests) & set(limits):
                req, lim = _quantity(requests[resource]), _quantity(limits[resource])
                if req is None or lim is None:
                    continue
                if resource in _OVERCOMMITTABLE and req > lim:
                    out.append(f"{where}: resources.requests.{resource} {requests[resource]} is above "
                               f"the limit {limits[resource]}")
                elif resource not in _OVERCOMMITTABLE and req != lim:
                    out.append(f"{where}: resources.requests.{resource} {requests[resource]} must equal "
                               f"the limit {limits[resource]}")
            memory = _quantity(limits.get("memory")) if "memory" in limits else None
            for mount in container.get("volumeMounts") or []:
                size = shm.get(mount.get("name"))
                if mount.get("mountPath") != "/dev/shm" or size is None:
                    continue
                if _quantity(size) is None:
                    out.append(f"{where}: /dev/shm sizeLimit {size!r} is not a quantity")
                elif memory is not None and _quantity(size) > memory:
                    out.append(f"{where}: /dev/shm sizeLimit {size} is above the memory limit {limits['memory']}")
    return out


def restricted_problems(objects: list[dict[str, Any]]) -> list[str]:
    """Pod Security restricted violations of every pod the release creates."""
    return [f"{what}: {v}" for what, spec, annotations in pod_security.rendered_pod_specs(objects)
            for v in pod_security.restricted_violations(spec, annotations)]


def _strings(node: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield path, str(key)
            yield from _strings(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _strings(item, f"{path}[{i}]")
    elif isinstance(node, str):
        yield path, node


def leak_problems(objects: list[dict[str, Any]]) -> list[str]:
    """Strings (keys included) that show a Go template leak."""
    out = []
    for obj in objects:
        what = f"{obj.get('kind')}/{(obj.get('metadata') or {}).get('name')}"
        for path, text in _strings(obj, ""):
            found = [leak for leak in LEAKS if leak in text]
            if found:
                out.append(f"{what}{path}: {found[0]!r} in {text[:200]!r}")
    return out


def manifest_problems(objects: list[dict[str, Any]], crd_registry: CrdRegistry, kube_version: str,
                      restricted: bool = True) -> list[str]:
    """Every problem of a rendered release (empty when it is right); `restricted=False` exempts it
    from Pod Security restricted (a chart that needs host access, or a user's documented opt-out)."""
    report = validate_all(objects, crd_registry, kube_version=kube_version, raise_on_error=False)
    problems = list(report.errors)
    problems += leak_problems(objects)
    problems += metadata_problems(objects)
    try:
        problems += selector_problems(objects)
        problems += resource_problems(objects)
        if restricted:
            problems += restricted_problems(objects)
    except (KeyError, TypeError, AttributeError) as exc:
        # Only a malformed object gets here, and validate_all has reported it already.
        problems.append(f"an object is too malformed to check further: {exc!r}")
    return problems


def rejection_problems(message: str, chart: str) -> list[str]:
    """Problems of a refused render's message (empty when it is a clean refusal): no template
    crash, and it is the schema's report or the chart's validate block."""
    out = [f"template crash ({marker!r})" for marker in CRASHES if marker in message]
    if SCHEMA_HEADER not in message and VALIDATE_HEADERS[chart] not in message:
        out.append(f"neither the schema's report nor the {chart} 'invalid values' block")
    return out
