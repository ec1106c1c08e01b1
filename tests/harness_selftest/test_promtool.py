"""promtool wrappers run the real promtool and raise on failure."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.harness import promtool
from vllm_eks.verify.crd_schema import CrdRegistry, validate

pytestmark = pytest.mark.render

RULE = {
    "apiVersion": "monitoring.coreos.com/v1",
    "kind": "PrometheusRule",
    "metadata": {"name": "vllm-rules", "namespace": "monitoring"},
    "spec": {"groups": [{
        "name": "vllm.queue",
        "rules": [{
            "alert": "VllmQueueGrowing",
            "expr": "sum(vllm:num_requests_waiting) > 5",
            "for": "5m",
            "labels": {"severity": "warning"},
            "annotations": {"summary": "requests are waiting"},
        }],
    }]},
}

UNIT_TEST = """\
    rule_files: [rules.yaml]
    evaluation_interval: 1m
    tests:
      - interval: 1m
        input_series:
          - series: 'vllm:num_requests_waiting{pod="a"}'
            values: '10x15'
        alert_rule_test:
          - eval_time: 10m
            alertname: VllmQueueGrowing
            exp_alerts:
              - exp_labels: {severity: %s}
                exp_annotations: {summary: requests are waiting}
    """


def test_rule_object_is_valid_and_passes_check_rules(tmp_path: Path, crd_registry: CrdRegistry) -> None:
    validate(RULE, crd_registry)
    path = promtool.write_rule_file(RULE, tmp_path / "rules.yaml")
    assert "SUCCESS" in promtool.check_rules(path)


def test_check_rules_fails_on_bad_expression(tmp_path: Path) -> None:
    bad = {**RULE, "spec": {"groups": [{"name": "g", "rules": [{"alert": "A", "expr": "sum(x"}]}]}}
    path = promtool.write_rule_file(bad, tmp_path / "rules.yaml")
    with pytest.raises(promtool.PromtoolError, match="FAILED"):
        promtool.check_rules(path)


@pytest.mark.parametrize("severity, passes", [("warning", True), ("critical", False)])
def test_test_rules(tmp_path: Path, severity: str, passes: bool) -> None:
    promtool.write_rule_file(RULE, tmp_path / "rules.yaml")
    test_file = tmp_path / "rules_test.yaml"
    test_file.write_text(textwrap.dedent(UNIT_TEST) % severity)
    if passes:
        assert "SUCCESS" in promtool.test_rules(test_file)
    else:
        with pytest.raises(promtool.PromtoolError, match="VllmQueueGrowing"):
            promtool.test_rules(test_file)
