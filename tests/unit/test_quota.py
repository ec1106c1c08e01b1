"""EC2 vCPU quota pre-flight (generator/vllm_eks/planning/quota.py): the bucket of each instance family,
the vCPUs every committed scenario needs, and --quota on plan, values and check-fit."""

from __future__ import annotations

import csv
import json
import shutil

import pytest
import yaml

from tests.harness.paths import CHARTS, GENERATOR_PACKAGE, VALUES
from tests.unit.cli_result import one_line_error
from vllm_eks.planning import quota
from vllm_eks.spec.plan import Plan


def _vcpus() -> dict[str, int]:
    with open(GENERATOR_PACKAGE / "catalog" / "data" / "instances.csv") as f:
        return {row["instance"]: int(row["vcpu"]) for row in csv.DictReader(f)}


# Known answers, by hand from instances.csv (vCPUs per node) and each scenario's shape:
# (class, vCPUs per node, nodes at the minimum, at the maximum, at the upgrade peak, NodePool limit).
# - one GPU per replica on a one-GPU node: 1 node at the minimum; KEDA maximum max(1 + 3, 2 x 1) = 4
#   replicas = 4 nodes; maxSurge 0, so the rolling-update peak is the maximum; the NodePool limit
#   adds one replica group (5 nodes).
# - TP=8 on p5.48xlarge: the same, 192 vCPUs a node.
# - gpt-oss-120b: 8 replicas of 1 GPU share one 8-GPU p5.48xlarge; maximum 16 replicas = 2 nodes;
#   limit 24 GPUs = 3 nodes.
# - LeaderWorkerSet TP=8 x PP=2: a replica is 2 nodes; maximum 4 replicas = 8 nodes; limit 10 nodes.
# - RayService on g6e.12xlarge (TP=4, 4 GPUs): Serve 1..2 copies = 1..2 nodes; a NewCluster upgrade
#   starts a second cluster with min_replicas 1 copy = 1 node beside the 2: 3 nodes.
# - disaggregated on g6.8xlarge (seed 003/004: two g6.8xlarge need 64 vCPUs of the G quota): prefill
#   1 + decode 1 always run = 2 nodes = 64 vCPUs; the upgrade's second cluster starts both = 4 nodes.
EXPECTED = {
    "llama-3.1-8b-g6e-xlarge": ("G", "g6e.xlarge", 1, 4, 4, 5),
    "qwen2.5-7b-g6-xlarge": ("G", "g6.xlarge", 1, 4, 4, 5),
    "llama-3.1-70b-p5-48xlarge": ("P", "p5.48xlarge", 1, 4, 4, 5),
    "llama-3.3-70b-fp8-p5-48xlarge": ("P", "p5.48xlarge", 1, 4, 4, 5),
    "gpt-oss-120b-p5-48xlarge": ("P", "p5.48xlarge", 1, 2, 2, 3),
    "llama-3.1-405b-p5-48xlarge-lws": ("P", "p5.48xlarge", 2, 8, 8, 10),
    "deepseek-v3-p5-48xlarge-lws": ("P", "p5.48xlarge", 2, 8, 8, 10),
    "llama-3.1-70b-g6e-12xlarge-rayservice": ("G", "g6e.12xlarge", 1, 2, 3, 3),
    "qwen3-8b-g6-8xlarge-disaggregated": ("G", "g6.8xlarge", 2, 2, 4, 4),
}


def test_every_scenario_has_known_answers():
    assert set(EXPECTED) == {p.parent.name for p in VALUES.glob("*/plan.json")}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_scenario_quota_figures(name):
    cls, instance, nodes_min, nodes_max, nodes_peak, nodes_limit = EXPECTED[name]
    vcpu = _vcpus()[instance]
    q = Plan.from_summary(json.loads((VALUES / name / "plan.json").read_text())).quota
    assert q is not None
    assert (q.quota_instance_class, q.quota_vcpus_per_node) == (cls, vcpu)
    assert (q.quota_vcpus_min, q.quota_vcpus_max, q.quota_vcpus_upgrade_peak, q.quota_vcpus_pool_limit) == (
        nodes_min * vcpu, nodes_max * vcpu, nodes_peak * vcpu, nodes_limit * vcpu)
    assert (q.quota_nodes_min, q.quota_nodes_max, q.quota_nodes_upgrade_peak, q.quota_nodes_pool_limit) == (
        nodes_min, nodes_max, nodes_peak, nodes_limit)
    assert q.quota_on_demand_bucket == quota.BUCKETS[cls][0]
    readme = (VALUES / name / "README.md").read_text()
    assert "## EC2 vCPU quota" in readme
    assert f"| {quota.BUCKETS[cls][0]} | {nodes_min * vcpu} vCPUs ({nodes_min} nodes) | {nodes_max * vcpu} vCPUs" in readme
    assert f"| {quota.BUCKETS[cls][1]} |" in readme


def test_seed_two_g6_8xlarge_need_64_vcpus_of_g():
    q = Plan.from_summary(json.loads((VALUES / "qwen3-8b-g6-8xlarge-disaggregated" / "plan.json").read_text())).quota
    assert q.quota_on_demand_bucket == "Running On-Demand G and VT instances"
    assert q.quota_vcpus_min == 64 == 2 * 32


@pytest.mark.parametrize("instance, cls", [
    ("p4d.24xlarge", "P"), ("p4de.24xlarge", "P"), ("p5.48xlarge", "P"), ("p5e.48xlarge", "P"),
    ("p5en.48xlarge", "P"), ("p6-b200.48xlarge", "P"), ("g5.xlarge", "G"), ("g6.8xlarge", "G"),
    ("g6e.48xlarge", "G"), ("gr6.4xlarge", "G"), ("vt1.3xlarge", "G"), ("inf2.48xlarge", "Inf"),
    ("trn1.32xlarge", "Trn"), ("dl1.24xlarge", "DL"), ("f1.2xlarge", "F"), ("x2idn.32xlarge", "X"),
    ("m7i.xlarge", "Standard"), ("c7i.xlarge", "Standard"), ("i4i.large", "Standard"), ("foo.large", None),
])
def test_instance_class(instance, cls):
    assert quota.instance_class(instance) == cls


def test_every_catalog_instance_is_p_or_g():
    from vllm_eks.catalog.instances import instance_catalog
    assert {quota.instance_class(name) for name in instance_catalog()} == {"P", "G"}


def test_parse_quotas():
    assert quota.parse_quotas(["G=64", "spot-p=192", "on-demand-P=0", "inf=8"]) == {
        "G": 64, "spot-P": 192, "P": 0, "Inf": 8}
    assert quota.bucket_name("spot-G") == "All G and VT Spot Instance Requests"


def test_chart_rollout_surge_matches():
    """The rolling-update peak assumes the chart's maxSurge default, which the values model keeps."""
    from vllm_eks.values.vllm_inference.pod import RollingUpdate
    chart = yaml.safe_load((CHARTS / "vllm-inference" / "values.yaml").read_text())
    assert chart["strategy"]["rollingUpdate"]["maxSurge"] == quota.ROLLOUT_MAX_SURGE
    assert RollingUpdate().max_surge == quota.ROLLOUT_MAX_SURGE


DISAGG = ["--model", "qwen3-8b", "--instance", "g6.8xlarge", "--topology", "disaggregated", "--max-model-len", "4096"]


def _one_line(r) -> str:
    return one_line_error(r, "--quota")


def test_plan_quota_shortfall_at_upgrade_peak(cli):
    line = _one_line(cli("plan", *DISAGG, "--quota", "G=64"))
    assert "Running On-Demand G and VT instances" in line and "128" in line and "64" in line and "upgrade peak" in line


def test_plan_spot_quota_shortfall_at_maximum(cli):
    line = _one_line(cli("plan", *DISAGG, "--quota", "spot-G=32"))
    assert "All G and VT Spot Instance Requests" in line and "needs 64 vCPUs at the autoscaling maximum" in line


def test_plan_quota_enough_and_other_class_ignored(cli):
    r = cli("plan", *DISAGG, "--quota", "G=128", "--quota", "P=0")
    assert r.exit_code == 0, r.stderr
    assert "EC2 vCPU quota" in r.stdout


@pytest.mark.parametrize("value, says", [("G", "BUCKET=VCPUS"), ("H100=8", "BUCKET=VCPUS"),
                                         ("G=-1", "whole number"), ("G=lots", "whole number")])
def test_bad_quota_values(cli, value, says):
    assert says in _one_line(cli("plan", *DISAGG, "--quota", value))


def test_values_quota_shortfall_writes_nothing(cli, tmp_path):
    out = tmp_path / "out"
    line = _one_line(cli("values", "--model", "llama-3.1-8b-instruct", "--instance", "g6e.xlarge",
                         "--quota", "G=12", "--out", str(out)))
    assert "needs 16 vCPUs at the autoscaling maximum" in line and "quota is 12" in line
    assert not out.exists()


def test_values_checks_only_the_pools_capacity_types(cli, tmp_path):
    args = ["values", "--model", "llama-3.1-8b-instruct", "--instance", "g6e.xlarge", "--out", str(tmp_path / "o")]
    assert cli(*args, "--quota", "spot-G=0").exit_code == 0
    assert "All G and VT Spot" in _one_line(cli(*args, "--capacity-type", "spot", "--quota", "spot-G=0"))


def test_check_fit_prints_and_checks_quota(cli, tmp_path, monkeypatch):
    from vllm_eks.check import scheduling as fit
    monkeypatch.setattr(fit, "check_fit", lambda *a, **k: [])
    folder = VALUES / "qwen3-8b-g6-8xlarge-disaggregated"
    r = cli("check-fit", str(folder))
    assert r.exit_code == 0, r.stderr
    assert "EC2 vCPU quota, G bucket: 64 / 64 / 128 vCPUs" in r.stdout
    assert "Running On-Demand G and VT instances" in r.stdout
    line = _one_line(cli("check-fit", str(folder), "--quota", "G=100"))
    assert "needs 128 vCPUs at the upgrade peak" in line and "quota is 100" in line
    assert cli("check-fit", str(folder), "--quota", "G=128").exit_code == 0


def test_check_fit_old_plan_json_without_quota(cli, tmp_path, monkeypatch):
    from vllm_eks.check import scheduling as fit
    from vllm_eks.spec.plan import QuotaPlan
    monkeypatch.setattr(fit, "check_fit", lambda *a, **k: [])
    folder = tmp_path / "old"
    shutil.copytree(VALUES / "llama-3.1-8b-g6e-xlarge", folder)
    summary = json.loads((folder / "plan.json").read_text())
    for k in QuotaPlan.model_fields:
        summary.pop(k, None)
    (folder / "plan.json").write_text(json.dumps(summary))
    r = cli("check-fit", str(folder))
    assert r.exit_code == 0 and "quota" not in r.stdout, r.stdout
    assert "no quota figures" in _one_line(cli("check-fit", str(folder), "--quota", "G=4"))
