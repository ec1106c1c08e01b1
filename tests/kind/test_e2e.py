"""End to end on kind (needs a container engine; skipped here, see conftest.py): the pinned CRDs,
gpu-infra and observability installed for API acceptance, vllm-inference with the GPU-less
profile (values-cpu.yaml) serving a tiny model, and a completion sent through the Service by the
chart's own `helm test` pod."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from tests.harness import chart_contract
from tests.harness.paths import CHARTS, ROOT, VALUES
from tests.harness.tools import require_tool
from vllm_eks.core import contract

pytestmark = pytest.mark.kind

PROFILE = Path(__file__).with_name("values-cpu.yaml")
NS = "vllm-e2e"
POOL = yaml.safe_load(PROFILE.read_text())["scheduling"]["pool"]


def helm(kubeconfig: str, *args: str, timeout: float = 1800) -> str:
    home = Path(tempfile.gettempdir()) / "vllm-eks-kind-helm"
    env = dict(os.environ, KUBECONFIG=kubeconfig, HELM_CONFIG_HOME=str(home / "config"),
               HELM_CACHE_HOME=str(home / "cache"), HELM_DATA_HOME=str(home / "data"))
    proc = subprocess.run([str(require_tool("helm4")), *args], capture_output=True, text=True, env=env,
                          timeout=timeout)
    assert proc.returncode == 0, f"helm {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="module")
def api(kind_kubeconfig: str) -> client.ApiClient:
    return config.new_client_from_config(config_file=kind_kubeconfig)


def test_crds_install(api: client.ApiClient) -> None:
    ext = client.ApiextensionsV1Api(api)
    crd_dir = Path(os.environ["VLLM_EKS_CRD_DIR"])
    for f in sorted(crd_dir.glob("*.yaml")):
        for doc in yaml.safe_load_all(f.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                try:
                    ext.create_custom_resource_definition(body=doc)
                except ApiException as exc:
                    if exc.status != 409:
                        raise


def test_node_offers_the_profile_pool(api: client.ApiClient) -> None:
    """Label the kind node as the pool the profile selects and advertise one nvidia.com/gpu
    (kubernetes.io docs: "Advertise Extended Resources for a Node", a status patch)."""
    core = client.CoreV1Api(api)
    node = core.list_node().items[0].metadata.name
    core.patch_node(node, {"metadata": {"labels": {chart_contract.rendered().pool_label: POOL}}})
    core.patch_node_status(node, {"status": {"capacity": {contract.GPU_RESOURCE: "1"}}})
    alloc = core.read_node(node).status.allocatable
    assert alloc.get(contract.GPU_RESOURCE) == "1"


def test_charts_install_and_serve_a_completion(api: client.ApiClient, kind_kubeconfig: str) -> None:
    values_dir = sorted(p for p in VALUES.iterdir() if (p / "gpu-infra.yaml").is_file())
    for chart, release in (("gpu-infra", "infra"), ("observability", "obs")):
        if (CHARTS / chart / "Chart.yaml").is_file() and values_dir and (values_dir[0] / f"{chart}.yaml").is_file():
            helm(kind_kubeconfig, "install", release, str(CHARTS / chart), "--namespace", NS,
                 "--create-namespace", "--values", str(values_dir[0] / f"{chart}.yaml"), "--wait", "--timeout", "5m")
    helm(kind_kubeconfig, "install", "vllm", str(ROOT / "charts/vllm-inference"), "--namespace", NS,
         "--create-namespace", "--values", str(PROFILE), "--wait", "--timeout", "25m")
    out = helm(kind_kubeconfig, "test", "vllm", "--namespace", NS, "--logs", "--timeout", "10m")
    print(out)
    assert '"choices":[{' in out
