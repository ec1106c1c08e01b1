"""Human-readable forms of a Plan: the summary table, the full explanation, and the budget
table written into a scenario folder's README."""

from __future__ import annotations

from functools import lru_cache

import jinja2
from rich.table import Table

from vllm_eks.core.units import gib
from vllm_eks.planning import quota
from vllm_eks.spec.plan import Plan


def summary_rows(p: Plan) -> list[tuple[str, str]]:
    rows = [
        ("model", p.model if p.model_revision is None else f"{p.model} @ {p.model_revision} (Hugging Face Hub)"),
        ("instance", f"{p.instance} ({p.node.gpus_per_node} x {p.node.gpu}, {gib(p.node.gpu_memory_bytes)} each)"),
        ("topology", p.topology),
        ("vLLM sized for", f"{p.engine.vllm_version} (the image that runs the model)"),
        ("parallelism", f"TP={p.layout.tensor_parallel_size} x PP={p.layout.pipeline_parallel_size}, "
                        f"{p.layout.nodes_per_replica} node(s) per replica, {p.layout.replicas} replica(s)"),
        ("precision", f"{p.memory.dtype}, weights {p.memory.quantization or 'unquantized'}, "
                      f"KV cache {p.memory.kv_cache_dtype}"),
        ("weights", f"{gib(p.memory.weights_bytes_total)} total, {gib(p.memory.weights_bytes_per_gpu)} per GPU"),
        ("KV per token per GPU", f"{p.memory.kv_bytes_per_token_per_gpu:,} B"),
        ("KV cache per GPU", gib(p.memory.available_kv_cache_bytes_per_gpu)),
        ("KV cache tokens", f"{p.memory.kv_cache_tokens:,} (block size {p.memory.block_size})"),
        ("max model len", _max_model_len(p)),
        ("max concurrency", f"{p.memory.max_concurrency:.2f}x at {p.memory.max_model_len:,} tokens"),
        ("gpu memory utilization", f"{p.engine.gpu_memory_utilization:g}"),
        ("max num seqs / batched tokens", f"{p.engine.max_num_seqs} / {p.engine.max_num_batched_tokens}"),
        ("/dev/shm", gib(p.pod.shm_size_bytes)),
        ("pod requests", f"{p.layout.gpus_per_pod} GPU, {p.pod.cpu_request_millicores}m CPU, "
                         f"{gib(p.pod.memory_request_bytes)} memory, "
                         f"{gib(p.pod.ephemeral_storage_bytes)} ephemeral, {p.pod.efa_devices_per_pod} EFA"),
        ("startup probe budget", f"{p.pod.startup_probe_seconds} s (cold start-up; warm {p.pod.warm_startup_seconds} s "
                                 f"on --cache {p.pod.cache})"),
        ("grace period", f"{p.pod.termination_grace_period_seconds} s (preStop {p.pod.prestop_seconds} s, "
                         f"--shutdown-timeout {p.pod.shutdown_timeout_seconds} s)"),
        ("cost per replica", f"${p.cost.cost_per_hour_usd:.2f}/h" if p.cost.cost_per_hour_usd is not None
                             else "unknown price (give --price-per-hour)"),
    ]
    outside = _outside_catalog(p)
    if outside:
        rows.insert(2, ("node figures", outside))
    if p.quota is not None:
        rows.append(("EC2 vCPU quota", quota.summary(p.quota)))
    if p.kv_offload is not None:
        o = p.kv_offload
        rows.append(("KV offload to host", f"{gib(o.kv_offload_bytes)} (--kv-offloading-size {o.kv_offload_gib:g}), "
                                           f"+{o.kv_offload_tokens:,} prefix tokens, in /dev/shm"))
    if p.staging is not None:
        s = p.staging
        where = s.staging_s3_uri or (f"claim {s.staging_claim_name}" if s.staging_claim_name
                                     else f"a {gib(s.staging_claim_bytes or 0)} claim the chart creates")
        rows.append(("staging Job", f"{s.staging_repo}@{s.staging_revision} -> {where}; ~{s.staging_copy_seconds} s, "
                                    f"deadline {s.staging_deadline_seconds} s"))
    return rows


def _outside_catalog(p: Plan) -> str | None:
    """Where the node's figures came from when it is outside the catalog (the node_allocatable
    derivation hardware.node_plan writes), or which flags would give them; None in the catalog."""
    d = next((d for d in p.node.derivations if d.key == "node_allocatable"), None)
    if d is None:
        return None
    if d.value == "unknown":
        return "outside the catalog: pod CPU/memory are defaults, vCPUs unknown (give --vcpus and --memory-gib)"
    return f"{d.value}; {d.source.split(': ', 1)[0]}" if d.source.startswith("EC2 ") else f"{d.value}; {d.source}"


def _max_model_len(p: Plan) -> str:
    """max_model_len, and why when it is below the model's own maximum (its derivation)."""
    text = f"{p.memory.max_model_len:,}"
    limit = p.memory.model_max_len
    if limit is None or p.memory.max_model_len >= limit:
        return text
    why = next((d.formula for d in p.memory.derivations if d.key == "max_model_len"), "")
    return f"{text}, below the model's {limit:,}" + (f": {why}" if why else "")


def summary_table(p: Plan) -> Table:
    t = Table(title=f"vllm-eks plan: {p.model} on {p.instance}", show_header=False)
    t.add_column("key", style="bold")
    t.add_column("value")
    for k, v in summary_rows(p):
        t.add_row(k, v)
    return t


def explanation_text(p: Plan) -> str:
    lines = [f"Plan for {p.model} on {p.instance}, sized for vLLM {p.engine.vllm_version}", ""]
    for d in p.derivations:
        lines.append(f"{d.key} = {d.value}")
        lines.append(f"    = {d.formula}")
        if d.source:
            lines.append(f"    why: {d.source}")
    lines += ["", "vllm serve <model> " + " ".join(p.engine_args)]
    return "\n".join(lines) + "\n"


@lru_cache(maxsize=1)
def _templates() -> jinja2.Environment:
    # Markdown, not HTML: nothing to escape; trim_blocks keeps the loops from adding blank lines.
    return jinja2.Environment(loader=jinja2.PackageLoader("vllm_eks.output", "templates"), autoescape=False,
                              trim_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined)


def scenario_readme(p: Plan, command: str) -> str:
    """The README of a scenario folder: the command, the summary, every derivation, the args."""
    return _templates().get_template("scenario-readme.md.j2").render(plan=p, command=command,
                                                                      summary=summary_rows(p))
