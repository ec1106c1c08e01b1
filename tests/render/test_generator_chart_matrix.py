"""The generator and the charts agree on every combination of topology, model source and EFA.

For each topology (single-node, multi-node, ray-serve, disaggregated), each model source kind
`--model-source-kind` names (a Hugging Face repo id, an s3:// URI, a path on a PVC, on FSx for
Lustre or on a Mountpoint for S3 volume) and an instance with and without EFA interfaces, `vllm-eks values` runs
in-process. Either it refuses with one line naming a flag (exit 1), or the three charts render its
values with Helm (their validate helpers and values.schema.json included). The refusals expected
are listed with the flag they must name: a combination that renders where a refusal is expected,
or the reverse, fails too, so neither side can drift into refusing everything."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from tests.harness import helm
from tests.harness.paths import CHARTS
from vllm_eks.cli.main import main

pytestmark = pytest.mark.render

ZONE = ["--zone", "us-east-1a"]
# (topology, instance has EFA) -> arguments of a model/instance pair that plans that topology.
PAIRS: dict[tuple[str, bool], list[str]] = {
    ("single-node", False): ["--model", "llama-3.1-8b-instruct", "--instance", "g6e.xlarge"],
    ("single-node", True): ["--model", "llama-3.1-70b-instruct", "--instance", "p5.48xlarge", *ZONE],
    ("multi-node", False): ["--model", "llama-3.1-70b-instruct", "--instance", "g6e.xlarge"],
    ("multi-node", True): ["--model", "llama-3.1-405b-instruct", "--instance", "p5.48xlarge", *ZONE],
    ("ray-serve", False): ["--model", "llama-3.1-8b-instruct", "--instance", "g6e.xlarge", "--topology", "ray-serve"],
    ("ray-serve", True): ["--model", "llama-3.1-70b-instruct", "--instance", "g6e.12xlarge", "--topology",
                          "ray-serve", *ZONE],
    ("disaggregated", False): ["--model", "qwen3-8b", "--instance", "g6e.xlarge", "--topology", "disaggregated",
                               "--max-model-len", "4096"],
    ("disaggregated", True): ["--model", "qwen3-8b", "--instance", "g6.8xlarge", "--topology", "disaggregated",
                              "--max-model-len", "4096", *ZONE],
}
SOURCES: dict[str, list[str]] = {
    "huggingface": [],
    "s3": ["--model-source", "s3://models-bucket/weights/model", "--iam-role-arn",
           "arn:aws:iam::111122223333:role/model-reader"],
    "pvc": ["--model-source", "/models/weights/model", "--pvc-name", "model-weights"],
    "fsx": ["--model-source", "/models/weights/model", "--model-source-kind", "fsx", "--fsx-file-system-id",
            "fs-0123456789abcdef0", "--fsx-dns-name", "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
            "--fsx-mount-name", "abcdef12", "--fsx-throughput-per-tib", "500", "--fsx-storage-tib", "2.4"],
    "mountpoint-s3": ["--model-source", "/models/weights/model", "--model-source-kind", "mountpoint-s3",
                      "--s3-mount-bucket", "models-bucket", "--s3-mount-prefix", "hub/", "--s3-mount-region", "us-east-1"],
}
# Combinations the generator refuses, and the flag its one-line error must name.
REFUSED: dict[tuple[str, str, bool], str] = {
    # NIXL moves the KV cache over EFA: no EFA interface, no disaggregation.
    **{("disaggregated", source, False): "--topology disaggregated" for source in SOURCES},
}
COMBINATIONS = list(itertools.product(["single-node", "multi-node", "ray-serve", "disaggregated"], SOURCES,
                                      [False, True]))


def _id(combo: tuple[str, str, bool]) -> str:
    topology, source, efa = combo
    return f"{topology}-{source}-{'efa' if efa else 'no-efa'}"


def _generate(combo: tuple[str, str, bool], out: Path) -> tuple[int, str]:
    topology, source, efa = combo
    result = CliRunner().invoke(main, ["values", *PAIRS[(topology, efa)], *SOURCES[source], "--out", str(out)],
                                catch_exceptions=True)
    return result.exit_code, result.stderr


@pytest.mark.parametrize("combo", COMBINATIONS, ids=_id)
def test_generator_refuses_or_the_charts_render(combo: tuple[str, str, bool], tmp_path: Path) -> None:
    topology, source, efa = combo
    code, err = _generate(combo, tmp_path / "out")
    if combo in REFUSED:
        assert code == 1, f"expected a refusal naming {REFUSED[combo]}, got exit {code}"
        line = err.rstrip("\n")
        assert "\n" not in line and "Traceback" not in line, err
        assert line.startswith("vllm-eks: error: ") and REFUSED[combo] in line, line
        assert not (tmp_path / "out").exists(), "a refused invocation writes nothing"
        return
    assert code == 0, f"generator refused a combination the charts support: {err}"
    values: dict[str, Any] = yaml.safe_load((tmp_path / "out" / "vllm-inference.yaml").read_text())
    assert values["topology"] == topology
    assert values["model"]["source"] == {"mountpoint-s3": "mountpointS3"}.get(source, source)
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    # the Plan's load bandwidth is the source's (docs/model-sources.md)
    expected_mib_s = {"huggingface": 400, "s3": 1000, "pvc": 125, "fsx": 500 * 2.4 * 10**6 / 2**20,
                      "mountpoint-s3": 250}[source]
    assert plan["load_bandwidth_bytes_per_s"] == int(expected_mib_s * 2**20), plan["load_bandwidth_bytes_per_s"]
    if topology in {"multi-node", "disaggregated"}:
        assert (values["efa"]["devices"] > 0) == efa, values["efa"]
    for chart in ("vllm-inference", "gpu-infra", "observability"):
        objects = helm.render(CHARTS / chart, [tmp_path / "out" / f"{chart}.yaml"], release="vllm", namespace="llm")
        assert objects, f"{chart} rendered nothing"


def test_matrix_counts() -> None:
    assert len(COMBINATIONS) == 40
    assert set(REFUSED) <= set(COMBINATIONS)
    assert len(REFUSED) == 5
