"""charts/vllm-inference benchmark sweep (benchmark.*), rendered with Helm 3 and Helm 4: off by
default; a Job, or a `helm.sh/hook: test` Pod with benchmark.asHelmTest; every object valid for
every Kubernetes minor; its pod passes Pod Security restricted; its script runs `vllm bench serve`
with the flags of `vllm-eks bench run` (bench/runner.py) against the release's Service, with the
API key in OPENAI_API_KEY and the results to a PVC or S3."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from tests.harness import KUBE_VERSIONS, helm, pod_security, validate_all
from tests.harness.paths import CHARTS, VALUES
from vllm_eks.bench.runner import bench_args, result_name

pytestmark = pytest.mark.render

CHART = CHARTS / "vllm-inference"
NAMESPACE, RELEASE = "llm", "vllm"
NAME = "vllm-vllm-inference-benchmark"
SINGLE = VALUES / "qwen2.5-7b-g6-xlarge" / "vllm-inference.yaml"
MULTI = VALUES / "llama-3.1-405b-p5-48xlarge-lws" / "vllm-inference.yaml"
RAY = VALUES / "llama-3.1-70b-g6e-12xlarge-rayservice" / "vllm-inference.yaml"
ON = {"benchmark.enabled": True}
CASES = {
    "job-single-node": (SINGLE, ON),
    "helm-test-single-node": (SINGLE, {**ON, "benchmark.asHelmTest": True}),
    "job-api-key-s3": (SINGLE, {**ON, "apiKey.existingSecret": "vllm-api-key",
                                "benchmark.output.s3Uri": "s3://bench-results/sweeps/"}),
    "job-pvc-dataset": (SINGLE, {**ON, "benchmark.output.claimName": "bench-results",
                                 "benchmark.requestShape.dataset": {"name": "sharegpt", "claimName": "datasets",
                                                                    "path": "/datasets/sharegpt.json"}}),
    "job-multi-node": (MULTI, ON),
    "helm-test-ray-serve": (RAY, {**ON, "benchmark.asHelmTest": True}),
    "job-through-the-route": (SINGLE, {**ON, "benchmark.baseUrl": "https://llm.example.com/"}),
}


def rendered(case: str, helm_version: str = "helm4") -> list[dict[str, Any]]:
    values_file, set_values = CASES[case]
    return helm.render_case(CHART, values_file, set_values, helm_version, RELEASE, NAMESPACE)


def benchmark_object(objects: list[dict[str, Any]]) -> dict[str, Any]:
    found = [o for o in objects if o["metadata"]["name"] == NAME]
    assert len(found) == 1, [o["kind"] for o in found]
    return found[0]


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    return obj["spec"] if obj["kind"] == "Pod" else obj["spec"]["template"]["spec"]


def container(obj: dict[str, Any]) -> dict[str, Any]:
    (c,) = pod_spec(obj)["containers"]
    return c


def env(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in container(obj)["env"]}


def bench_line(script: str) -> list[str]:
    """The `vllm bench serve ...` words of the script (continuation lines joined)."""
    joined = script.replace("\\\n", " ")
    line = next(ln for ln in joined.splitlines() if ln.strip().startswith("vllm bench serve"))
    return shlex.split(line)


def test_off_by_default() -> None:
    objects = helm.render_case(CHART, SINGLE, {}, "helm4", RELEASE, NAMESPACE)
    assert not [o for o in objects if "benchmark" in o["metadata"]["name"]]


@pytest.mark.parametrize("case", list(CASES))
def test_every_object_valid_for_every_kubernetes_minor(case: str, helm_version: str, crd_registry) -> None:
    objects = rendered(case, helm_version)
    obj = benchmark_object(objects)
    as_test = CASES[case][1].get("benchmark.asHelmTest", False)
    assert obj["kind"] == ("Pod" if as_test else "Job")
    assert (obj["metadata"].get("annotations", {}).get("helm.sh/hook") == "test") == as_test
    for kube_version in KUBE_VERSIONS:
        report = validate_all(objects, crd_registry, kube_version)
        assert report.total == len(objects)


@pytest.mark.parametrize("case", list(CASES))
def test_helm3_and_helm4_render_the_same_objects(case: str) -> None:
    assert rendered(case, "helm3") == rendered(case, "helm4")


@pytest.mark.parametrize("case", ["job-api-key-s3", "helm-test-single-node"])
def test_lint_strict(case: str, helm_version: str) -> None:
    values_file, set_values = CASES[case]
    helm.lint(CHART, [values_file], helm=helm_version, set_values=set_values)


@pytest.mark.parametrize("case", list(CASES))
def test_pod_passes_restricted_with_a_read_only_root(case: str) -> None:
    obj = benchmark_object(rendered(case))
    pods = [p for p in pod_security.rendered_pod_specs([obj])]
    problems = [f"{what}: {v}" for what, spec, ann in pods for v in pod_security.restricted_violations(spec, ann)]
    assert pods and not problems, problems
    c = container(obj)
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in pod_spec(obj)["volumes"]}
    for var in ("HOME", "HF_HOME", "XDG_CACHE_HOME", "RESULTS_DIR", "TMPDIR"):
        path = env(obj)[var]["value"]
        mount = next(m for m in mounts if path == m or path.startswith(m + "/"))
        assert "emptyDir" in volumes[mounts[mount]], (var, path)
    assert pod_spec(obj)["restartPolicy"] == "Never"
    assert pod_spec(obj)["activeDeadlineSeconds"] == 3600


# (the routed case targets benchmark.baseUrl: test_the_sweep_can_measure_through_the_users_route)
@pytest.mark.parametrize("case", [c for c in CASES if c != "job-through-the-route"])
def test_script_runs_the_sweep_of_bench_run_against_the_service(case: str) -> None:
    objects = rendered(case)
    obj = benchmark_object(objects)
    e = env(obj)
    services = {o["metadata"]["name"] for o in objects if o["kind"] == "Service"}
    # KubeRay creates <RayService>-serve-svc for a RayService's Serve endpoint
    services |= {o["metadata"]["name"] + "-serve-svc" for o in objects if o["kind"] == "RayService"}
    url = e["BASE_URL"]["value"]
    host = re.match(r"http://([a-z0-9-]+)\.llm\.svc:\d+$", url)
    assert host and host.group(1) in services, (url, services)
    test_pod = next(o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"].endswith("-test"))
    test_url = next(x["value"] for x in test_pod["spec"]["containers"][0]["env"] if x["name"] == "BASE_URL")
    assert url == test_url, "the benchmark and the helm test call the same Service URL"
    assert e["CONCURRENCIES"]["value"] == "1 2 4 8 16 32"
    script = container(obj)["command"][2]
    words = bench_line(script)
    assert words[:3] == ["vllm", "bench", "serve"]
    # the same flags as `vllm-eks bench run` for one level, with the shell's variables
    expected = bench_args("$BASE_URL", "$SERVED_MODEL", 4, Path("$RESULTS_DIR"), 256, 128, 20, None, "custom",
                          "$TOKENIZER")
    flags = {w for w in words if w.startswith("--")}
    want = {w for w in expected if w.startswith("--")} - {"--dataset-name", "--random-input-len", "--random-output-len"}
    assert want <= flags, want - flags
    assert "$@" in words  # the dataset arguments, set once before the loop
    assert "--random-input-len \"$INPUT_LEN\"" in script and "--dataset-path \"$DATASET_PATH\"" in script
    assert "concurrency-%04d.json" in script and result_name(4) == "concurrency-0004.json"
    for metric in ("--percentile-metrics", "--metric-percentiles"):
        assert words[words.index(metric) + 1] == expected[expected.index(metric) + 1]
    assert "printf 'VLLM_EKS_BENCH_RESULT %s\\n'" in script


def test_the_sweep_can_measure_through_the_users_route() -> None:
    """benchmark.baseUrl sends the sweep where users send requests (a Gateway, an ALB), and every
    result file says what it measured through; without it, the Service."""
    routed = benchmark_object(rendered("job-through-the-route"))
    e = env(routed)
    assert e["BASE_URL"]["value"] == "https://llm.example.com" and e["BENCH_TARGET"]["value"] == "route"
    words = bench_line(container(routed)["command"][2])
    at = words.index("--metadata")
    assert words[at + 1:at + 3] == ["vllm_eks_target=$BENCH_TARGET", "vllm_eks_base_url=$BASE_URL"]
    assert env(benchmark_object(rendered("job-single-node")))["BENCH_TARGET"]["value"] == "service"


def test_a_base_url_that_is_not_one_is_refused() -> None:
    with pytest.raises(helm.HelmError, match="benchmark.baseUrl"):
        helm.render_case(CHART, SINGLE, {**ON, "benchmark.baseUrl": "llm.example.com"}, "helm4", RELEASE, NAMESPACE)


def test_api_key_goes_in_openai_api_key_and_s3_needs_boto3() -> None:
    obj = benchmark_object(rendered("job-api-key-s3"))
    e = env(obj)
    assert e["OPENAI_API_KEY"]["valueFrom"]["secretKeyRef"] == {"name": "vllm-api-key", "key": "api-key"}
    assert e["S3_URI"]["value"] == "s3://bench-results/sweeps"
    script = container(obj)["command"][2]
    assert script.splitlines()[0].startswith("python3 -c 'import boto3'"), "boto3 is checked first"
    assert "upload_file" in script and "OUTPUT_DIR" not in e
    assert "OPENAI_API_KEY" not in env(benchmark_object(rendered("job-single-node")))


def test_pvc_output_and_dataset_claim() -> None:
    obj = benchmark_object(rendered("job-pvc-dataset"))
    c = container(obj)
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in pod_spec(obj)["volumes"]}
    assert volumes["results"]["persistentVolumeClaim"] == {"claimName": "bench-results"}
    assert mounts["results"]["mountPath"] == env(obj)["OUTPUT_DIR"]["value"]
    assert volumes["dataset"]["persistentVolumeClaim"] == {"claimName": "datasets", "readOnly": True}
    assert mounts["dataset"] == {"name": "dataset", "mountPath": "/datasets", "readOnly": True}
    assert env(obj)["DATASET_NAME"]["value"] == "sharegpt"
    assert "cp \"$RESULTS_DIR/$f\" \"$OUTPUT_DIR/$run/\"" in c["command"][2]
    assert "boto3" not in c["command"][2]


def test_image_defaults_to_the_server_image() -> None:
    objects = rendered("job-single-node")
    server = next(o for o in objects if o["kind"] == "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert container(benchmark_object(objects))["image"] == server["image"]
