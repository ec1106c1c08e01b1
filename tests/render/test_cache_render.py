"""charts/vllm-inference cache volume (cache.type emptyDir | pvc | instanceStore) on every topology,
rendered with Helm 3 and Helm 4 from the generated scenarios: every object valid for every
Kubernetes minor, lint strict, Pod Security restricted, and every model-server pod (Deployment,
LeaderWorkerSet leader and workers, Ray head and workers) mounting the one cache volume where
HOME, HF_HOME, VLLM_CACHE_ROOT, TORCHINDUCTOR_CACHE_DIR and the Triton cache point
(docs/caching.md)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.harness import KUBE_VERSIONS, helm, pod_security, validate_all
from tests.render.test_routing_render import CHART, DISAGG, FULLNAME, MULTI, NAMESPACE, RAY, RELEASE, SINGLE

pytestmark = pytest.mark.render

CACHE_ROOT = "/var/cache/vllm"
TOPOLOGIES = {"single-node": SINGLE, "multi-node": MULTI, "ray-serve": RAY, "disaggregated": DISAGG}
CACHES = {
    "emptyDir": {},
    "instanceStore": {"cache.type": "instanceStore", "cache.sizeLimit": "200Gi"},
    "pvc-created": {"cache.type": "pvc", "cache.pvc.create": True, "cache.pvc.size": "300Gi",
                    "cache.pvc.storageClassName": "efs-sc", "cache.pvc.accessMode": "ReadWriteMany"},
    "pvc-existing": {"cache.type": "pvc", "cache.pvc.claimName": "shared-cache", "cache.pvc.accessMode": "ReadWriteMany"},
}
CASES = {f"{c}-{t}": (TOPOLOGIES[t], CACHES[c]) for c in CACHES for t in TOPOLOGIES}
# The one layout a ReadWriteOnce claim serves: one single-node pod, never two at once.
CASES["pvc-rwo-single-node"] = (TOPOLOGIES["single-node"], {
    "cache.type": "pvc", "cache.pvc.create": True, "cache.pvc.size": "50Gi", "replicas": 1,
    "replicasManagedExternally": False, "strategy.type": "Recreate"})
CACHE_ENV = ("HOME", "HF_HOME", "VLLM_CACHE_ROOT", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR",
             "XDG_CACHE_HOME", "FLASHINFER_WORKSPACE_BASE")


def rendered(case: str, helm_version: str = "helm4") -> list[dict[str, Any]]:
    values_file, set_values = CASES[case]
    return helm.render_case(CHART, values_file, set_values, helm_version, RELEASE, NAMESPACE)


def server_pods(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """role -> pod spec of every model-server pod template the chart renders."""
    out: dict[str, dict[str, Any]] = {}
    for o in objects:
        if o["kind"] == "Deployment" and o["metadata"]["name"] == FULLNAME:
            out["deployment"] = o["spec"]["template"]["spec"]
        elif o["kind"] == "LeaderWorkerSet":
            t = o["spec"]["leaderWorkerTemplate"]
            out["lws-leader"], out["lws-worker"] = t["leaderTemplate"]["spec"], t["workerTemplate"]["spec"]
        elif o["kind"] == "RayService":
            cluster = o["spec"]["rayClusterConfig"]
            out["ray-head"] = cluster["headGroupSpec"]["template"]["spec"]
            for g in cluster["workerGroupSpecs"]:
                out[f"ray-worker-{g['groupName']}"] = g["template"]["spec"]
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_every_object_valid_for_every_kubernetes_minor(case: str, helm_version: str, crd_registry) -> None:
    objects = rendered(case, helm_version)
    for kube_version in KUBE_VERSIONS:
        report = validate_all(objects, crd_registry, kube_version)
        assert report.total == len(objects)


@pytest.mark.parametrize("case", list(CASES))
def test_helm3_and_helm4_render_the_same_objects(case: str) -> None:
    assert rendered(case, "helm3") == rendered(case, "helm4")


@pytest.mark.parametrize("case", [c for c in CASES if not c.startswith("emptyDir")])
def test_lint_strict(case: str, helm_version: str) -> None:
    values_file, set_values = CASES[case]
    helm.lint(CHART, [values_file], helm=helm_version, set_values=set_values)


@pytest.mark.parametrize("case", list(CASES))
def test_every_pod_passes_restricted(case: str) -> None:
    pods = pod_security.rendered_pod_specs(rendered(case))
    problems = [f"{what}: {v}" for what, spec, ann in pods for v in pod_security.restricted_violations(spec, ann)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("case", list(CASES))
def test_every_server_pod_mounts_the_cache_where_the_caches_point(case: str) -> None:
    _, set_values = CASES[case]
    kind = set_values.get("cache.type", "emptyDir")
    objects = rendered(case)
    pods = server_pods(objects)
    topology = next(t for t in TOPOLOGIES if case.endswith(t)) if not case.startswith("pvc-rwo") else "single-node"
    expected_roles = {"single-node": {"deployment"}, "multi-node": {"lws-leader", "lws-worker"}}.get(topology)
    if expected_roles:
        assert set(pods) == expected_roles, sorted(pods)
    else:
        assert "ray-head" in pods and any(r.startswith("ray-worker-") for r in pods), sorted(pods)
    claim = set_values.get("cache.pvc.claimName") or f"{FULLNAME}-cache"
    for role, spec in pods.items():
        (vol,) = [v for v in spec["volumes"] if v["name"] == "cache"]
        if kind == "pvc":
            assert vol == {"name": "cache", "persistentVolumeClaim": {"claimName": claim}}, (role, vol)
        else:
            assert "emptyDir" in vol and "persistentVolumeClaim" not in vol and "hostPath" not in vol, (role, vol)
            assert (vol["emptyDir"] or {}).get("sizeLimit") == set_values.get("cache.sizeLimit"), (role, vol)
        for c in spec["containers"]:
            mounts = [m for m in c.get("volumeMounts", []) if m["name"] == "cache"]
            if not mounts:
                continue  # sidecars that write nothing (none today mount the cache partly)
            assert [m["mountPath"] for m in mounts] == [CACHE_ROOT] and not mounts[0].get("readOnly"), (role, c["name"])
            env = {e["name"]: e.get("value") for e in c.get("env", [])}
            wrong = {k: env.get(k) for k in CACHE_ENV if not str(env.get(k, "")).startswith(CACHE_ROOT + "/")}
            assert not wrong, f"{role}/{c['name']}: not on the cache volume: {wrong}"
        servers = [c for c in spec["containers"] if any(m["name"] == "cache" for m in c.get("volumeMounts", []))]
        assert servers, f"{role}: no container mounts the cache"


@pytest.mark.parametrize("case", list(CASES))
def test_the_chart_creates_the_claim_only_when_asked(case: str) -> None:
    _, set_values = CASES[case]
    claims = [o for o in rendered(case) if o["kind"] == "PersistentVolumeClaim"]
    if not set_values.get("cache.pvc.create"):
        assert not claims
        return
    (pvc,) = claims
    assert pvc["metadata"]["name"] == f"{FULLNAME}-cache"
    assert pvc["metadata"]["namespace"] == NAMESPACE
    spec = pvc["spec"]
    assert spec["accessModes"] == [set_values.get("cache.pvc.accessMode", "ReadWriteOnce")]
    assert spec["resources"]["requests"]["storage"] == set_values["cache.pvc.size"]
    assert spec.get("storageClassName") == set_values.get("cache.pvc.storageClassName")
