"""--instance outside the catalog, end to end: the CLI with boto3 reads the shape from moto's EC2
DescribeInstanceTypes (moto 5.2.5 bundles EC2's instance-type data, GPU types included) and the
price from a local Pricing API stand-in (moto has no Pricing service; tests/aws/pricing_standin.py),
both on 127.0.0.1 through AWS_ENDPOINT_URL_EC2 / AWS_ENDPOINT_URL_PRICING. Every failure is one
line that names the flags around it."""

from __future__ import annotations

import json
import time

import pytest

from tests.aws.pricing_standin import PricingStandIn, product
from vllm_eks.catalog.instances import instance_catalog
from vllm_eks.core.units import GIB, MIB

pytestmark = pytest.mark.aws

M8 = ["--model", "llama-3.1-8b-instruct"]
VIRGINIA, IRELAND = "US East (N. Virginia)", "EU (Ireland)"
CREDS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
# Prices are the test's own; the decoys differ in one filtered attribute each, so a filter the
# lookup forgets picks the wrong price.
PRODUCTS = [
    product("g6e.2xlarge", VIRGINIA, 2.24208),
    product("g6e.2xlarge", VIRGINIA, 9.0, tenancy="Dedicated"),
    product("g6e.2xlarge", VIRGINIA, 9.1, operatingSystem="Windows"),
    product("g6e.2xlarge", VIRGINIA, 9.2, capacitystatus="UnusedCapacityReservation"),
    product("g6e.2xlarge", IRELAND, 2.5, date="2026-10-01T00:00:00Z"),
    product("p5.4xlarge", VIRGINIA, 6.88),
]
NO_WAY_OUT = ("--gpu-memory-mib", "--gpus-per-node", "--hardware-name", "--vcpus", "--memory-gib", "--price-per-hour")


@pytest.fixture
def pricing():
    stand_in = PricingStandIn(PRODUCTS)
    with stand_in as url:
        stand_in.url = url
        yield stand_in


def endpoints(moto_ec2: str, pricing_url: str, region: str | None = "us-east-1") -> dict:
    env = {**CREDS, "AWS_ENDPOINT_URL_EC2": moto_ec2, "AWS_ENDPOINT_URL_PRICING": pricing_url}
    return {**env, "AWS_REGION": region} if region else env


def plan(aws_cli, *args, env) -> dict:
    r = aws_cli("plan", *M8, *args, "--json", env=env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_g6e_2xlarge_shape_from_ec2_and_price_from_pricing(aws_cli, moto_ec2, pricing):
    env = endpoints(moto_ec2, pricing.url, region=None)
    p = plan(aws_cli, "--instance", "g6e.2xlarge", "--region", "us-east-1", env=env)
    # EC2: 8 vCPUs, 65536 MiB, 4 ENIs of 15 IPv4 -> 58 pods; Karpenter: 7910m, 59627 MiB allocatable
    assert (p["gpu"], p["gpus_per_node"]) == ("l40s", 1)
    assert p["gpu_memory_bytes"] == instance_catalog()["g6e.xlarge"].gpu_memory_bytes
    assert p["cpu_request_millicores"] == 7910 - 2000
    assert p["memory_request_bytes"] == (59627 * MIB - 4 * GIB) // MIB * MIB
    assert (p["quota_instance_class"], p["quota_vcpus_per_node"]) == ("G", 8)
    assert p["cost_per_hour_usd"] == round(2.24208, 4)
    assert [{f["Field"]: f["Value"] for f in c["Filters"]} for c in pricing.calls] == [{
        "instanceType": "g6e.2xlarge", "location": VIRGINIA, "operatingSystem": "Linux", "tenancy": "Shared",
        "preInstalledSw": "NA", "capacitystatus": "Used"}]
    assert pricing.calls[0]["ServiceCode"] == "AmazonEC2"
    text = aws_cli("explain", *M8, "--instance", "g6e.2xlarge", "--region", "us-east-1", env=env).stdout
    assert "node_allocatable = 7910m CPU, 58.23 GiB, 58 pods" in text
    assert ("why: EC2 DescribeInstanceTypes in us-east-1 (read ") in text
    assert ("us-east-1/g6e.2xlarge.json): 8 vCPUs, 65536 MiB, 1 x L40S 45776 MiB (GPU facts from the catalog), "
            "EFA 0, 5000 Mbit/s, 450 GB NVMe; max pods 4 ENIs x (15 IPv4 - 1) + 2 = 58") in text
    assert "EC2's 45776 MiB is the catalog's l40s (g6e.xlarge): nvidia-smi 46068 MiB" in text
    assert (f"why: Pricing API on-demand price, Linux, shared tenancy, {VIRGINIA}, effective 2026-11-01") in text
    table = aws_cli("plan", *M8, "--instance", "g6e.2xlarge", "--region", "us-east-1", env={**env, "COLUMNS": "400"})
    assert "│ node figures  " in table.stdout and "7910m CPU, 58.23 GiB, 58 pods; EC2 DescribeInstanceTypes in us-east-1 (read" in table.stdout


def test_p5_4xlarge_maps_h100_to_the_catalog_and_counts_the_default_cards_enis(aws_cli, moto_ec2, pricing):
    env = endpoints(moto_ec2, pricing.url)
    text = aws_cli("explain", *M8, "--instance", "p5.4xlarge", env=env).stdout
    # 16 vCPUs: 16000 - (60 + 10 + 2 x 5 + 12 x 2.5); 262144 MiB - 19661 - (11 x 118 + 255) - 100
    assert "node_allocatable = 15890m CPU, 235.19 GiB, 118 pods" in text
    assert "1 x H100 81920 MiB (GPU facts from the catalog), EFA 1, 100000 Mbit/s, 3800 GB NVMe" in text
    p = plan(aws_cli, "--instance", "p5.4xlarge", env=env)
    assert p["gpu_memory_bytes"] == instance_catalog()["p5.48xlarge"].gpu_memory_bytes
    assert (p["gpu"], p["quota_instance_class"], p["quota_vcpus_per_node"]) == ("h100", "P", 16)
    assert p["cost_per_hour_usd"] == 6.88


def test_region_from_the_environment_picks_its_pricing_location(aws_cli, moto_ec2, pricing):
    p = plan(aws_cli, "--instance", "g6e.2xlarge", env=endpoints(moto_ec2, pricing.url, region="eu-west-1"))
    assert p["cost_per_hour_usd"] == 2.5
    assert pricing.calls[0]["Filters"][1] == {"Type": "TERM_MATCH", "Field": "location", "Value": IRELAND}


def test_price_flag_skips_the_pricing_api(aws_cli, moto_ec2, pricing):
    env = endpoints(moto_ec2, pricing.url)
    text = aws_cli("explain", *M8, "--instance", "g6e.2xlarge", "--price-per-hour", "1.75", env=env).stdout
    assert "cost_per_hour_usd = $1.75" in text and "why: --price-per-hour" in text
    assert pricing.calls == []


def test_catalog_instance_makes_no_aws_call(aws_cli, tmp_path):
    closed = "http://127.0.0.1:9"  # discard port: nothing listens
    env = {**CREDS, "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL_EC2": closed, "AWS_ENDPOINT_URL_PRICING": closed}
    start = time.monotonic()
    r = aws_cli("plan", *M8, "--instance", "g6e.xlarge", "--json", env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["cost_per_hour_usd"] == instance_catalog()["g6e.xlarge"].usd_per_hour
    assert time.monotonic() - start < 30


def _refused(r, *words: str) -> str:
    assert r.returncode == 1, (r.returncode, r.stdout[-300:], r.stderr[-500:])
    assert "Traceback" not in r.stderr and r.stdout == ""
    line = r.stderr.rstrip("\n")
    assert "\n" not in line and line.startswith("vllm-eks: error: --instance "), line
    for w in words:
        assert w in line, (w, line)
    return line


def test_no_credentials_is_one_line_naming_every_flag_that_describes_the_machine(aws_cli, moto_ec2, pricing):
    env = {**endpoints(moto_ec2, pricing.url), "AWS_ACCESS_KEY_ID": None, "AWS_SECRET_ACCESS_KEY": None}
    line = _refused(aws_cli("plan", *M8, "--instance", "g6e.2xlarge", env=env),
                    "no AWS credentials were found", "EC2 DescribeInstanceTypes in us-east-1", "AWS_PROFILE", *NO_WAY_OUT)
    assert "--hardware-name g6e.2xlarge" in line


def test_no_region_is_one_line(aws_cli, moto_ec2, pricing):
    _refused(aws_cli("plan", *M8, "--instance", "g6e.2xlarge", env=endpoints(moto_ec2, pricing.url, region=None)),
             "no AWS region is set", "--region", "AWS_REGION", *NO_WAY_OUT)


@pytest.mark.parametrize("instance, words", [
    ("g9.2xlarge", ("knows no such instance type (InvalidInstanceType)", "--region")),
    # refused by name before any AWS call (hardware.unmodelled_reason); EC2's NeuronInfo line is a unit test
    ("trn1.2xlarge", ("an AWS Neuron (Trainium/Inferentia) instance", "not a CUDA GPU instance")),
    ("inf2.xlarge", ("an AWS Neuron (Trainium/Inferentia) instance", "not a CUDA GPU instance")),
    ("m5.large", ("EC2 reports no GPUs", "NVIDIA GPUs only")),
])
def test_types_ec2_cannot_give_a_gpu_shape_for(aws_cli, moto_ec2, pricing, instance, words):
    _refused(aws_cli("plan", *M8, "--instance", instance, env=endpoints(moto_ec2, pricing.url)), *words)
    assert pricing.calls == []


@pytest.mark.parametrize("code, words", [
    ("AccessDeniedException", ("was refused (AccessDeniedException)", "pricing:GetProducts", "--price-per-hour")),
    ("ThrottlingException", ("was throttled (ThrottlingException) after 3 attempts", "retry", "--price-per-hour")),
])
def test_pricing_failures(aws_cli, moto_ec2, code, words):
    stand_in = PricingStandIn(PRODUCTS, fail_with=code)
    with stand_in as url:
        _refused(aws_cli("plan", *M8, "--instance", "g6e.2xlarge", env=endpoints(moto_ec2, url)), *words)
    assert len(stand_in.calls) == (3 if code.startswith("Throttling") else 1)


def test_type_the_price_list_lacks_and_region_without_a_location(aws_cli, moto_ec2, pricing):
    env = endpoints(moto_ec2, pricing.url)
    _refused(aws_cli("plan", *M8, "--instance", "g6.2xlarge", env=env),
             f"the Pricing API (us-east-1) for g6.2xlarge in {VIRGINIA} lists no on-demand", "--price-per-hour")
    _refused(aws_cli("plan", *M8, "--instance", "g6.2xlarge", "--region", "af-south-1", env=env),
             "no Price List location for region af-south-1", "--price-per-hour")


def test_unreachable_ec2_is_one_line_and_quick(aws_cli, pricing):
    env = endpoints("http://127.0.0.1:9", pricing.url)
    start = time.monotonic()
    _refused(aws_cli("plan", *M8, "--instance", "g6e.2xlarge", env=env),
             "could not reach EC2 DescribeInstanceTypes in us-east-1 (EndpointConnectionError)", "AWS_ENDPOINT_URL",
             *NO_WAY_OUT)
    assert time.monotonic() - start < 60


def test_values_of_a_type_read_from_ec2_pass_check_fit(aws_cli, moto_ec2, pricing, tmp_path):
    from tests.harness.tools import require_tool

    env = endpoints(moto_ec2, pricing.url)
    out = tmp_path / "p5-4xlarge"
    r = aws_cli("values", *M8, "--instance", "p5.4xlarge", "--out", str(out), env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads((out / "plan.json").read_text())["hardware"]["max_pods"] == 118
    # check-fit reads plan.json, not AWS: the endpoints are gone
    r = aws_cli("check-fit", str(out), "--helm", str(require_tool("helm4")), env=CREDS)
    assert r.returncode == 0, r.stderr
    assert "P bucket: 16 / 64 / 64 vCPUs" in r.stdout


def test_ec2_answer_is_kept_on_disk_per_region_and_type(aws_cli, moto_ec2, pricing, tmp_path):
    env = endpoints(moto_ec2, pricing.url)
    first = aws_cli("explain", *M8, "--instance", "g6e.2xlarge", env=env).stdout
    kept = tmp_path / "cache" / "vllm-eks" / "ec2" / "us-east-1" / "g6e.2xlarge.json"
    assert f", kept in {kept})" in first
    assert json.loads(kept.read_text())["instance_type"]["InstanceType"] == "g6e.2xlarge"
    # EC2 unreachable now: the kept answer serves, and says so
    again = aws_cli("explain", *M8, "--instance", "g6e.2xlarge", env={**env, "AWS_ENDPOINT_URL_EC2": "http://127.0.0.1:9"})
    assert f", from the cache {kept})" in again.stdout, again.stderr
    # another region is another answer
    r = aws_cli("plan", *M8, "--instance", "g6e.2xlarge", "--region", "eu-west-1", "--json",
                env={**env, "AWS_ENDPOINT_URL_EC2": "http://127.0.0.1:9"})
    assert r.returncode == 1 and "could not reach EC2 DescribeInstanceTypes in eu-west-1" in r.stderr
    # a stale or broken file is read again from EC2
    kept.write_text(json.dumps({"read": "2020-01-01", "instance_type": {"InstanceType": "g6e.2xlarge"}}))
    assert ", kept in " in aws_cli("explain", *M8, "--instance", "g6e.2xlarge", env=env).stdout
    kept.write_text("{not json")
    assert ", kept in " in aws_cli("explain", *M8, "--instance", "g6e.2xlarge", env=env).stdout


def test_ec2_refusals_of_iam(aws_cli, moto_ec2_iam, pricing):
    """moto checking IAM: a user without policies is denied the call; keys it does not know are
    not accepted. Either is one line with the way around it."""
    url, user = moto_ec2_iam
    env = {**endpoints(url, pricing.url), **user}
    _refused(aws_cli("plan", *M8, "--instance", "g6e.2xlarge", env=env),
             "EC2 DescribeInstanceTypes in us-east-1 was refused (AccessDenied)", "ec2:DescribeInstanceTypes",
             *NO_WAY_OUT)
    _refused(aws_cli("plan", *M8, "--instance", "g6e.2xlarge", env={**env, **CREDS}),
             "did not accept the credentials (AuthFailure)", "AWS_PROFILE", *NO_WAY_OUT)


@pytest.mark.parametrize("instance", ["g6e.2xlarge", "p5.4xlarge", "g6.2xlarge", "g4dn.xlarge"])
def test_a_type_read_from_ec2_matches_its_catalog_row(aws_cli, moto_ec2, pricing, instance):
    """The catalog's row comes from Karpenter's generated reference; the EC2 reading from moto's
    DescribeInstanceTypes data through the same formula: they agree on every figure a plan uses."""
    p = plan(aws_cli, "--instance", instance, "--price-per-hour", "1", env=endpoints(moto_ec2, pricing.url))
    read, row = p["hardware"], instance_catalog()[instance]
    keys = ("gpu", "gpus_per_node", "gpu_memory_mib_ec2", "gpu_memory_mib_nvidia_smi", "gpu_memory_bytes", "vcpu",
            "memory_mib", "alloc_cpu_millicores", "alloc_memory_bytes", "max_pods", "efa_max", "local_nvme_gb",
            "compute_capability")
    assert {k: read[k] for k in keys} == {k: (list(v) if isinstance(v, tuple) else v)
                                          for k, v in ((k, getattr(row, k)) for k in keys)}
