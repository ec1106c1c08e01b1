"""charts/vllm-inference staging Job (staging.*, docs/staging.md) rendered with Helm 3 and Helm 4 on
generated scenarios: targets pvc (a created claim, an existing one) and s3, the token as env or
file, with and without the servers waiting. Every object valid for every Kubernetes minor, lint
strict, Pod Security restricted; the Job runs the ConfigMap's copy of files/staging/stage_weights.py
with the settings it reads; the server pods' init container waits for the marker exactly where
vLLM loads the model from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.harness import checkov, helm, pod_security
from tests.render.case_checks import assert_valid_for_every_minor, restricted_problems
from tests.render.test_cache_render import server_pods
from tests.render.test_routing_render import CHART, FULLNAME, MULTI, NAMESPACE, RAY, RELEASE, SINGLE

pytestmark = pytest.mark.render

SCRIPT = CHART / "files" / "staging" / "stage_weights.py"
REPO = "Qwen/Qwen2.5-7B-Instruct"
CLAIM = "vllm-weights"
PVC_SERVER = {"model.source": "pvc", "model.name": f"/models/{REPO}", "model.pvc.claimName": CLAIM}
PVC_CREATED = {**PVC_SERVER, "staging.enabled": True, "staging.repo": REPO, "staging.pvc.claimName": CLAIM,
               "staging.pvc.create": True, "staging.pvc.size": "18Gi", "staging.pvc.storageClassName": "efs-sc",
               "staging.activeDeadlineSeconds": 840,
               "staging.tokenSecret.name": "hf-token"}
S3_URI = "s3://models-bucket/qwen2.5-7b"
S3 = {"model.source": "s3", "model.name": S3_URI, "staging.enabled": True, "staging.target": "s3",
      "staging.repo": REPO, "staging.s3Uri": S3_URI, "staging.scratchSize": "40Gi",
      "serviceAccount.annotations.eks\\.amazonaws\\.com/role-arn": "arn:aws:iam::123456789012:role/vllm-s3"}
CASES: dict[str, tuple[Path, dict[str, Any]]] = {
    "pvc-created-single-node": (SINGLE, PVC_CREATED),
    "pvc-existing-multi-node": (MULTI, {
        "model.source": "pvc", "model.name": "/models/llama", "model.pvc.claimName": "fsx-models",
        "staging.enabled": True, "staging.repo": "meta-llama/Llama-3.1-405B-Instruct", "staging.pvc.claimName": "fsx-models",
        "staging.pvc.path": "llama", "staging.tokenSecret.name": "hf-token", "staging.tokenSecret.mountAs": "file",
        "scheduling.zone": "us-east-1a"}),
    "s3-single-node": (SINGLE, S3),
    "pvc-created-ray-serve": (RAY, PVC_CREATED),
    "pvc-no-wait-single-node": (SINGLE, {"staging.enabled": True, "staging.repo": REPO, "staging.pvc.claimName": CLAIM,
                                          "staging.waitInServer": False}),
}


def rendered(case: str, helm_version: str = "helm4") -> list[dict[str, Any]]:
    values_file, set_values = CASES[case]
    return helm.render_case(CHART, values_file, set_values, helm_version, RELEASE, NAMESPACE)


def job(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (j,) = [o for o in objects if o["kind"] == "Job" and o["metadata"]["name"] == f"{FULLNAME}-staging"]
    return j


@pytest.mark.parametrize("case", list(CASES))
def test_every_object_valid_for_every_kubernetes_minor(case: str, helm_version: str, crd_registry) -> None:
    assert_valid_for_every_minor(rendered(case, helm_version), crd_registry)


@pytest.mark.parametrize("case", list(CASES))
def test_helm3_and_helm4_render_the_same_objects(case: str) -> None:
    assert rendered(case, "helm3") == rendered(case, "helm4")


@pytest.mark.parametrize("case", list(CASES))
def test_lint_strict(case: str, helm_version: str) -> None:
    values_file, set_values = CASES[case]
    helm.lint(CHART, [values_file], helm=helm_version, set_values=set_values)


@pytest.mark.parametrize("case", list(CASES))
def test_every_pod_passes_restricted(case: str) -> None:
    objects = rendered(case)
    pods = [what for what, _, _ in pod_security.rendered_pod_specs(objects)]
    assert any("staging" in what for what in pods), pods
    problems = restricted_problems(objects)
    assert not problems, "\n".join(problems)


def test_checkov_passes_every_case_with_reasoned_skips() -> None:
    texts = {case: helm.template_text(CHART, [f], set_values=sv, release=RELEASE, namespace=NAMESPACE)
             for case, (f, sv) in CASES.items()}
    result = checkov.scan(texts)
    assert result.resource_count > 0 and not result.parsing_errors and not result.failed_checks, (
        f"{result.summary()}\n{result.failures_text()}")
    staging_skips = [f for f in result.skipped_checks if "staging" in str(f)]
    assert staging_skips and all(f.reason and f.reason != checkov.NO_REASON for f in result.skipped_checks)


@pytest.mark.parametrize("case", list(CASES))
def test_the_job_runs_the_shipped_script_with_its_settings(case: str) -> None:
    _, sv = CASES[case]
    objects = rendered(case)
    j = job(objects)
    spec = j["spec"]
    assert spec["backoffLimit"] == 3 and spec["ttlSecondsAfterFinished"] == 86400
    assert spec["activeDeadlineSeconds"] == sv.get("staging.activeDeadlineSeconds", 7200)
    rules = spec["podFailurePolicy"]["rules"]
    assert rules[0] == {"action": "FailJob", "onExitCodes": {"containerName": "stage", "operator": "In", "values": [78]}}
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never" and "tolerations" not in pod  # no GPU: stays off the GPU pools
    assert pod["serviceAccountName"] == FULLNAME
    assert pod.get("nodeSelector", {}).get("topology.kubernetes.io/zone") == sv.get("scheduling.zone")
    (c,) = pod["containers"]
    assert c["command"] == ["python3", "/opt/vllm-eks/scripts/stage_weights.py"]
    env = {e["name"]: e for e in c["env"]}
    value = {k: e.get("value") for k, e in env.items()}
    assert value["STAGE_TARGET"] == sv.get("staging.target", "pvc") and value["STAGE_REPO"] == sv["staging.repo"]
    assert value["STAGE_REVISION"] == "main" and value["HF_HOME"].startswith("/tmp/")
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert mounts["tmp"]["mountPath"] == "/tmp" and "emptyDir" in volumes["tmp"]
    if value["STAGE_TARGET"] == "pvc":
        assert value["STAGE_DIR"] == "/staging/" + sv.get("staging.pvc.path", sv["staging.repo"])
        assert mounts["staging"]["mountPath"] == "/staging" and not mounts["staging"].get("readOnly")
        assert volumes["staging"]["persistentVolumeClaim"]["claimName"] == sv["staging.pvc.claimName"]
    else:
        assert value["STAGE_S3_URI"] == sv["staging.s3Uri"] and "staging" not in volumes
        assert volumes["tmp"]["emptyDir"]["sizeLimit"] == sv["staging.scratchSize"]
    token = sv.get("staging.tokenSecret.name")
    if not token:
        assert "HF_TOKEN" not in env and "HF_TOKEN_PATH" not in env and "hf-token" not in volumes
    elif sv.get("staging.tokenSecret.mountAs") == "file":
        assert value["HF_TOKEN_PATH"] == "/var/run/secrets/huggingface/token" and "HF_TOKEN" not in env
        assert volumes["hf-token"]["secret"]["secretName"] == token and mounts["hf-token"]["readOnly"]
    else:
        # optional, as on the servers: a missing Secret must not keep the Job of a public repo from starting
        assert env["HF_TOKEN"]["valueFrom"]["secretKeyRef"] == {"name": token, "key": "HF_TOKEN", "optional": True}
    (cm,) = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == f"{FULLNAME}-scripts"]
    assert cm["data"]["stage_weights.py"] == SCRIPT.read_text()
    assert volumes["scripts"]["configMap"]["name"] == cm["metadata"]["name"]


@pytest.mark.parametrize("case", list(CASES))
def test_the_chart_creates_the_claim_only_when_asked(case: str) -> None:
    _, sv = CASES[case]
    claims = [o for o in rendered(case) if o["kind"] == "PersistentVolumeClaim"]
    if not sv.get("staging.pvc.create"):
        assert not claims
        return
    (pvc,) = claims
    assert pvc["metadata"]["name"] == CLAIM
    assert pvc["spec"] == {"accessModes": ["ReadWriteMany"], "storageClassName": "efs-sc",
                           "resources": {"requests": {"storage": sv["staging.pvc.size"]}}}


@pytest.mark.parametrize("case", list(CASES))
def test_server_pods_wait_for_the_marker_where_vllm_loads(case: str) -> None:
    _, sv = CASES[case]
    pods = server_pods(rendered(case))
    loaders = {role: spec for role, spec in pods.items() if role != "ray-head"}  # the head loads no model
    assert loaders
    for role, spec in loaders.items():
        inits = [c for c in spec.get("initContainers", []) if c["name"] == "wait-for-staged-weights"]
        if not sv.get("staging.waitInServer", True):
            assert not inits, role
            continue
        (init,) = inits
        if sv.get("staging.target") == "s3":
            assert init["command"][:2] == ["python3", "-c"] and init["command"][3:] == [S3_URI, ".vllm-eks-staged", ".vllm-eks-staging-failed"]
        else:
            assert init["command"][:2] == ["/bin/sh", "-c"] and init["command"][3] == sv["model.name"]
            assert 'marker="$0/.vllm-eks-staged"' in init["command"][2]
            (mount,) = [m for m in init["volumeMounts"] if m["name"] == "model"]
            (server_mount,) = [m for c in spec["containers"] for m in c.get("volumeMounts", []) if m["name"] == "model"]
            assert mount["mountPath"] == server_mount["mountPath"] == "/models" and mount["readOnly"]
        assert init["securityContext"]["readOnlyRootFilesystem"] and not init["securityContext"]["allowPrivilegeEscalation"]
