"""Every rendered model-server container of charts/vllm-inference checks its image contract first
(files/contracts/<topology>.sh, mounted from the chart's scripts ConfigMap) with the capabilities
its pod needs, and no single-node or multi-node manifest runs Ray. For every committed scenario
and every ci values file, Helm 3 and Helm 4."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from tests.harness import helm
from tests.harness.paths import CHARTS, ROOT

pytestmark = pytest.mark.render

CHART = CHARTS / "vllm-inference"
FILES = sorted(ROOT.glob("values/*/vllm-inference.yaml")) + sorted((CHART / "ci").glob("*-values.yaml"))
SCRIPTS = "/opt/vllm-eks/scripts"
DLC = "public.ecr.aws/deep-learning-containers/ray:serve-llm-cuda-v1.0.0"


def _id(p: Path) -> str:
    return p.parent.name if p.name == "vllm-inference.yaml" else f"ci/{p.name}"


def _pod_specs(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        if isinstance(node.get("containers"), list):
            yield node
        for v in node.values():
            yield from _pod_specs(v)
    elif isinstance(node, list):
        for v in node:
            yield from _pod_specs(v)


def _servers(objects: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(pod spec, container) of every model-server container (helm test pods, the benchmark Job, a
    client, and the staging Job, which runs no server, excluded)."""
    out = []
    for obj in objects:
        if "helm.sh/hook" in (obj.get("metadata", {}).get("annotations") or {}):
            continue
        if (obj.get("metadata", {}).get("labels") or {}).get("app.kubernetes.io/component") in ("benchmark", "staging", "endpoint-picker"):
            continue  # clients, the copy Job and the gateway's picker run no model server
        for spec in _pod_specs(obj.get("spec", {})):
            out += [(spec, c) for c in spec["containers"]]
    return out


@pytest.fixture(scope="module", params=FILES, ids=_id)
def case(request: pytest.FixtureRequest) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    values = yaml.safe_load(request.param.read_text())
    return values, helm.render(CHART, [request.param], helm="helm4", namespace="llm")


def _expected_caps(values: dict[str, Any]) -> list[str]:
    caps = []
    if (values.get("efa") or {}).get("devices", 0) > 0:
        caps.append("efa")
    pools = (values.get("disaggregated") or {})
    if values.get("topology") == "disaggregated" and any(
            "LIBFABRIC" in json.dumps((pools.get(r) or {}).get("engineKwargs", {})) for r in ("prefill", "decode")):
        caps.append("nixl-libfabric")
    if (values.get("model") or {}).get("source") == "s3":  # the streamer on vllm serve, boto3 on Ray
        caps.append("s3-download" if values.get("topology") in ("ray-serve", "disaggregated") else "s3-stream")
    return caps


def test_every_server_container_checks_its_image_contract_first(case) -> None:
    values, objects = case
    topology = values.get("topology", "single-node")
    caps = _expected_caps(values)
    servers = _servers(objects)
    assert servers, "no model-server container rendered"
    (cm,) = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith("-scripts")]
    shipped = {p.name: p.read_text() for p in (CHART / "files" / "contracts").glob("*.sh")}
    shipped |= {p.name: p.read_text() for p in (CHART / "files" / "probes").glob("*.py")}
    if (values.get("staging") or {}).get("enabled"):  # the staging Job's copy script (staging-job.yaml)
        shipped |= {p.name: p.read_text() for p in (CHART / "files" / "staging").glob("*.py")}
    assert cm["data"] == shipped, "the ConfigMap ships exactly the chart's script files"
    for spec, c in servers:
        mounts = {m["name"]: m for m in c["volumeMounts"]}
        assert mounts["scripts"]["mountPath"] == SCRIPTS and mounts["scripts"]["readOnly"] is True
        (vol,) = [v for v in spec["volumes"] if v["name"] == "scripts"]
        assert vol["configMap"]["name"] == cm["metadata"]["name"]
        assert c["terminationMessagePolicy"] == "FallbackToLogsOnError"
        line = " ".join([*c.get("command", []), *c.get("args", [])])
        is_head = c["name"] == "ray-head"
        want = f"sh {SCRIPTS}/{topology}.sh" + ("" if is_head else "".join(f" {x}" for x in caps))
        assert want in line, f"{c['name']}: {want!r} not in {line!r}"
        first = c["command"][2] if topology in ("single-node", "multi-node") else c["args"][0]
        assert first.startswith(want + ("\n" if topology in ("single-node", "multi-node") else " &&")), first
        if topology in ("ray-serve", "disaggregated"):
            # KubeRay leaves a command alone under this annotation and still generates `ray start`
            assert 'exec /bin/bash -lc "$KUBERAY_GEN_RAY_START_CMD"' in c["args"][0]


def test_no_ray_in_single_and_multi_node_manifests(case) -> None:
    """single-node and multi-node run no Ray at all; the Ray topologies run KubeRay's own
    `ray start` (after the contract) and nothing else."""
    values, objects = case
    if values.get("topology", "single-node") not in ("single-node", "multi-node"):
        for _, c in _servers(objects):
            assert c["args"][0].endswith('exec /bin/bash -lc "$KUBERAY_GEN_RAY_START_CMD"'), c["args"]
        return
    for spec, c in _servers(objects):
        words = " ".join([*c.get("command", []), *map(str, c.get("args", []))])
        assert "ray start" not in words and "--distributed-executor-backend" not in words, words
        assert "ray" not in words.split(), words
    # anywhere else in the manifests (scripts shipped in ConfigMaps included), word for word:
    # the string values themselves, not a YAML dump whose line wrapping could split the words
    found = [text for text in _strings(objects) if re.search(r"\bray\s+start\b", text)]
    assert not found, found[0][:200]


def _strings(node):
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for v in node.values():
            yield from _strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from _strings(v)


def test_ray_topology_images_declare_what_their_pods_need(case) -> None:
    values, objects = case
    # the source's checks (s3-stream, s3-download) run at start but are not declared in provides
    caps = [c for c in _expected_caps(values) if not c.startswith("s3-")]
    key = ("ray", "image") if values.get("topology") in ("ray-serve", "disaggregated") else ("image",)
    declared = values
    for k in key:
        declared = declared.get(k) or {}
    assert set(caps) <= set(declared.get("provides") or []), f"{'.'.join(key)}.provides lacks {caps}"


def test_disaggregated_scenario_defaults_to_the_ray_llm_dlc() -> None:
    (path,) = [p for p in FILES if p.parent.name.endswith("-disaggregated")]
    objects = helm.render(CHART, [path], helm="helm4", namespace="llm")
    images = {c["image"] for _, c in _servers(objects)}
    assert images == {DLC}, images
