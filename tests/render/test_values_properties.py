"""Property tests of the three charts' values handling: generated values files, rendered with the
real helm binary, either render a release that is right or are refused with one clear error that
names a key the values changed. Never a template crash, never a manifest that exits 0 but is wrong.

Each example takes a seed (the chart's own defaults, or a committed values/<scenario>/<chart>.yaml)
and applies 1-3 mutations at paths that exist in the seed coalesced over the chart's values.yaml:
set a leaf or a whole subtree to a hostile value (null, wrong types, empty strings, negative, zero
and huge numbers, floats where integers belong, strings Kubernetes refuses in names and labels,
quantities and booleans spelled as strings), delete a key (null in a values file deletes the
default, as Helm coalesces; a list item is removed), add an unknown key (also label keys the
charts set themselves), or set a leaf to another valid value (an enum member of the schema, a
nearby number, a flipped boolean, a fitting string), weighted so that about a third of the
examples or more render and exercise the success path. EXCLUDED lists the keys never mutated.

The oracle (tests/harness/render_oracle.py):
- helm exits 0: the output parses (no key written twice), every object validates strictly against
  Kubernetes (one minor per example, drawn) and the pinned CRDs, metadata and selectors follow the
  API server's syntax, every workload's selector selects its template and every Service,
  PodDisruptionBudget and NetworkPolicy selects a pod of the release, requests are at most limits,
  a memory-backed /dev/shm fits in the memory limit of each container mounting it, Pod Security
  restricted holds (vllm-inference, unless securityContext.allowRoot opts out; gpu-infra's
  DaemonSets need host access by design), and no string shows a template leak;
- helm exits non-zero: no template crash, the message is the schema's report or the chart's
  "invalid values" block, and it names one of the mutated keys (itself, an ancestor or a
  descendant; a cross-field rule may name the other keys of its rule, listed in RELATED, and a
  gpu-infra poolDefaults key is checked, and named, as each pool's own, listed in INHERITED).
The last tests feed the oracle hand-made wrong releases and bad refusals: it must report them.

`settings(derandomize=True, database=None)`: every run draws the same examples, so CI is
reproducible. VLLM_EKS_VALUES_EXAMPLES sets the examples per chart (default 300; lower it while
developing). Helm 3 and Helm 4 alternate across the examples (drawn per example) instead of each
rendering every example: the count per chart is the total of both. The session summary prints how
many examples rendered and how many were refused, per chart and helm version; each chart's test
fails when fewer than EXAMPLES ran or fewer than a fifth rendered."""

from __future__ import annotations

import copy
import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.harness import KUBE_VERSIONS, helm, render_oracle, summary
from tests.harness.key_paths import names_key
from tests.harness.paths import ROOT, VALUES
from tests.harness.timing import timed

pytestmark = pytest.mark.render

EXAMPLES_ENV = "VLLM_EKS_VALUES_EXAMPLES"
EXAMPLES = int(os.environ.get(EXAMPLES_ENV, "300"))
CHARTS = ("vllm-inference", "gpu-infra", "observability")
# Release and namespace the committed scenarios are written for (gpu-infra: its own namespace).
RELEASE = {"vllm-inference": "vllm", "gpu-infra": "gpu-infra", "observability": "vllm"}
NAMESPACE = {"vllm-inference": "llm", "gpu-infra": "gpu-infra", "observability": "llm"}
SUMMARY_SECTION = "generated values files (tests/render/test_values_properties.py)"

Path_ = tuple[str | int, ...]

# Keys never mutated, each with the reason.
EXCLUDED: dict[str, dict[Path_, str]] = {
    "vllm-inference": {},
    # ec2Tags: another change adds the reserved-tag-key rule (validateValues for ec2Tags), with
    # its own tests; until then a tag such as vllm-eks.io/pool renders twice into the EC2NodeClass.
    "gpu-infra": {("ec2Tags",): "reserved tag keys: covered by the ec2Tags rule and its tests"},
    "observability": {},
}

# Keys a chart's rules check on another key's behalf (value prefix -> where the rules see it):
# every gpu-infra pool inherits poolDefaults, and the rules check and name each pool's effective
# value, pools[i].<key>.
INHERITED: dict[str, dict[str, str]] = {
    "vllm-inference": {},
    "gpu-infra": {"poolDefaults": "pools[*]"},
    "observability": {},
}

# Cross-field rules whose message names the other keys of the rule (the key to change may be
# either): key -> keys its rules may name instead ([*]: any item of that list). Each entry is a
# validateValues rule of the chart (listed in its templates/_validate.tpl).
RELATED: dict[str, dict[str, tuple[str, ...]]] = {
    "vllm-inference": {
        # The rules that hold for one topology only name their own keys, the topology aside:
        # pipelineParallel (multi-node: groupSize = pipelineParallelSize), groupRollout
        # (multi-node: strategy.type), imageCapabilities (the topology picks image or ray.image),
        # rayModelSource (a streaming load_format with model.source s3), rayServeReplicas, engineKwargsChartOwned and
        # kvTransfer (the Ray topologies' sections), engineArgsChartOwned (multi-node owns more
        # flags of engine.args/extraArgs).
        "topology": ("multiNode.groupSize", "engine.pipelineParallelSize", "strategy.type", "image.provides",
                     "ray.image.provides", "model.source", "rayServe", "disaggregated", "engine.args",
                     "engine.extraArgs", "routing.mode", "apiKey.existingSecret"),
        # routing: gateway needs parentRefs and a topology the InferencePool can select; alb needs
        # the certificate and, with the NetworkPolicy on, the ALB's source CIDRs; either may make
        # extraEnv / engine.args repeat what the chart sets.
        "routing.mode": ("routing.gateway", "routing.alb", "extraEnv", "topology", "networkPolicy.albSourceCidrs"),
        "networkPolicy.enabled": ("networkPolicy.albSourceCidrs", "networkPolicy.allowedNamespaces"),
        "apiKey.existingSecret": ("extraEnv", "engine.args", "engine.extraArgs", "topology"),
        "ray.version": ("rayServe.requestRouter",),
    },
    "gpu-infra": {
        # efaDevicePlugin (a pool with efa needs the plugin) and efaZone (one zone)
        "pools[*].efa": ("efaDevicePlugin.enabled", "pools[*].zones"),
        # reservedCapacity: capacity type reserved and capacityReservations go together
        "pools[*].capacityTypes": ("pools[*].capacityReservations",),
        "pools[*].capacityReservations": ("pools[*].capacityTypes",),
        # rootVolumeThroughput: throughput at most iops/4
        "pools[*].rootVolume.iops": ("pools[*].rootVolume.throughput",),
    },
    "observability": {},
}


# --- the charts and their seeds ----------------------------------------------------------------

@dataclass(frozen=True, repr=False)
class Chart:
    name: str
    directory: Path
    defaults: dict[str, Any]
    schema: dict[str, Any]
    seeds: tuple[tuple[str, dict[str, Any]], ...]   # (label, values document); {} = the defaults

    def __repr__(self) -> str:  # hypothesis shows strategies' arguments: not the whole schema
        return f"Chart({self.name!r})"


@lru_cache(maxsize=None)
def load_chart(name: str) -> Chart:
    directory = ROOT / "charts" / name
    seeds = [("defaults", {})] + [
        (str(f.relative_to(ROOT)), yaml.safe_load(f.read_text()) or {})
        for f in sorted(VALUES.glob(f"*/{name}.yaml"))]
    return Chart(name, directory, yaml.safe_load((directory / "values.yaml").read_text()) or {},
                 json.loads((directory / "values.schema.json").read_text()), tuple(seeds))


# --- values trees --------------------------------------------------------------------------------

def coalesce(defaults: Any, user: Any) -> Any:
    """The values a template sees: `user` over `defaults` as Helm coalesces them (maps merge key by
    key, anything else replaces, a null deletes a key the defaults have)."""
    if not isinstance(defaults, dict) or not isinstance(user, dict):
        return copy.deepcopy(user)
    out = copy.deepcopy(user)
    for key, default in defaults.items():
        if key not in user:
            out[key] = copy.deepcopy(default)
        elif user[key] is None:
            del out[key]
        else:
            out[key] = coalesce(default, user[key])
    return out


def key_path(path: Path_) -> str:
    """('pools', 0, 'name') -> 'pools[0].name' (the charts' own spelling)."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def node_paths(tree: Any, prefix: Path_ = ()) -> list[Path_]:
    """Every key and list item under `tree`, parents before children."""
    out: list[Path_] = []
    items = tree.items() if isinstance(tree, dict) else enumerate(tree) if isinstance(tree, list) else ()
    for key, value in items:
        out.append(prefix + (key,))
        out += node_paths(value, prefix + (key,))
    return out


def get(tree: Any, path: Path_) -> Any:
    for part in path:
        tree = tree[part]
    return tree


def _container(doc: dict[str, Any], merged: dict[str, Any], path: Path_) -> Any:
    """The user document's node at `path`, created as needed: a map the user left out starts
    empty (the defaults fill in the rest), a list is copied whole (Helm replaces lists)."""
    node: Any = doc
    for i, part in enumerate(path):
        here = path[:i + 1]
        child = node[part] if (isinstance(node, list) or part in node) else None
        if not isinstance(child, (dict, list)):
            target = get(merged, here)
            child = copy.deepcopy(target) if isinstance(target, list) else {}
            node[part] = child
        node = child
    return node


# --- mutations -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Mutation:
    kind: str            # set (hostile value), valid (another valid value), delete, unknown (new key)
    path: Path_          # the key set, deleted or added
    value: Any = None

    def apply(self, doc: dict[str, Any], merged: dict[str, Any]) -> None:
        parent = _container(doc, merged, self.path[:-1])
        last = self.path[-1]
        if self.kind == "delete" and isinstance(parent, list):
            del parent[last]
        elif self.kind == "delete":
            parent[last] = None  # Helm: a null deletes the chart's default
        else:
            parent[last] = copy.deepcopy(self.value)

    def __str__(self) -> str:
        shown = "" if self.kind == "delete" else f" = {self.value!r:.120}"
        return f"{self.kind} {key_path(self.path)}{shown}"


# Strings Kubernetes refuses in names, label keys or values, or that only look like numbers,
# quantities or booleans. None contains a template-leak marker (render_oracle.LEAKS): a value
# echoed into the manifest must not look like a leak.
HOSTILE_STRINGS = [
    "", " ", "UPPER", "a_b", "a/b", "a+b", "has space", "x" * 64, "y" * 254, "ünïcödé", "模型", "-a", "a-",
    "a.", ".a", "a..b", "1.5Gi", "0", "-1", "-1Gi", "1e3", "1.5", "2Gi ", "0.0001m", "true", "false",
    "yes", "null", "~", "0x10", "1_000", "*", "'", '"', "a: b", "- x", "#x", "{{ .Values }}", "${x}",
    "a\nb", "\t", "s3://", "hf_" + "Fuzz0" * 5, "AKIA" + "FUZZ" * 4,
]
HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    # 10**6 and up: Helm prints float64 values from 1e+06 on in exponent form
    st.sampled_from([0, -1, 1, 2, 3, 7, 64, 65536, 10**6, 2**31 - 1, 2**31, 2**53, -2**31, 10**12]),
    st.sampled_from([0.5, 1.5, -0.5, 2.0, 1e20, 1e-9]),
    st.sampled_from(HOSTILE_STRINGS),
    st.text(alphabet=st.sampled_from("aZ9-_./+ :é"), max_size=70).filter(
        lambda s: not any(leak in s for leak in render_oracle.LEAKS)),
    st.sampled_from([[], [None], ["a"], [1], [{}], {}, {"a": 1}, {"": "x"}, {"UPPER_key": "v"}]),
)
# Names of keys added where the schema expects none (and of entries in free-form maps such as
# labels, where some are valid label keys and some are not).
NEW_KEYS = st.sampled_from(["bogus", "enabled", "Name", "name2", "extra_key", "a/b", "example.com/team",
                            "team", "-x", "has space", "x" * 64, "ünï",
                            # labels the charts set themselves (a user label of the same key)
                            "app.kubernetes.io/name", "app.kubernetes.io/instance", "vllm-eks.io/pool"])

# Strings tried as valid values of a string key: kept when they match the key's schema.
VALID_STRINGS = [
    "abc", "team-a", "llm", "my-cluster-2", "us-east-1a", "us-west-2b", "g5.xlarge", "p5.48xlarge", "10m",
    "250m", "1", "2", "512Mi", "2Gi", "24Gi", "100Gi", "30s", "1m", "5m", "1h", "2h30m", "15s", "Never",
    "v1.2.3", "1.2.3", "v20260101", "latest", "https://example.com/runbooks", "http://prom.monitoring:9090",
    "/models/llama", "/models", "/metrics", "cr-0abc123", "pg-0123456789abcdef0", "123456789012",
    "ml-platform", "karpenter.sh/discovery", "example.com/team", "Qwen/Qwen2.5-0.5B-Instruct",
    "sha256:" + "ab" * 32, "vllm", "http", "metrics", "kube-prometheus-stack", "25%", "0%", "WARN", "",
]


def schema_at(schema: dict[str, Any], path: Path_) -> dict[str, Any]:
    """The schema node describing the value at `path` ({} when the schema says nothing)."""
    node = schema
    for part in path:
        branches = node.get("anyOf") or [node]
        node = next((b for b in branches if b.get("type") in ("object", "array")), branches[0])
        if isinstance(part, int):
            node = node.get("items") or {}
        elif part in (node.get("properties") or {}):
            node = node["properties"][part]
        elif any(re.search(p, part) for p in node.get("patternProperties") or {}):
            node = next(v for p, v in node["patternProperties"].items() if re.search(p, part))
        elif isinstance(node.get("additionalProperties"), dict):
            node = node["additionalProperties"]
        else:
            return {}
    return node


def _fits(node: dict[str, Any], text: str) -> bool:
    if not node.get("minLength", 0) <= len(text) <= node.get("maxLength", 10**9):
        return False
    try:
        return re.search(node.get("pattern", ""), text) is not None
    except re.error:  # an RE2 class Python's re lacks (\p{L}): no string is offered there
        return False


def _numbers(node: dict[str, Any], current: Any, integer: bool) -> list[Any]:
    low = node.get("minimum", node.get("exclusiveMinimum"))
    high = node.get("maximum", node.get("exclusiveMaximum"))
    base = current if isinstance(current, (int, float)) and not isinstance(current, bool) else (low or 1)
    step = 1 if integer else base / 2 or 0.1
    out = [base + step, base - step, base * 2, low, high, (low or 0) + 1]
    out = [int(x) if integer else float(x) for x in out if x is not None]
    return [x for x in out if (low is None or x > low or (x == low and "minimum" in node))
            and (high is None or x < high or (x == high and "maximum" in node))]


def valid_alternatives(node: dict[str, Any], current: Any) -> list[Any]:
    """Other values the schema allows at a key (enum members, nearby numbers, the other boolean,
    fitting strings, shorter lists); [current] when none is known."""
    out: list[Any] = []
    for branch in node.get("anyOf") or [node]:
        kind = branch.get("type")
        if "enum" in branch:
            out += branch["enum"]
        elif kind == "boolean":
            out += [True, False]
        elif kind in ("integer", "number"):
            out += _numbers(branch, current, kind == "integer")
        elif kind == "string":
            out += [s for s in VALID_STRINGS if _fits(branch, s)]
        elif kind == "array" and isinstance(current, list):
            items = branch.get("items") or {}
            out += [[e] for e in items.get("enum", [])] + [current[:1]]
            if branch.get("minItems", 0) == 0:
                out.append([])
        elif kind == "object" and (isinstance(branch.get("additionalProperties"), dict)
                                   or "patternProperties" in branch):
            out += [{}, {"team": "ml-platform"}]  # a label map, an annotation map, a free-form map
    return [v for v in out if v != current] or [current]


def mutation(chart: Chart, merged: dict[str, Any]) -> st.SearchStrategy[Mutation]:
    """One mutation at a path of `merged` (the values the templates would see)."""
    excluded = EXCLUDED[chart.name]
    paths = [p for p in node_paths(merged) if not any(p[:len(x)] == x for x in excluded)]
    leaves = [p for p in paths if not isinstance(get(merged, p), (dict, list)) or not get(merged, p)]
    parents = [()] + [p for p in paths if isinstance(get(merged, p), dict)]

    def valid(path: Path_) -> st.SearchStrategy[Mutation]:
        options = valid_alternatives(schema_at(chart.schema, path), get(merged, path))
        return st.sampled_from(options).map(lambda v: Mutation("valid", path, v))

    return st.one_of(
        # another valid value, weighted up so that about a third of the examples render
        st.sampled_from(leaves).flatmap(valid),
        st.sampled_from(leaves).flatmap(valid),
        st.sampled_from(leaves).flatmap(valid),
        st.sampled_from(leaves).flatmap(valid),
        st.builds(Mutation, st.just("set"), st.sampled_from(paths), HOSTILE),
        st.builds(Mutation, st.just("delete"), st.sampled_from(paths)),
        st.builds(lambda parent, key, value: Mutation("unknown", parent + (key,), value),
                  st.sampled_from(parents), NEW_KEYS, st.one_of(st.just("x"), HOSTILE)),
    )


@dataclass
class Example:
    seed: str
    mutations: list[Mutation]
    document: dict[str, Any] = field(repr=False)   # the values file written
    values: dict[str, Any] = field(repr=False)     # what the templates see (document over the defaults)
    helm: str = "helm4"
    kube_version: str = "1.33"

    def describe(self) -> str:
        return (f"seed {self.seed}, {self.helm}, Kubernetes {self.kube_version}; mutations:\n  "
                + "\n  ".join(map(str, self.mutations)) + "\nvalues file:\n"
                + yaml.safe_dump(self.document, sort_keys=False, allow_unicode=True))


@st.composite
def examples(draw: st.DrawFn, chart: Chart) -> Example:
    seed, seed_doc = draw(st.sampled_from(chart.seeds))
    document = copy.deepcopy(seed_doc)
    merged = coalesce(chart.defaults, document)
    done = []
    # mostly one mutation: every extra one makes a refusal likelier
    for _ in range(draw(st.sampled_from([1, 1, 2, 3]))):
        m = draw(mutation(chart, merged))
        m.apply(document, merged)
        merged = coalesce(chart.defaults, document)
        done.append(m)
    return Example(seed, done, document, merged, draw(st.sampled_from(sorted(helm.HELM_VERSIONS))),
                   draw(st.sampled_from(KUBE_VERSIONS)))


# --- the oracle ----------------------------------------------------------------------------------

def restricted_applies(chart: str, values: dict[str, Any]) -> bool:
    """Pod Security restricted is required of vllm-inference unless securityContext.allowRoot opts
    out; gpu-infra's DaemonSets need host access (a namespace labelled privileged, docs/gpu-infra.md)."""
    if chart == "gpu-infra":
        return False
    security = values.get("securityContext")
    return not (isinstance(security, dict) and security.get("allowRoot") is True)


def _wildcard(pattern: str) -> re.Pattern[str]:
    return re.compile(re.escape(pattern).replace(r"\[\*\]", r"\[\d+\]"))


def _expand(key: str, values: dict[str, Any]) -> list[str]:
    """'pools[*].zones' -> 'pools[0].zones', ... for each item of that list in the values."""
    if "[*]" not in key:
        return [key]
    head, _, rest = key.partition("[*]")
    items = values.get(head) if "." not in head else None
    count = len(items) if isinstance(items, list) else 4
    return [k for i in range(count) for k in _expand(f"{head}[{i}]{rest}", values)]


def named_keys(chart: str, mutations: list[Mutation], values: dict[str, Any]) -> list[str]:
    """Keys a refusal may name: each mutated key and its ancestors; for the key itself also where
    its chart's rules see it (INHERITED) and the keys RELATED to it (not for the ancestors: a rule
    about pools[i].rootVolume.throughput does not name poolDefaults.rootVolume.encrypted)."""
    keys: list[str] = []
    for m in mutations:
        key = key_path(m.path)
        keys += [key_path(m.path[:end]) for end in range(len(m.path) - 1, 0, -1)]
        seen = [key] + [to + key[len(src):] for src, to in INHERITED[chart].items()
                        if key == src or key.startswith((src + ".", src + "["))]
        for k in (e for k in seen for e in _expand(k, values)):
            keys.append(k)
            for pattern, related in RELATED[chart].items():
                if _wildcard(pattern).fullmatch(k):
                    keys += [e for r in related for e in _expand(r, values)]
    return keys


def names_a_mutated_key(message: str, chart: str, mutations: list[Mutation], values: dict[str, Any]) -> bool:
    return any(names_key(message, key) for key in named_keys(chart, mutations, values))


def check_example(chart: Chart, example: Example, values_file: Path, crd_registry) -> str:
    """Render the example; fail with the problems the oracle finds. Returns 'rendered' or 'rejected'."""
    values_file.write_text(yaml.safe_dump(example.document, sort_keys=False, allow_unicode=True))
    try:
        text = helm.template_text(chart.directory, [values_file], helm=example.helm,
                                  release=RELEASE[chart.name], namespace=NAMESPACE[chart.name])
    except helm.HelmError as err:
        message = err.stderr
        problems = render_oracle.rejection_problems(message, chart.name)
        if not names_a_mutated_key(message, chart.name, example.mutations, example.values):
            problems.append("names none of the mutated keys")
        assert not problems, f"{'; '.join(problems)}\n{example.describe()}\nhelm said:\n{message}"
        return "rejected"
    try:
        objects = helm.load_documents(text)
    except (yaml.YAMLError, ValueError) as exc:  # e.g. a key written twice: the API server refuses it
        raise AssertionError(f"helm exited 0 but its output does not parse: {exc}\n{example.describe()}") from None
    problems = render_oracle.manifest_problems(objects, crd_registry, example.kube_version,
                                               restricted=restricted_applies(chart.name, example.values))
    assert not problems, ("helm exited 0 but the release is wrong:\n  " + "\n  ".join(problems)
                          + f"\n{example.describe()}")
    return "rendered"


# --- the tests -------------------------------------------------------------------------------------

@pytest.mark.parametrize("chart_name", CHARTS)
def test_generated_values_render_right_or_are_refused_naming_a_key(
        chart_name: str, crd_registry, tmp_path: Path) -> None:
    chart = load_chart(chart_name)
    tally: Counter[tuple[str, str]] = Counter()
    values_file = tmp_path / "values.yaml"

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(example=examples(chart))
    def run(example: Example) -> None:
        outcome = check_example(chart, example, values_file, crd_registry)
        tally[(example.helm, outcome)] += 1

    with timed(f"{chart_name}: {EXAMPLES} generated values files"):
        run()
    total = sum(tally.values())
    rendered = sum(n for (_, outcome), n in tally.items() if outcome == "rendered")
    per_helm = ", ".join(f"{h}: {tally[(h, 'rendered')]} rendered / {tally[(h, 'rejected')]} refused"
                         for h in sorted(helm.HELM_VERSIONS))
    summary.add(SUMMARY_SECTION, f"{chart_name}: {total} examples, {rendered} rendered "
                                 f"({rendered / max(total, 1):.0%}), {total - rendered} refused ({per_helm})")
    assert total >= EXAMPLES, f"only {total} examples ran"
    # The success path must be exercised, not only the refusals (about a third render by design).
    assert rendered >= total // 5, f"only {rendered} of {total} examples rendered"


# --- the oracle itself -----------------------------------------------------------------------------

def _good_release() -> list[dict[str, Any]]:
    """A Deployment and its Service that pass every check of the oracle."""
    labels = {"app.kubernetes.io/name": "demo"}
    container = {
        "name": "server", "image": "demo:1",
        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "2Gi"}},
        "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}],
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                            "readOnlyRootFilesystem": True}}
    pod = {"securityContext": {"runAsNonRoot": True, "runAsUser": 10001, "seccompProfile": {"type": "RuntimeDefault"}},
           "containers": [container], "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}]}
    return [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "demo", "namespace": "llm", "labels": labels},
         "spec": {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": pod}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "demo", "namespace": "llm"},
         "spec": {"selector": labels, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}},
    ]


@pytest.mark.parametrize("spoil, reported", [
    (lambda d, s: d["spec"]["template"]["metadata"].update(labels={"app.kubernetes.io/name": "other"}),
     "does not match the template labels"),
    (lambda d, s: s["spec"].update(selector={"app.kubernetes.io/name": "nobody"}), "selects none of the pods"),
    (lambda d, s: d["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"].update(memory="3Gi"),
     "is above the limit"),
    (lambda d, s: d["spec"]["template"]["spec"]["volumes"][0]["emptyDir"].update(sizeLimit="4Gi"),
     "/dev/shm sizeLimit 4Gi is above the memory limit"),
    (lambda d, s: d["spec"]["template"]["spec"]["containers"][0].update(args=["--model", "<no value>"]), "<no value>"),
    (lambda d, s: d["spec"]["template"]["spec"]["containers"][0].update(args=["%!d(string=x)"]), "'%!'"),
    (lambda d, s: d["metadata"]["labels"].update(team="map[a:1]"), "map["),
    (lambda d, s: d["spec"]["template"]["spec"]["securityContext"].pop("runAsNonRoot"), "Running as Non-root"),
    (lambda d, s: d["spec"]["template"]["metadata"]["labels"].update({"Team_A/x": "a"}), "label key 'Team_A/x'"),
    (lambda d, s: d["spec"].update(replicas=2**31), "int32"),
    (lambda d, s: d["spec"]["template"]["spec"]["containers"][0].update(bogus=1), "unknown field"),
], ids=["selector", "service-selects-nothing", "requests-above-limits", "shm-above-memory", "no-value",
        "printf-error", "printed-map", "pod-security", "label-key", "int32", "unknown-field"])
def test_the_oracle_reports_a_wrong_release(spoil, reported: str, crd_registry) -> None:
    """manifest_problems finds each way a release can exit 0 and still be wrong, and nothing in a
    right one."""
    assert render_oracle.manifest_problems(_good_release(), crd_registry, "1.33") == []
    deployment, service = objects = _good_release()
    spoil(deployment, service)
    problems = render_oracle.manifest_problems(objects, crd_registry, "1.33")
    assert any(reported in p for p in problems), problems


def test_the_oracle_reports_a_bad_refusal() -> None:
    """A template crash, a message that is no schema report or validate block, and one that names
    none of the changed keys are all failures; the two clean forms of refusal are not."""
    crash = ('Error: template: vllm-inference/templates/_pod.tpl:12:3: executing "x" at <.Values.model.name>: '
             "nil pointer evaluating interface {}.name")
    assert any("template crash" in p for p in render_oracle.rejection_problems(crash, "vllm-inference"))
    assert render_oracle.rejection_problems("Error: YAML parse error on x.yaml: line 3", "gpu-infra")
    schema = ("Error: values don't meet the specifications of the schema(s) in the following chart(s):\n"
              "vllm-inference:\n- at '/probes/startup/periodSeconds': got string, want integer\n")
    validate = "Error: execution error at (x): \n\nvllm-inference: invalid values:\n- drain.preStopSeconds (9) ...\n"
    assert render_oracle.rejection_problems(schema, "vllm-inference") == []
    assert render_oracle.rejection_problems(validate, "vllm-inference") == []
    changed = [Mutation("set", ("probes", "startup", "periodSeconds"), "x")]
    assert names_a_mutated_key(schema, "vllm-inference", changed, {})
    assert not names_a_mutated_key(validate, "vllm-inference", changed, {})
    # a related key counts only where RELATED lists it; an inherited one only as the pool's own
    assert names_a_mutated_key("- multiNode.groupSize (2) must equal ...", "vllm-inference",
                               [Mutation("valid", ("topology",), "multi-node")], {})
    assert not names_a_mutated_key("- multiNode.groupSize (2) must equal ...", "vllm-inference",
                                   [Mutation("valid", ("replicas",), 2)], {})
    pools = {"pools": [{"name": "a"}, {"name": "b"}]}
    encrypted = [Mutation("valid", ("poolDefaults", "rootVolume", "encrypted"), False)]
    assert names_a_mutated_key("  - pools[1].rootVolume.encrypted: false leaves ...", "gpu-infra", encrypted, pools)
    assert not names_a_mutated_key("  - pools[1].rootVolume.throughput: ...", "gpu-infra", encrypted, pools)
    # inherited, then related: poolDefaults.efa is each pool's efa, whose rule names the plugin
    efa = [Mutation("valid", ("poolDefaults", "efa"), True)]
    assert names_a_mutated_key("  - efaDevicePlugin.enabled: must be true ...", "gpu-infra", efa, pools)


def test_mutations_follow_helm_coalescing() -> None:
    """A deleted key is a null (Helm then drops the chart's default), a list is replaced whole,
    a map the values file left out starts empty."""
    defaults = {"a": {"b": 1, "c": 2}, "l": [{"x": 1}, {"x": 2}], "keep": 3}
    merged = coalesce(defaults, {})
    doc: dict[str, Any] = {}
    Mutation("delete", ("a", "b")).apply(doc, merged)
    Mutation("set", ("l", 1, "x"), "bad").apply(doc, merged)
    assert doc == {"a": {"b": None}, "l": [{"x": 1}, {"x": "bad"}]}
    assert coalesce(defaults, doc) == {"a": {"c": 2}, "l": [{"x": 1}, {"x": "bad"}], "keep": 3}
    Mutation("delete", ("l", 0)).apply(doc, coalesce(defaults, doc))
    assert coalesce(defaults, doc)["l"] == [{"x": "bad"}]
