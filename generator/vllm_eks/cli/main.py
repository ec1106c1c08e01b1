"""`vllm-eks`: plan, explain and write Helm values for vLLM on EKS.

Exit codes: 0 ok; 1 bad input (one line on stderr naming the flag or file); 2 usage."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from vllm_eks.catalog.instances import instance_catalog
from vllm_eks.catalog.models import model_catalog
from vllm_eks.cli.options import model_kwargs, model_options
from vllm_eks.core.errors import VllmEksError
from vllm_eks.core.units import GIB
from vllm_eks.output import report
from vllm_eks.planning.planner import make_plan
from vllm_eks.planning.quota import check_quotas, parse_quotas
from vllm_eks.spec.request import PlanRequest
from vllm_eks.values.options import ValuesOptions

# Every PlanRequest field is one flag of plan, explain and values (cli/options.py).
plan_options = model_options(PlanRequest)


def quota_option(f: Callable) -> Callable:
    """--quota BUCKET=VCPUS (repeatable): EC2 vCPU quotas to check the Plan's needs against."""
    return click.option(
        "--quota", "quotas", multiple=True, metavar="BUCKET=VCPUS",
        help="An EC2 vCPU quota of this account and region, e.g. G=64 (Running On-Demand G and VT instances) "
             "or spot-P=192 (All P Spot Instance Requests); repeatable. A quota below the vCPUs the deployment "
             "needs at its maximum or during a rolling update / RayService upgrade is an error; without it the "
             "figures are only reported.")(f)


def _request(kwargs: dict) -> PlanRequest:
    return PlanRequest(**model_kwargs(PlanRequest, kwargs))


# ValuesOptions fields are flags of `values` only; --gateway NAME[/NAMESPACE] sets the two gateway
# fields. The routing flags follow --gateway.
_ROUTING_FLAGS = ("gateway_provider", "alb_certificate_arn", "alb_scheme", "api_key_secret")
values_options = model_options(ValuesOptions, exclude=("gateway_name", "gateway_namespace", *_ROUTING_FLAGS))
values_routing_options = model_options(ValuesOptions, order=_ROUTING_FLAGS)


from_benchmark_option = click.option(
    "--from-benchmark", "from_benchmark", multiple=True, metavar="RESULTS",
    help="vllm bench serve result files of a concurrency sweep against this deployment, or their folder "
         "(repeatable): max-num-seqs and the KEDA threshold come from its knee (`vllm-eks bench analyze`), "
         "max-num-seqs clamped to what the KV cache holds; explain shows the measured basis.")


def _make_plan(kwargs: dict):
    """The Plan of the plan options; with --from-benchmark, its max-num-seqs and KEDA threshold
    from the sweep (bench/feedback.py)."""
    req = _request(kwargs)
    paths = list(kwargs.get("from_benchmark") or ())
    if not paths:
        return make_plan(req)
    from vllm_eks.bench.feedback import plan_from_benchmark

    return plan_from_benchmark(req, paths, routing=kwargs.get("routing"),
                               warn=lambda m: click.echo(f"vllm-eks: warning: {m}", err=True))


def _fail(message: str) -> None:
    click.echo(f"vllm-eks: error: {message}", err=True)
    sys.exit(1)


# Options fields set by a flag of another name (--gateway NAME/NAMESPACE sets two).
_FIELD_FLAGS = {"gateway_name": "--gateway", "gateway_namespace": "--gateway"}


def _options(command: click.Command | None) -> list[click.Option]:
    """The options of `command` and, for a group, of every command under it."""
    if command is None:
        return []
    found = [p for p in command.params if isinstance(p, click.Option)]
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            found += _options(sub)
    return found


def _flag_of(field: str, command: click.Command | None, model: str = "") -> str:
    """The command-line flag that sets a request or options field (`kv_cache_memory_gib` is
    --kv-cache-memory), so a validation error names what the user typed. A field no flag of the
    command sets (one of a model the command builds from its inputs) is named as that model's
    field, never as a flag that does not exist."""
    if field in _FIELD_FLAGS:
        return _FIELD_FLAGS[field]
    for param in _options(command):
        if param.name == field:
            return max(param.opts, key=len)
    return f"{model} field '{field}'" if model else f"field '{field}'"


def _given(value: object) -> str:
    if isinstance(value, str) and len(value) > 60:
        return f" (got {len(value)} characters)"
    return f" (got {value!r})" if isinstance(value, (str, int, float)) else ""


def _validation_message(e: ValidationError, command: click.Command | None) -> str:
    parts = []
    for err in e.errors():
        field, *rest = [str(x) for x in err["loc"]] or ["input"]
        where = _flag_of(field, command, e.title) + "".join(f"[{x}]" if x.isdigit() else f".{x}" for x in rest)
        parts.append(f"{where}: {err['msg']}{_given(err.get('input'))}")
    return "; ".join(parts)


class _Group(click.Group):
    """Turns input errors from any command into one line on stderr and exit 1."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except VllmEksError as e:
            _fail(str(e))
        except ValidationError as e:
            name = ctx.invoked_subcommand
            _fail(_validation_message(e, self.get_command(ctx, name) if name else None))


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="vllm-eks")
def main() -> None:
    """Size vLLM deployments on Amazon EKS by arithmetic and write Helm values for them."""


@main.command()
@plan_options
@from_benchmark_option
@click.option("--json", "as_json", is_flag=True, help="Print the Plan as one JSON object.")
@quota_option
def plan(as_json: bool, quotas: tuple[str, ...], **kwargs) -> None:
    """Choose TP/PP/replicas and every engine setting for a model on an instance."""
    limits = parse_quotas(quotas)
    p = _make_plan(kwargs)
    check_quotas(p.quota, limits)
    if as_json:
        # allow_nan=False: a NaN would make the output something other than JSON; inputs are
        # finite, so one reaching here is a bug to report, not to print.
        click.echo(json.dumps(p.json_summary(), indent=2, allow_nan=False))
    else:
        Console().print(report.summary_table(p))


@main.command()
@plan_options
@from_benchmark_option
def explain(**kwargs) -> None:
    """Print every number of the Plan with its formula and inputs."""
    click.echo(report.explanation_text(_make_plan(kwargs)), nl=False)


@main.command()
@plan_options
@from_benchmark_option
@click.option("--out", "out_dir", required=True, help="Folder to write the values files into (created if missing; "
              "files an earlier `vllm-eks values` wrote are replaced, any other file there is an error).")
@values_options
@click.option("--gateway", help="With --routing gateway: the Gateway the HTTPRoute attaches to, NAME or "
                                "NAME/NAMESPACE.")
@values_routing_options
@quota_option
def values(out_dir: str, quotas: tuple[str, ...], **kwargs) -> None:
    """Write values for every chart, plan.json and a README into --out."""
    from vllm_eks.output.scenario_folder import write_scenario
    from vllm_eks.values.vllm_inference.network_policy_build import check_network_policy
    from vllm_eks.values.vllm_inference.routing_build import check_routing

    if not out_dir.strip():
        _fail("--out is empty: give the folder to write the values files into")

    limits = parse_quotas(quotas)
    p = _make_plan(kwargs)
    check_quotas(p.quota, limits, kwargs.get("capacity_types") or ("on-demand",))
    opts = {k: v for k, v in kwargs.items()
            if (k in ValuesOptions.model_fields or k == "gateway") and v not in (None, ())}
    if opts.get("hf_token_secret") == "":
        opts["hf_token_secret"] = None
    gateway = opts.pop("gateway", None)
    if gateway is not None:
        name, _, namespace = gateway.partition("/")
        opts["gateway_name"], opts["gateway_namespace"] = name, namespace or None
    options = ValuesOptions(**opts)
    check_routing(p, options)
    check_network_policy(p, options)
    command = _command_line(click.get_current_context())
    written = write_scenario(p, options, Path(out_dir), command, report.scenario_readme(p, command))
    for path in written:
        click.echo(str(path))


def _command_line(ctx: click.Context) -> str:
    """The invocation rebuilt from the options that differ from their defaults, without --out,
    so a scenario's files do not depend on where they were written or how the shell quoted."""
    words = ["vllm-eks", ctx.info_name or "values"]
    for param in ctx.command.params:
        if not isinstance(param, click.Option) or param.name == "out_dir":
            continue
        value = ctx.params.get(param.name)
        if value in (None, (), False) or value == param.default:
            continue
        flag = max(param.opts, key=len)
        if param.is_flag:
            words.append(flag)
        else:
            for v in (value if param.multiple else (value,)):
                words += [flag, shlex.quote(str(v))]
    return " ".join(words)


@main.command()
@model_options(PlanRequest, order=("model", "hf_token_file"))
@click.option("--max-model-len", type=int,
              help="Context every layout must hold (default: the model's maximum, at most 8192).")
@click.option("--concurrency", type=int, help="Target: requests in flight at once, each up to --max-model-len "
              "(default 32 when no --output-tokens-per-second is given).")
@click.option("--output-tokens-per-second", type=float,
              help="Target: output tokens per second of the whole deployment.")
@click.option("--region", default="us-east-1", show_default=True,
              help="AWS region of the prices (the catalog holds us-east-1 on-demand prices).")
@click.option("--capacity-type", type=click.Choice(["on-demand", "spot"]), default="on-demand", show_default=True)
@click.option("--max-nodes-per-replica", type=int, help="Most machines one model copy may span (default 16).")
@click.option("--top", type=int, default=5, show_default=True, help="Choices in the table (--json lists all).")
@click.option("--json", "as_json", is_flag=True, help="Print every choice and every reason as one JSON object.")
def recommend(model: str, hf_token_file: str | None, max_model_len: int | None, concurrency: int | None,
              output_tokens_per_second: float | None, region: str, capacity_type: str,
              max_nodes_per_replica: int | None, top: int, as_json: bool) -> None:
    """Rank every catalog instance type and layout for a model by estimated cost per million
    output tokens at a target; `bench analyze --plan` measures a deployment."""
    from vllm_eks.recommend import instance_choice

    r = instance_choice.recommend(model, max_model_len, concurrency, output_tokens_per_second, region,
                                  capacity_type, max_nodes_per_replica, top,  # type: ignore[arg-type]
                                  hf_token_file=hf_token_file)
    if as_json:
        click.echo(json.dumps(r.model_dump(), indent=2, allow_nan=False))
        return
    click.echo(instance_choice.header(r), nl=False)
    if r.choices:
        Console(width=150).print(instance_choice.table(r, top))
    else:
        click.echo("no instance type in the catalog has a priced layout for this model: see the reasons below")
    if r.others:
        click.echo("other instance types:\n" + instance_choice.others_text(r), nl=False)


@main.command("check-fit")
@click.argument("scenario_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--helm", help="helm binary to render with (default: $VLLM_EKS_HELM, else helm on PATH).")
@click.option("--charts", "charts", type=click.Path(path_type=Path),
              help="folder holding the gpu-infra, vllm-inference and observability charts (a checkout's "
                   "charts/; default: $VLLM_EKS_CHARTS_DIR, else the charts the installed wheel carries).")
@quota_option
def check_fit_command(scenario_dir: Path, helm: str | None, charts: Path | None, quotas: tuple[str, ...]) -> None:
    """Check that every model-server pod of a `vllm-eks values` folder fits a GPU pool of the
    same folder: labels, taints, GPUs, EFA, CPU, memory and the pools' limits; print the EC2 vCPU
    quota figures of its plan.json and check them against --quota."""
    from vllm_eks.catalog.ec2 import hardware_from_record
    from vllm_eks.check.chart_version import version_warning
    from vllm_eks.check.charts_source import charts_dir
    from vllm_eks.check.plan_identity import PlanIdentityError, check_plan_identity
    from vllm_eks.check.scheduling import check_fit, format_mismatches
    from vllm_eks.core.json_input import JsonInputError, read_json
    from vllm_eks.output.scenario_folder import INCOMPLETE_MARK, incomplete
    from vllm_eks.planning.quota import summary as quota_summary
    from vllm_eks.spec.plan import Plan

    limits = parse_quotas(quotas)
    if incomplete(scenario_dir):
        _fail(f"{scenario_dir}: a `vllm-eks values` run into it stopped before all its files were in place "
              f"({INCOMPLETE_MARK} is there), so the files may mix two runs: run `vllm-eks values` again")
    plan_file = scenario_dir / "plan.json"
    quota, outside = None, None
    if plan_file.is_file():
        try:
            doc = read_json(plan_file)
        except OSError as e:
            _fail(f"{plan_file}: cannot read: {e.strerror or e}")
        except JsonInputError as e:
            _fail(f"{plan_file}: {e}")
        try:
            saved = Plan.from_summary(doc)
            quota = saved.quota
            # a node outside the catalog: the figures the plan sized it by
            outside = hardware_from_record(saved.hardware) if saved.hardware else None
        except (ValueError, KeyError, TypeError) as e:
            first_line = str(e).splitlines()[0]
            _fail(f"{plan_file}: not a plan.json `vllm-eks values` writes ({type(e).__name__}: {first_line})")
        try:
            check_plan_identity(doc, scenario_dir, plan_file)
        except PlanIdentityError as e:
            _fail(str(e))
    elif limits:
        _fail(f"--quota: {plan_file} is missing, so there are no quota figures to check")
    check_quotas(quota, limits)
    charts_folder = charts_dir(charts)
    warning = version_warning(scenario_dir, charts_folder)
    if warning:
        click.echo(warning, err=True)
    mismatches = check_fit(scenario_dir, charts_dir=charts_folder, helm=helm,
                           catalog={outside.name: outside} if outside else None)
    if quota is not None:
        click.echo(f"{scenario_dir}: EC2 vCPU quota, {quota_summary(quota)}; "
                   f"{quota.quota_on_demand_bucket} or {quota.quota_spot_bucket}")
    if mismatches:
        click.echo(format_mismatches(mismatches), err=True)
        sys.exit(1)
    click.echo(f"{scenario_dir}: every model-server pod fits its GPU pool")


@main.group()
def catalog() -> None:
    """List the built-in catalogs."""


@catalog.command("models")
@click.option("--json", "as_json", is_flag=True)
def catalog_models(as_json: bool) -> None:
    """Models known offline, with their architecture facts."""
    from vllm_eks.catalog.models import resolve_model
    from vllm_eks.model.weights import total_parameters

    rows: list[dict[str, Any]] = []
    for m in model_catalog().values():
        a = resolve_model(m.id).architecture
        attention = "MLA" if a.mla else ("GQA" if a.num_kv_heads < a.num_attention_heads else "MHA")
        rows.append({"id": m.id, "hf_repo": m.hf_repo, "layers": a.num_layers, "heads": a.num_attention_heads,
                     "kv_heads": a.num_kv_heads, "attention": attention,
                     "moe": bool(a.moe), "sliding_window": a.has_sliding_window,
                     "quantization": a.quantization.method if a.quantization else None,
                     "parameters_b": round(total_parameters(a) / 1e9, 2), "max_position": a.max_position_embeddings})
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    t = Table(title="vllm-eks model catalog")
    for col in ("id", "hf_repo", "params (B)", "layers", "heads/kv", "attention", "moe", "sliding", "quant", "max pos"):
        t.add_column(col)
    for r in rows:
        t.add_row(r["id"], r["hf_repo"], f"{r['parameters_b']}", str(r["layers"]), f"{r['heads']}/{r['kv_heads']}",
                  r["attention"], "yes" if r["moe"] else "", "yes" if r["sliding_window"] else "",
                  r["quantization"] or "", str(r["max_position"]))
    Console(width=200).print(t)


@catalog.command("instances")
@click.option("--json", "as_json", is_flag=True)
def catalog_instances(as_json: bool) -> None:
    """GPU instance types: vCPUs, memory, GPUs, the memory CUDA reports, EFA, node allocatable
    (Karpenter's formula) and the on-demand price with the date it was read."""
    rows: list[dict[str, Any]] = [{"instance": h.name, "gpu": h.gpu, "gpus": h.gpus_per_node,
             "cuda_gib_per_gpu": round(h.gpu_memory_bytes / GIB, 2), "interconnect": h.interconnect,
             "efa_max": h.efa_max, "alloc_cpu_m": h.alloc_cpu_millicores,
             "alloc_memory_gib": round(h.alloc_memory_bytes / GIB, 1), "usd_per_hour": h.usd_per_hour,
             "vcpus": h.vcpu, "memory_gib": round(h.memory_mib / 1024, 1),
             "gpu_memory_mib_ec2": h.gpu_memory_mib_ec2, "compute_capability":
                 ".".join(map(str, h.compute_capability)) if h.compute_capability else None,
             "max_pods": h.max_pods, "network_mbps": h.network_mbps, "local_nvme_gb": h.local_nvme_gb,
             "price_date": h.price_date}
            for h in instance_catalog().values()]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    t = Table(title=f"vllm-eks instance catalog ({len(rows)} types; prices: on-demand, us-east-1)")
    for col in ("instance", "vCPUs", "mem GiB", "gpu", "GPUs", "GPU MiB (EC2)", "GiB/GPU (CUDA)", "interconnect",
                "EFA", "alloc CPU", "alloc mem GiB", "$/h", "price date"):
        t.add_column(col)
    for r in rows:
        t.add_row(r["instance"], str(r["vcpus"]), f"{r['memory_gib']:g}", r["gpu"], str(r["gpus"]),
                  str(r["gpu_memory_mib_ec2"] or ""), f"{r['cuda_gib_per_gpu']:.2f}", r["interconnect"],
                  str(r["efa_max"]), f"{r['alloc_cpu_m']}m", f"{r['alloc_memory_gib']}",
                  f"{r['usd_per_hour']:.2f}" if r["usd_per_hour"] is not None else "n/a", r["price_date"] or "")
    Console(width=220).print(t)


from vllm_eks.cli.bench import bench  # noqa: E402  (the group lives with the bench modules)

main.add_command(bench)

from vllm_eks.cli.verify import verify  # noqa: E402  (imports its checks when it runs)

main.add_command(verify)


if __name__ == "__main__":
    main()
