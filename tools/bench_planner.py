"""Time to plan every catalog model on every catalog instance (target: under 1 s in total).

A pair that does not fit still counts: the planner searches every layout and the alternatives
before it says so, which is the slow path."""

from __future__ import annotations

import time

from vllm_eks.catalog.instances import instance_catalog
from vllm_eks.catalog.models import model_catalog
from vllm_eks.core.errors import VllmEksError
from vllm_eks.planning.planner import make_plan
from vllm_eks.spec.request import PlanRequest


def main() -> None:
    models, instances = sorted(model_catalog()), sorted(instance_catalog())
    try:  # load the catalogs once; the first pair may well not fit
        make_plan(PlanRequest(model=models[0], instance=instances[0]))
    except VllmEksError:
        pass
    fits = refused = 0
    start = time.perf_counter()
    for m in models:
        for i in instances:
            try:
                make_plan(PlanRequest(model=m, instance=i))
                fits += 1
            except VllmEksError:
                refused += 1
    elapsed = time.perf_counter() - start
    total = fits + refused
    print(f"planner: {total} model x instance pairs ({len(models)} models x {len(instances)} instances), "
          f"{fits} planned, {refused} refused, {elapsed:.3f} s total, {elapsed / total * 1000:.1f} ms per pair "
          f"(target < 1 s total)")


if __name__ == "__main__":
    main()
