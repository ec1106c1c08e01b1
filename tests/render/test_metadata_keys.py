"""Every chart refuses label, annotation and nodeSelector keys the API server would refuse, naming
the map and the key, and renders keys it accepts. The three charts carry the same
metadataKeyErrors helper (written from tools/chart-templates by `make schemas`); this test holds
each chart's use of it to one rule."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.harness import helm
from tests.harness.paths import CHARTS, VALUES

pytestmark = pytest.mark.render

SCENARIO = VALUES / "qwen2.5-7b-g6-xlarge"

REFUSED = ["team name", "-leading-dash", "trailing-dash-", "Example.COM/owner", "example.com/" + "n" * 64,
           "p" * 254 + "/name", "example.com/", "a/b/c", "dots..ok/x_"]
ACCEPTED = ["team", "example.com/owner", "a.b_c-D", "n" * 63, "sub.example.com/" + "n" * 63]


def _nest(path: str, value: object) -> dict:
    out: object = value
    for part in reversed(path.split(".")):
        out = {part: out}
    return out  # type: ignore[return-value]


CASES = [
    ("vllm-inference", "labels"), ("vllm-inference", "podAnnotations"),
    ("vllm-inference", "serviceAccount.annotations"), ("vllm-inference", "scheduling.nodeSelector"),
    ("gpu-infra", "poolDefaults.labels"),
    ("observability", "prometheus.monitorLabels"), ("observability", "dashboards.annotations"),
]


def _render(tmp_path: Path, chart: str, path: str, keys: list[str], helm_version: str = "helm4"):
    extra = tmp_path / "keys.yaml"
    # label values must be valid label values; annotation values are free text
    extra.write_text(yaml.safe_dump(_nest(path, {k: "v" for k in keys})))
    return helm.render(CHARTS / chart, [SCENARIO / f"{chart}.yaml", extra],
                       helm=helm_version, namespace="llm")


@pytest.mark.parametrize(("chart", "path"), CASES, ids=[f"{c}:{p}" for c, p in CASES])
def test_refused_keys_are_named(tmp_path: Path, helm_version: str, chart: str, path: str) -> None:
    with pytest.raises(helm.HelmError) as err:
        _render(tmp_path, chart, path, REFUSED, helm_version)
    text = str(err.value)
    for key in REFUSED:
        assert f'{path}: key "{key}" is not a Kubernetes key' in text, (key, text[-2000:])


@pytest.mark.parametrize(("chart", "path"), CASES, ids=[f"{c}:{p}" for c, p in CASES])
def test_accepted_keys_render(tmp_path: Path, chart: str, path: str) -> None:
    objects = _render(tmp_path, chart, path, ACCEPTED)
    assert objects


def test_pool_labels_are_checked_per_pool(tmp_path: Path) -> None:
    pools = yaml.safe_load((SCENARIO / "gpu-infra.yaml").read_text())["pools"]
    pools[0]["labels"] = {"bad key": "v"}
    extra = tmp_path / "pools.yaml"
    extra.write_text(yaml.safe_dump({"pools": pools}))
    with pytest.raises(helm.HelmError) as err:
        helm.render(CHARTS / "gpu-infra", [SCENARIO / "gpu-infra.yaml", extra], namespace="llm")
    assert 'pools[0].labels: key "bad key"' in str(err.value)
