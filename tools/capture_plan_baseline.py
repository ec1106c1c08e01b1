"""Record `plan --json` for every catalog model x instance (and the request variants users
script against) so a test can hold later code to the same keys and values.

    python tools/capture_plan_baseline.py tests/unit/data/plan-baseline.json.gz

Run it with the code of the release the test should compare against; the file names that
release's commit. A request the planner refuses is recorded as refused, with its message."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

from vllm_eks.catalog.instances import instance_catalog
from vllm_eks.catalog.models import model_catalog
from vllm_eks.core.errors import VllmEksError
from vllm_eks.planning.planner import make_plan
from vllm_eks.spec.request import PlanRequest

# Request variants beyond the defaults: each toggles one planner path.
VARIANTS: dict[str, dict] = {
    "default": {},
    "ray-serve": {"topology": "ray-serve"},
    "disaggregated": {"topology": "disaggregated", "max_model_len": 4096},
    "fp8-kv-fp8": {"quantization": "fp8", "kv_cache_dtype": "fp8"},
    "kv-pin": {"kv_cache_memory_gib": 8},
    "s3-no-async": {"model_source": "s3://bucket/model", "async_scheduling": False},
    "concurrency-64": {"target_concurrency": 64, "max_model_len": 8192},
}


def capture() -> dict:
    out: dict[str, dict] = {}
    for model in sorted(model_catalog()):
        for instance in sorted(instance_catalog()):
            for variant, extra in VARIANTS.items():
                key = f"{model}|{instance}|{variant}"
                try:
                    plan = make_plan(PlanRequest(model=model, instance=instance, **extra)).json_summary()
                    # A derivation's formula is prose that may be reworded; key and value are data.
                    plan["derivations"] = [[d["key"], d["value"]] for d in plan["derivations"]]
                    out[key] = plan
                except VllmEksError as exc:
                    out[key] = {"refused": str(exc)}
    return out


def main() -> None:
    dest = Path(sys.argv[1])
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    doc = {"commit": commit, "variants": VARIANTS, "plans": capture()}
    dest.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(dest, "wt", encoding="utf-8") as f:
        json.dump(doc, f, sort_keys=True, separators=(",", ":"))
    print(f"{dest}: {len(doc['plans'])} requests from {commit[:10]}")


if __name__ == "__main__":
    main()
