"""Hardware outside the catalog without AWS: an EC2 DescribeInstanceTypes entry turned into
Hardware (allocatable by Karpenter's formula, GPU memory from the catalog's facts or derived),
a Price List entry turned into a price, the refusals that need no AWS call, and custom hardware
sized from --vcpus/--memory-gib. The calls to EC2 and Pricing themselves are in tests/aws."""

from __future__ import annotations

import json
import sys

import pytest

from tests.aws.pricing_standin import product
from vllm_eks.catalog import ec2 as ec2
from vllm_eks.catalog import node_allocatable
from vllm_eks.catalog.instances import instance_catalog
from vllm_eks.core.errors import UnknownInstanceError
from vllm_eks.core.units import MIB

NO_WAY_OUT = ("--gpu-memory-mib", "--gpus-per-node", "--hardware-name", "--vcpus", "--memory-gib", "--price-per-hour")


def info(name="x9.2xlarge", vcpus=8, mib=65536, gpu="L40S", maker="NVIDIA", count=1, gpu_mib=45776,
         enis=4, ipv4=15, efa=None, cards=((0, 4, 5.0),), nvme=450, **extra) -> dict:
    """An InstanceTypeInfo in DescribeInstanceTypes' shape, with the fields the lookup reads."""
    net = {"DefaultNetworkCardIndex": 0, "MaximumNetworkInterfaces": enis, "Ipv4AddressesPerInterface": ipv4,
           "EfaSupported": efa is not None, "NetworkPerformance": "Up to 20 Gigabit",
           "NetworkCards": [{"NetworkCardIndex": i, "MaximumNetworkInterfaces": n, "BaselineBandwidthInGbps": g}
                            for i, n, g in cards]}
    if efa is not None:
        net["EfaInfo"] = {"MaximumEfaInterfaces": efa}
    out = {"InstanceType": name, "VCpuInfo": {"DefaultVCpus": vcpus}, "MemoryInfo": {"SizeInMiB": mib},
           "NetworkInfo": net, "InstanceStorageInfo": {"TotalSizeInGB": nvme} if nvme else None}
    if gpu:
        out["GpuInfo"] = {"Gpus": [{"Name": gpu, "Manufacturer": maker, "Count": count,
                                    "MemoryInfo": {"SizeInMiB": gpu_mib}}]}
    return {**out, **extra}


def test_shape_of_an_l40s_type_uses_the_catalog_gpu_and_karpenters_allocatable():
    hw = ec2.hardware_from_shape(ec2.shape_from_ec2(info()), "us-east-1", 2.5, "test price")
    # 8 vCPUs: 8000m - (60 + 10 + 2 x 5 + 4 x 2.5)m kube-reserved
    assert hw.alloc_cpu_millicores == 7910
    # 4 ENIs x (15 - 1) + 2 pods; 65536 MiB - ceil(7.5 %) - (11 x 58 + 255) - 100
    assert hw.max_pods == 58
    assert hw.alloc_memory_bytes == (65536 - 4916 - (11 * 58 + 255) - 100) * MIB
    assert (hw.vcpu, hw.memory_mib, hw.gpu, hw.gpus_per_node) == (8, 65536, "l40s", 1)
    g6e = instance_catalog()["g6e.xlarge"]
    assert hw.gpu_memory_bytes == g6e.gpu_memory_bytes and hw.compute_capability == g6e.compute_capability
    assert hw.bf16_tflops == g6e.bf16_tflops and "catalog" in hw.gpu_memory_source
    assert (hw.network_mbps, hw.local_nvme_gb, hw.efa_max, hw.in_catalog) == (5000, 450, 0, False)
    assert hw.shape_source.startswith("EC2 DescribeInstanceTypes in us-east-1: 8 vCPUs, 65536 MiB")
    assert hw.usd_per_hour == 2.5 and hw.price_source == "test price"


def test_max_pods_comes_from_the_default_network_card():
    # p5.48xlarge's layout: 32 cards of 2 ENIs each, 64 in all; Karpenter counts card 0's
    shape = ec2.shape_from_ec2(info(vcpus=192, mib=2097152, gpu="H100", count=8, gpu_mib=81920, enis=64, ipv4=50,
                                    efa=32, cards=[(i, 2, 100.0) for i in range(32)]))
    assert (shape.max_network_interfaces, shape.efa_max, shape.network_mbps) == (2, 32, 3_200_000)
    hw = ec2.hardware_from_shape(shape, "us-east-1", 1.0, "p")
    catalog = instance_catalog()["p5.48xlarge"]
    assert (hw.max_pods, hw.alloc_cpu_millicores, hw.alloc_memory_bytes) == (
        catalog.max_pods, catalog.alloc_cpu_millicores, catalog.alloc_memory_bytes)
    assert hw.gpu_memory_bytes == catalog.gpu_memory_bytes and hw.interconnect == catalog.interconnect


def test_max_pods_flag_overrides_the_eni_limit():
    hw = ec2.hardware_from_shape(ec2.shape_from_ec2(info()), "us-east-1", 1.0, "p", max_pods=110)
    assert hw.max_pods == 110 and "--max-pods 110" in hw.shape_source
    assert hw.alloc_memory_bytes == node_allocatable.allocatable(8, 65536, 4, 15, 110).memory_mib * MIB


def test_gpu_the_catalog_does_not_know_is_derived_and_says_so():
    hw = ec2.hardware_from_shape(ec2.shape_from_ec2(info(gpu="RTX PRO 6000", gpu_mib=97887)), "us-west-2", 1.0, "p")
    assert hw.gpu == "rtx-pro-6000" and hw.compute_capability is None and hw.bf16_tflops is None
    gap = ec2.ec2_over_smi_mib()
    assert gap == 16384 - 15360  # T4: EC2's figure exceeds nvidia-smi's the most
    assert hw.gpu_memory_mib_nvidia_smi == 97887 - gap
    assert hw.gpu_memory_bytes < (97887 - gap) * MIB
    assert "derived" in hw.gpu_memory_source and "not in the catalog" in hw.shape_source
    # same GPU name as the catalog, another memory size: no match either
    assert not ec2.gpu_memory("a100", 12345)[3]


@pytest.mark.parametrize("entry, words", [
    (info(gpu="Radeon Pro V520", maker="AMD"), "Radeon Pro V520 by AMD, not NVIDIA"),
    (info(gpu="Gaudi HL-205", maker="Habana"), "by Habana, not NVIDIA"),
    (info(gpu=None, NeuronInfo={"NeuronDevices": [{"Name": "Trainium2", "Count": 16}]}), "16 x Trainium2 (AWS Neuron)"),
    (info(gpu=None, InferenceAcceleratorInfo={"Accelerators": [{"Name": "Inferentia", "Count": 1}]}), "Inferentia"),
    (info(gpu=None), "EC2 reports no GPUs"),
])
def test_types_without_nvidia_gpus_are_refused_in_one_line(entry, words):
    with pytest.raises(UnknownInstanceError) as e:
        ec2.shape_from_ec2(entry)
    assert words in str(e.value) and "\n" not in str(e.value) and "NVIDIA" in str(e.value)


def test_price_from_a_price_list():
    listed = [json.dumps(product("x9.2xlarge", "US East (N. Virginia)", 2.24208, date="2026-11-01T00:00:00Z"))]
    assert ec2.price_from_products(listed) == (2.24208, "2026-11-01")
    assert ec2.price_from_products([]) is None
    filters = {f["Field"]: f["Value"] for f in ec2.pricing_filters("x9.2xlarge", "EU (Ireland)")}
    assert filters == {"instanceType": "x9.2xlarge", "location": "EU (Ireland)", "operatingSystem": "Linux",
                       "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used"}
    assert ec2.LOCATIONS["us-east-1"] == "US East (N. Virginia)"


def test_without_boto3_the_refusal_names_every_flag(cli, monkeypatch):
    monkeypatch.setitem(sys.modules, "boto3", None)  # as if not installed
    r = cli("plan", "--model", "llama-3.1-8b-instruct", "--instance", "g8.2xlarge")  # a family the catalog lacks
    assert r.exit_code == 1
    line = r.stderr.strip()
    assert "\n" not in line and "pip install 'vllm-eks[aws]'" in line
    assert all(flag in line for flag in NO_WAY_OUT), line


def test_a_string_that_is_no_instance_type_is_refused_before_any_aws_call(cli):
    r = cli("plan", "--model", "llama-3.1-8b-instruct", "--instance", "not a type")
    assert r.exit_code == 1 and "not an EC2 instance type" in r.stderr and "catalog instances" in r.stderr


CUSTOM = ["--model", "llama-3.1-8b-instruct", "--gpu-memory-mib", "46068", "--gpus-per-node", "1",
          "--hardware-name", "g6e.2xlarge"]


def test_custom_hardware_with_vcpus_and_memory_is_derived(plan_json, cli):
    p = plan_json(*CUSTOM, "--vcpus", "8", "--memory-gib", "64", "--price-per-hour", "2.24")
    alloc = node_allocatable.allocatable(8, 65536, 0, 0, ec2.KUBELET_DEFAULT_MAX_PODS)
    assert p["cpu_request_millicores"] == (alloc.cpu_millicores - 2000) // 10 * 10
    assert p["memory_request_bytes"] == (alloc.memory_mib * MIB - 4 * 1024**3) // MIB * MIB
    assert p["quota_vcpus_per_node"] == 8 and p["quota_vcpus_max"] == 8 * p["quota_nodes_max"]
    assert p["cost_per_hour_usd"] == 2.24
    text = cli("explain", *CUSTOM, "--vcpus", "8", "--memory-gib", "64", "--max-pods", "58").stdout
    assert "--vcpus 8 and --memory-gib 64 (65536 MiB); max pods 58: --max-pods" in text
    assert "node_allocatable = 7910m CPU" in text


def test_custom_hardware_without_vcpus_says_which_flags_would_make_it_exact(cli):
    text = cli("explain", *CUSTOM).stdout
    assert "node_allocatable = unknown" in text and "give --vcpus and --memory-gib" in text
    assert "vCPUs unknown, give --vcpus" in text
    assert "unknown price (give --price-per-hour)" in cli("plan", *CUSTOM).stdout


@pytest.mark.parametrize("extra, words", [
    (["--vcpus", "8"], "--vcpus needs --memory-gib too"),
    (["--memory-gib", "64"], "--memory-gib needs --vcpus too"),
    (["--max-pods", "50"], "--max-pods needs --vcpus and --memory-gib"),
    (["--region", "us-east-1"], "--region: only with an --instance read from EC2"),
    (["--vcpus", "1", "--memory-gib", "1"], "--memory-gib 1: leaves no allocatable memory"),
])
def test_custom_hardware_flag_refusals(cli, extra, words):
    r = cli("plan", *CUSTOM, *extra)
    assert r.exit_code == 1 and words in r.stderr and r.stderr.count("\n") == 1, r.stderr


@pytest.mark.parametrize("extra, words", [
    (["--region", "eu-west-1"], "--region: only for hardware outside the catalog"),
    (["--max-pods", "50"], "--max-pods: only for hardware outside the catalog"),
    (["--vcpus", "8"], "--vcpus: only with --gpu-memory-mib/--gpus-per-node"),
])
def test_catalog_instance_refuses_flags_of_hardware_outside_it(cli, extra, words):
    r = cli("plan", "--model", "llama-3.1-8b-instruct", "--instance", "g6e.xlarge", *extra)
    assert r.exit_code == 1 and words in r.stderr, r.stderr


def test_catalog_price_override_is_named_in_explain(cli):
    text = cli("explain", "--model", "llama-3.1-8b-instruct", "--instance", "g6e.xlarge", "--price-per-hour", "1.5").stdout
    assert "cost_per_hour_usd = $1.50\n    = $1.5/h x 1 node(s) x 1/1 GPUs\n    why: --price-per-hour" in text


def test_plan_json_records_a_node_outside_the_catalog_only(plan_json):
    from vllm_eks.spec.plan import Plan

    p = plan_json(*CUSTOM, "--vcpus", "8", "--memory-gib", "64")
    hw = ec2.hardware_from_record(Plan.from_summary(p).hardware)
    assert (hw.name, hw.vcpu, hw.alloc_cpu_millicores, hw.max_pods, hw.in_catalog) == ("g6e.2xlarge", 8, 7910, 110, False)
    assert "hardware" not in plan_json(*CUSTOM)  # allocatable unknown: nothing for check-fit to size by
    assert "hardware" not in plan_json("--model", "llama-3.1-8b-instruct", "--instance", "g6e.xlarge")
    record = ec2.hardware_record(ec2.hardware_from_shape(ec2.shape_from_ec2(info()), "us-east-1", 1.0, "p"))
    assert ec2.hardware_from_record(json.loads(json.dumps(record))).compute_capability == (8, 9)


def test_plan_table_says_where_the_node_figures_came_from():
    from vllm_eks.output import report
    from vllm_eks.planning.planner import make_plan
    from vllm_eks.spec.request import PlanRequest

    base = dict(model="llama-3.1-8b-instruct", gpu_memory_mib=46068, gpus_per_node=1, hardware_name="g6e.2xlarge")
    rows = dict(report.summary_rows(make_plan(PlanRequest(**base))))
    assert rows["node figures"].endswith("(give --vcpus and --memory-gib)")
    rows = dict(report.summary_rows(make_plan(PlanRequest(**base, vcpus=8, memory_gib=64))))
    assert rows["node figures"].startswith("7910m CPU, 57.67 GiB, 110 pods; --vcpus 8 and --memory-gib 64")
    catalog = dict(report.summary_rows(make_plan(PlanRequest(model="llama-3.1-8b-instruct", instance="g6e.xlarge"))))
    assert "node figures" not in catalog


@pytest.mark.parametrize("entry, words", [
    (info(enis=0, cards=()), "no ENI figures to bound the pods by (0 ENIs, 15 IPv4 each): give --max-pods"),
    (info(vcpus=0), "lacks vCPUs, memory or GPU memory (0 vCPUs"),
])
def test_ec2_answers_missing_figures_are_refused_naming_the_flag(entry, words):
    with pytest.raises(UnknownInstanceError, match=r"^--instance x9\.2xlarge: ") as e:
        ec2.hardware_from_shape(ec2.shape_from_ec2(entry), "us-east-1", 1.0, "p")
    assert words in str(e.value)
    if "ENI" in words:  # --max-pods is the way around it
        assert ec2.hardware_from_shape(ec2.shape_from_ec2(entry), "us-east-1", 1.0, "p", max_pods=50).max_pods == 50
