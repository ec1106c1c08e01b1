"""checkov.scan on rendered YAML: resources found, failures and annotation skips reported."""

from __future__ import annotations

import textwrap

import pytest

from tests.harness import checkov

pytestmark = pytest.mark.render

PRIVILEGED_POD = textwrap.dedent("""\
    apiVersion: v1
    kind: Pod
    metadata:
      name: priv
      namespace: default
      annotations:
        checkov.io/skip1: CKV_K8S_43=images are pinned by tag in this test
        checkov.io/skip2: CKV_K8S_15
    spec:
      containers:
        - name: c
          image: busybox:1.36
          securityContext:
            privileged: true
    """)


@pytest.fixture(scope="module")
def privileged_result() -> checkov.CheckovResult:
    return checkov.scan(PRIVILEGED_POD)


def test_privileged_pod_fails_the_privileged_check(privileged_result: checkov.CheckovResult) -> None:
    assert privileged_result.resource_count == 1
    failed_ids = {f.check_id for f in privileged_result.failed_checks}
    assert "CKV_K8S_16" in failed_ids  # "Container should not be privileged"
    assert privileged_result.failed == len(privileged_result.failed_checks) > 0
    assert privileged_result.passed > 0
    finding = next(f for f in privileged_result.failed_checks if f.check_id == "CKV_K8S_16")
    assert finding.resource == "Pod.default.priv" and finding.file == "rendered.yaml"


def test_skips_are_reported_with_their_reasons(privileged_result: checkov.CheckovResult) -> None:
    skipped = {f.check_id: f.reason for f in privileged_result.skipped_checks}
    assert skipped["CKV_K8S_43"] == "images are pinned by tag in this test"
    assert skipped["CKV_K8S_15"] == checkov.NO_REASON
    skips = {s.check_id: s for s in checkov.skip_annotations(
        [{"kind": "Pod", "metadata": {"name": "priv", "annotations": {
            "checkov.io/skip1": "CKV_K8S_43=images are pinned by tag in this test",
            "checkov.io/skip2": "CKV_K8S_15",
            "checkov.io/skip3": "CKV_K8S_8=a=b",
            "other": "CKV_K8S_9=not a skip"}}}])}
    assert set(skips) == {"CKV_K8S_43", "CKV_K8S_15", "CKV_K8S_8"}
    assert skips["CKV_K8S_43"].has_reason and skips["CKV_K8S_43"].resource == "Pod/priv"
    assert not skips["CKV_K8S_15"].has_reason
    assert not skips["CKV_K8S_8"].has_reason  # checkov cannot parse a second '='


def test_scan_accepts_objects_and_named_files() -> None:
    import yaml

    objects = list(yaml.safe_load_all(PRIVILEGED_POD))
    result = checkov.scan({"first": PRIVILEGED_POD, "second.yaml": yaml.safe_dump_all(objects)})
    assert result.resource_count == 2
    assert {f.file for f in result.failed_checks} == {"first.yaml", "second.yaml"}


def test_nothing_parsed_reports_zero_resources() -> None:
    result = checkov.scan("just: a mapping\n")
    assert result.resource_count == 0 and result.passed == 0
