"""Evaluate the pinned Karpenter CRDs' CEL rules (x-kubernetes-validations) on every NodePool
and EC2NodeClass the gpu-infra chart renders, with cel-python.

The API server evaluates a rule wherever its schema node has a value; the walker below does the
same over properties, items and additionalProperties. Two Kubernetes CEL library functions the
rules use are not in cel-python and are supplied here: `split` (Kubernetes strings extension)
and `find` (Kubernetes regex library, first match or ""). Python's `re` stands in for RE2; the
patterns in these CRDs use only syntax both accept.

Not evaluated: transition rules (they reference `oldSelf`, which the API server only binds on
update; a chart install is a create). They are listed by test_unevaluated_rules_are_only_transition_rules."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import celpy
import pytest
from celpy import celtypes

from tests.harness import CrdRegistry, helm
from tests.harness.paths import CHARTS, ROOT, VALUES

pytestmark = pytest.mark.render

CHART = CHARTS / "gpu-infra"
VALUES_FILES = sorted((CHART / "ci").glob("*-values.yaml")) + sorted(VALUES.glob("*/gpu-infra.yaml"))
KARPENTER = [("karpenter.sh/v1", "NodePool"), ("karpenter.k8s.aws/v1", "EC2NodeClass")]


def _split(value: Any, sep: Any, limit: Any = None) -> celtypes.ListType:
    parts = str(value).split(str(sep)) if limit is None else str(value).split(str(sep), int(limit) - 1)
    return celtypes.ListType([celtypes.StringType(p) for p in parts])


def _find(value: Any, pattern: Any) -> celtypes.StringType:
    match = re.search(str(pattern), str(value))
    return celtypes.StringType(match.group(0) if match else "")


FUNCTIONS = {"split": _split, "find": _find}
_ENV = celpy.Environment()
_PROGRAMS: dict[str, Any] = {}


def _program(rule: str) -> Any:
    if rule not in _PROGRAMS:
        _PROGRAMS[rule] = _ENV.program(_ENV.compile(rule), functions=FUNCTIONS)
    return _PROGRAMS[rule]


@dataclass(frozen=True)
class RuleResult:
    path: str
    rule: str
    message: str
    outcome: str  # "pass", "fail", "transition" (not evaluated), "error: ..."


def _rules_at(schema: dict[str, Any], value: Any, path: str) -> Iterator[tuple[str, dict[str, Any], Any]]:
    for rule in schema.get("x-kubernetes-validations") or []:
        yield path, rule, value
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for key, sub in value.items():
            if key in props:
                yield from _rules_at(props[key], sub, f"{path}.{key}")
            elif isinstance(schema.get("additionalProperties"), dict):
                yield from _rules_at(schema["additionalProperties"], sub, f"{path}[{key}]")
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            yield from _rules_at(schema["items"], item, f"{path}[{i}]")


def evaluate(obj: dict[str, Any], registry: CrdRegistry) -> list[RuleResult]:
    schema = registry[(obj["apiVersion"], obj["kind"])].openapi_schema
    body = {k: v for k, v in obj.items() if k != "metadata"}
    results = []
    for path, rule, value in _rules_at(schema, body, obj["kind"]):
        text = rule["rule"]
        if "oldSelf" in text:
            results.append(RuleResult(path, text, rule.get("message", ""), "transition"))
            continue
        try:
            ok = _program(text).evaluate({"self": celpy.json_to_cel(value)})
        except Exception as exc:  # a rule cel-python cannot run is reported, never passed
            results.append(RuleResult(path, text, rule.get("message", ""), f"error: {type(exc).__name__}: {exc!s:.200}"))
            continue
        if isinstance(ok, celpy.CELEvalError):
            results.append(RuleResult(path, text, rule.get("message", ""), f"error: {ok!s:.200}"))
        else:
            results.append(RuleResult(path, text, rule.get("message", ""), "pass" if bool(ok) else "fail"))
    return results


def _objects(values_file: Path) -> list[dict[str, Any]]:
    return [o for o in helm.render(CHART, [values_file], helm="helm4", release="gpu-infra", namespace="gpu-infra")
            if (o.get("apiVersion"), o.get("kind")) in KARPENTER]


def _all_rules(registry: CrdRegistry) -> list[tuple[str, str]]:
    out = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            for rule in node.get("x-kubernetes-validations") or []:
                out.append((path, rule["rule"]))
            for key, sub in node.items():
                walk(sub, f"{path}/{key}")
        elif isinstance(node, list):
            for i, sub in enumerate(node):
                walk(sub, f"{path}[{i}]")

    for key in KARPENTER:
        walk(registry[key].openapi_schema, key[1])
    return out


@pytest.mark.parametrize("values_file", VALUES_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_cel_rules_hold(values_file: Path, crd_registry: CrdRegistry) -> None:
    objects = _objects(values_file)
    assert {o["kind"] for o in objects} == {"NodePool", "EC2NodeClass"}
    results = [r for o in objects for r in evaluate(o, crd_registry)]
    assert sum(r.outcome == "pass" for r in results) >= 20, "too few rules evaluated to mean anything"
    bad = [r for r in results if r.outcome not in ("pass", "transition")]
    assert not bad, "\n".join(f"{r.path}: {r.message} [{r.outcome}] ({r.rule})" for r in bad)


def test_unevaluated_rules_are_only_transition_rules(crd_registry: CrdRegistry) -> None:
    rules = _all_rules(crd_registry)
    transition = sorted({r for _, r in rules if "oldSelf" in r})
    # Compile every other rule once: a rule that cel-python cannot compile would be reported here.
    for _, rule in rules:
        if "oldSelf" not in rule:
            _program(rule)
    print(f"\n{len(rules)} CEL rules in the Karpenter CRDs; not evaluated (transition rules, update only):")
    for rule in transition:
        print(f"  {rule}")
    assert transition == sorted([
        "has(self.replicas) == has(oldSelf.replicas)",
        "self.group == oldSelf.group",
        "self.kind == oldSelf.kind",
    ])


def _nodepool(**spec_changes: Any) -> dict[str, Any]:
    obj = _objects(CHART / "ci" / "01-default-values.yaml")
    (np,) = [o for o in obj if o["kind"] == "NodePool"]
    np["spec"].update(spec_changes)
    return np


def _nodeclass(**spec_changes: Any) -> dict[str, Any]:
    obj = _objects(CHART / "ci" / "01-default-values.yaml")
    (nc,) = [o for o in obj if o["kind"] == "EC2NodeClass"]
    nc["spec"].update(spec_changes)
    return nc


def _failures(obj: dict[str, Any], registry: CrdRegistry) -> list[str]:
    return [r.message for r in evaluate(obj, registry) if r.outcome == "fail"]


def test_cel_catches_restricted_label(crd_registry: CrdRegistry) -> None:
    np = _nodepool()
    labels = np["spec"]["template"]["metadata"]["labels"]
    labels["karpenter.k8s.aws/instance-gpu-count"] = "8"  # on the allow list: no failure for it
    labels["karpenter.k8s.aws/team"] = "a"
    labels["karpenter.sh/registered"] = "true"
    labels["kubernetes.io/hostname"] = "n1"
    fails = _failures(np, crd_registry)
    assert sorted(fails) == sorted(['label domain "karpenter.k8s.aws" is restricted',
                                    'label domain "karpenter.sh" is restricted',
                                    'label "kubernetes.io/hostname" is restricted'])


def test_cel_catches_static_pool_with_weight(crd_registry: CrdRegistry) -> None:
    np = _nodepool(replicas=2)
    fails = _failures(np, crd_registry)
    assert "only 'limits.nodes' is supported on static NodePools" in fails
    assert "'weight' is not supported on static NodePools" in fails


def test_cel_catches_budget_schedule_without_duration(crd_registry: CrdRegistry) -> None:
    np = _nodepool()
    np["spec"]["disruption"]["budgets"] = [{"nodes": "0", "schedule": "@daily"}]
    assert "'schedule' must be set with 'duration'" in _failures(np, crd_registry)


def test_cel_catches_alias_with_other_terms(crd_registry: CrdRegistry) -> None:
    nc = _nodeclass(amiSelectorTerms=[{"alias": "al2023@v20260903"}, {"id": "ami-0abc"}])
    assert "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms" \
        in _failures(nc, crd_registry)


def test_cel_catches_role_and_instance_profile(crd_registry: CrdRegistry) -> None:
    nc = _nodeclass(instanceProfile="my-profile")
    assert "must specify exactly one of ['role', 'instanceProfile']" in _failures(nc, crd_registry)


def test_cel_catches_restricted_tag_and_two_root_volumes(crd_registry: CrdRegistry) -> None:
    nc = _nodeclass(tags={"kubernetes.io/cluster/x": "owned"})
    nc["spec"]["blockDeviceMappings"].append({"deviceName": "/dev/xvdb", "rootVolume": True, "ebs": {"volumeSize": "10Gi"}})
    fails = _failures(nc, crd_registry)
    assert "tag contains a restricted tag matching kubernetes.io/cluster/" in fails
    assert "must have only one blockDeviceMappings with rootVolume" in fails


def test_cel_catches_windows_alias_version(crd_registry: CrdRegistry) -> None:
    nc = _nodeclass(amiSelectorTerms=[{"alias": "windows2022@v1"}])
    assert "windows families may only specify version 'latest'" in _failures(nc, crd_registry)
