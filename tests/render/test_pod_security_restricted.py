"""Pod Security "restricted" on every pod the charts create, by default.

Every pod spec rendered from every `values/` scenario and every chart `ci/` file (the four
vllm-inference topologies: Deployment, LeaderWorkerSet leader and workers, RayService head and
worker groups with the init container and autoscaler KubeRay adds; the helm test pods) must pass
the restricted profile's checks (tests/harness/pod_security.py). charts/gpu-infra is left out on
purpose: its DaemonSets need host access and run in a namespace labelled privileged
(docs/gpu-infra.md). The one opt-out, securityContext.allowRoot, is shown to fail it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import helm, pod_security
from tests.harness.paths import CHARTS, VALUES

pytestmark = pytest.mark.render

VLLM = CHARTS / "vllm-inference"
OBSERVABILITY = CHARTS / "observability"
CASES = ([(VLLM, f) for f in sorted((VLLM / "ci").glob("*-values.yaml"))]
         + [(VLLM, f) for f in sorted(VALUES.glob("*/vllm-inference.yaml"))]
         + [(OBSERVABILITY, f) for f in sorted((OBSERVABILITY / "ci").glob("*-values.yaml"))]
         + [(OBSERVABILITY, f) for f in sorted(VALUES.glob("*/observability.yaml"))])
TOPOLOGIES = {"single-node", "multi-node", "ray-serve", "disaggregated"}


def _id(case: tuple[Path, Path]) -> str:
    chart, f = case
    return f"{chart.name}:{f.parent.name if f.parent.name != 'ci' else 'ci'}/{f.stem}"


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_every_pod_passes_restricted(case: tuple[Path, Path]) -> None:
    chart, values_file = case
    objects = helm.render(chart, [values_file], namespace="llm")
    pods = pod_security.rendered_pod_specs(objects)
    if chart == VLLM:
        assert pods, f"{values_file}: no pod rendered"
    problems = [f"{what}: {v}" for what, spec, ann in pods
                for v in pod_security.restricted_violations(spec, ann)]
    assert not problems, f"{values_file}:\n" + "\n".join(problems)


def test_cases_cover_every_topology() -> None:
    import yaml
    seen = {(yaml.safe_load(f.read_text()) or {}).get("topology", "single-node") for c, f in CASES if c == VLLM}
    assert seen == TOPOLOGIES


def _paths_off_volumes(container: dict) -> list[str]:
    """Env paths of the model-server/Ray containers that are not under one of its volume mounts."""
    mounts = [m["mountPath"].rstrip("/") for m in container.get("volumeMounts") or [] if not m.get("readOnly")]
    bad = []
    for e in container.get("env") or []:
        if e["name"] in WRITABLE_ENV:
            path = str(e.get("value", ""))
            if not any(path == m or path.startswith(m + "/") for m in mounts):
                bad.append(f"{e['name']}={path}")
    return bad


# Every variable naming a place the server, its libraries or Ray write (docs/topologies.md, "Security").
WRITABLE_ENV = ("HOME", "HF_HOME", "VLLM_CACHE_ROOT", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "TRITON_HOME",
                "TRITON_CACHE_DIR", "FLASHINFER_WORKSPACE_BASE", "TMPDIR", "TORCHINDUCTOR_CACHE_DIR")


@pytest.mark.parametrize("values_file", [f for c, f in CASES if c == VLLM], ids=lambda f: f"{f.parent.name}/{f.stem}")
def test_every_write_path_is_a_writable_volume(values_file: Path) -> None:
    objects = helm.render(VLLM, [values_file], namespace="llm")
    servers = [(what, c) for what, spec, _ in pod_security.rendered_pod_specs(objects) if not what.startswith("Pod/")
               for c in spec.get("containers", []) if c["name"] != "autoscaler"]
    assert servers
    for what, c in servers:
        assert c["securityContext"]["readOnlyRootFilesystem"] is True, f"{what}/{c['name']}"
        if c["name"] == "epp":  # the endpoint picker is a Go binary: no vLLM, Python or compiler caches
            continue
        env = {e["name"] for e in c.get("env") or []}
        assert set(WRITABLE_ENV) <= env, f"{what}/{c['name']}: missing {sorted(set(WRITABLE_ENV) - env)}"
        assert c["securityContext"]["readOnlyRootFilesystem"] is True, f"{what}/{c['name']}"
        assert not _paths_off_volumes(c), f"{what}/{c['name']}: {_paths_off_volumes(c)} not on a writable volume"
        if what.startswith("RayService/"):
            assert {"name": "RAY_TMPDIR", "value": "/tmp"} in c["env"], f"{what}: Ray's session dir"


def test_defaults_run_as_the_documented_non_root_ids() -> None:
    objects = helm.render(VLLM, [], namespace="llm")
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    sc = deployment["spec"]["template"]["spec"]["securityContext"]
    assert sc == {"seccompProfile": {"type": "RuntimeDefault"}, "runAsNonRoot": True,
                  "runAsUser": 10001, "runAsGroup": 10001, "fsGroup": 10001}


@pytest.mark.parametrize("topology_file", ["01-defaults-values.yaml", "07-multi-node-lws-values.yaml",
                                           "08-ray-serve-values.yaml", "09-disaggregated-values.yaml"])
def test_allow_root_opts_out_and_fails_restricted(topology_file: str, tmp_path: Path) -> None:
    extra = tmp_path / "root.yaml"
    extra.write_text("securityContext:\n  allowRoot: true\n")
    objects = helm.render(VLLM, [VLLM / "ci" / topology_file, extra], namespace="llm")
    servers = [(what, spec) for what, spec, _ in pod_security.rendered_pod_specs(objects) if not what.startswith("Pod/")]
    assert servers
    for what, spec in servers:
        assert not {"runAsNonRoot", "runAsUser", "runAsGroup", "fsGroup"} & set(spec["securityContext"]), what
        assert any(v.startswith("Running as Non-root:") for v in pod_security.restricted_violations(spec)), what
