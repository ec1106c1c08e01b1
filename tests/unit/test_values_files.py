"""The values files of a scenario folder as people fork them: the Plan's keys always, other keys
only where they differ from the chart default, no section of another topology, a comment from
the schema above each key, and quantities whose bytes are exactly the Plan's."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from tests.harness.paths import CHARTS
from tests.harness.scenario_values import ChartValues, generate
from vllm_eks.core.units import bytes_quantity, quantity_bytes
from vllm_eks.output.scenario_folder import values_document
from vllm_eks.output.values_files import commented_yaml, forkable_values, human_size
from vllm_eks.values.schema import values_schema

KEY_LINE = re.compile(r"^(\s*)(- )?([A-Za-z0-9_.'/-]+):( |$)")


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> list[ChartValues]:
    return generate(tmp_path_factory.mktemp("scenarios"))


def _helm_merge(base: Any, over: Any) -> Any:
    """Helm's coalescing of a values file over values.yaml: maps merge key by key, the rest is replaced."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = copy.deepcopy(base)
        for key, value in over.items():
            out[key] = _helm_merge(base.get(key), value) if key in base else copy.deepcopy(value)
        return out
    return copy.deepcopy(over)


def _load(path: Path) -> dict:
    return yaml.safe_load(path.read_text()) or {}


def test_files_are_short_and_round_trip(written: list[ChartValues]) -> None:
    for cv in written:
        doc = _load(cv.path)
        defaults = _load(CHARTS / cv.chart / "values.yaml")
        full = values_document(cv.model)
        # what helm reads from the short file is what it read from the full dump, apart from the
        # sections the topology never reads (test_short_values_render_what_the_full_values_render
        # shows those render nothing)
        foreign = FOREIGN[cv.topology] if cv.chart == "vllm-inference" else set()
        short_read, full_read = _helm_merge(defaults, doc), _helm_merge(defaults, full)
        for key in foreign:
            short_read.pop(key, None)
            full_read.pop(key, None)
        assert short_read == full_read, f"{cv.scenario}/{cv.chart}"
        assert len(json.dumps(doc)) < len(json.dumps(full)), f"{cv.scenario}/{cv.chart}: nothing left out"


FOREIGN = {
    "single-node": {"multiNode", "diagnostics", "ray", "rayServe", "disaggregated"},
    "multi-node": {"ray", "rayServe", "disaggregated"},
    "ray-serve": {"multiNode", "diagnostics", "disaggregated", "probes"},
    "disaggregated": {"multiNode", "diagnostics", "probes"},
}


def test_no_section_of_another_topology(written: list[ChartValues]) -> None:
    topologies = set()
    for cv in written:
        doc = _load(cv.path)
        topologies.add(cv.topology)
        if cv.chart == "vllm-inference":
            assert not FOREIGN[cv.topology] & doc.keys(), f"{cv.scenario}: {sorted(FOREIGN[cv.topology] & doc.keys())}"
        if cv.chart == "observability" and cv.topology in ("single-node", "multi-node"):
            assert "rayServe" not in doc.get("monitors", {}), cv.scenario
    assert topologies == set(FOREIGN)


def test_every_sized_number_is_written(written: list[ChartValues]) -> None:
    for cv in written:
        doc = _load(cv.path)
        if cv.chart == "vllm-inference":
            sized = ["resources.requests.cpu", "resources.requests.memory", "resources.requests.ephemeralStorage",
                     "resources.limits.memory", "shm.sizeLimit", "drain.terminationGracePeriodSeconds",
                     "engine.tensorParallelSize", "engine.maxModelLen", "engine.maxNumSeqs", "efa.devices", "replicas"]
            if "probes" not in FOREIGN[cv.topology]:  # the server probes exist outside Ray only
                sized.append("probes.startup.failureThreshold")
            for path in sized:
                node: Any = doc
                for part in path.split("."):
                    assert isinstance(node, dict) and part in node, f"{cv.scenario}: {path} missing"
                    node = node[part]
        if cv.chart == "gpu-infra":
            assert all("gpuLimit" in pool and "rootVolume" in pool for pool in doc["pools"]), cv.scenario
        if cv.chart == "observability":
            assert "queueDepthPerReplica" in doc["rules"]["thresholds"], cv.scenario


def test_quantities_are_the_plans_bytes(written: list[ChartValues]) -> None:
    for cv in written:
        if cv.chart != "vllm-inference":
            continue
        plan = json.loads((cv.path.parent / "plan.json").read_text())
        doc = _load(cv.path)
        res = doc["resources"]
        assert quantity_bytes(res["requests"]["memory"]) == plan["memory_request_bytes"]
        assert quantity_bytes(res["limits"]["memory"]) == plan["memory_request_bytes"]
        assert quantity_bytes(res["requests"]["ephemeralStorage"]) == plan["ephemeral_storage_bytes"]
        assert quantity_bytes(doc["shm"]["sizeLimit"]) == plan["shm_size_bytes"]


def test_every_described_key_has_its_comment_above(written: list[ChartValues]) -> None:
    checked = 0
    for cv in written:
        lines = cv.path.read_text().splitlines()
        schema = values_schema(type(cv.model), cv.chart)
        for i, line in enumerate(lines):
            m = KEY_LINE.match(line)
            if not m or m.group(1) or m.group(2):
                continue
            key = m.group(3)
            description = " ".join(schema["properties"][key]["description"].split())
            above = []
            for prev in reversed(lines[:i]):
                if not prev.startswith("# "):
                    break
                above.insert(0, prev[2:])
            assert " ".join(above).endswith(description), f"{cv.scenario}/{cv.chart}: {key}"
            checked += 1
    assert checked > 30


@given(st.integers(min_value=0, max_value=1 << 62))
def test_bytes_quantity_keeps_every_byte(n: int) -> None:
    q = bytes_quantity(n)
    assert quantity_bytes(q) == n
    if n and n % (1 << 20) == 0:
        assert q.endswith(("Mi", "Gi", "Ti", "Pi", "Ei"))


def test_human_units_where_exact() -> None:
    assert bytes_quantity(32 << 30) == "32Gi"
    assert bytes_quantity(1536 << 20) == "1536Mi"
    assert human_size("26169864Ki") == "24.96 GiB"
    assert human_size("1536Mi") is None and human_size("8") is None and human_size(7) is None


class _Inner(BaseModel):
    a: int = Field(1, description="inner a")
    b: str = Field("x", description="inner b")


class _Toy(BaseModel):
    sized: int = Field(10, description="a number the builder decides")
    other: int = Field(5, description="left alone unless changed")
    items: list[str] = Field(default_factory=list, description="some items")
    inner: _Inner = Field(default_factory=_Inner, description="a group")
    extra: dict[str, str] = Field(default_factory=dict, description="free-form")


def test_set_keys_always_other_keys_when_they_differ() -> None:
    toy = _Toy(sized=10)            # set by the builder, equal to the default: written
    toy.inner.b = "y"               # set after construction, differs: written
    assert forkable_values(toy, "single-node", {}) == {"sized": 10, "inner": {"b": "y"}}
    toy = _Toy(sized=10, other=5)
    assert forkable_values(toy, "single-node", {}) == {"sized": 10, "other": 5}
    toy = _Toy(sized=10, items=["p"], extra={"k": "v"})
    toy.inner.a = 1
    assert forkable_values(toy, "single-node", {"inner": frozenset({"ray-serve"}), "items": frozenset()}) == \
        {"sized": 10, "extra": {"k": "v"}}


def test_commented_yaml_parses_back() -> None:
    doc = {"sized": 3, "items": ["a", "- b", ""], "inner": {"a": 2, "b": "yes"},
           "list": [{"a": 1, "b": "on"}, {}], "extra": {"x.y/z": "1536Mi", "k": "26169864Ki"}, "empty": {}}
    text = commented_yaml(doc, values_schema(_Toy, "toy"))
    assert yaml.safe_load(text) == doc
    assert "# a number the builder decides\nsized: 3\n" in text
    assert "k: 26169864Ki  # 24.96 GiB\n" in text


class _Window(BaseModel):
    seconds: int = Field(description="required: no default")
    policy: str = Field("Max", description="has a default")


class _Behavior(BaseModel):
    up: _Window = Field(default_factory=lambda: _Window(seconds=60), description="a group built by a factory")


def test_required_keys_stay_so_each_section_validates_alone() -> None:
    # the builder sets the same numbers the default factory does: still written
    toy = _Behavior(up=_Window(seconds=60))
    assert forkable_values(toy, "single-node", {}) == {"up": {"seconds": 60}}


def test_every_file_validates_against_its_values_model(written: list[ChartValues]) -> None:
    for cv in written:
        type(cv.model).model_validate(_load(cv.path))
