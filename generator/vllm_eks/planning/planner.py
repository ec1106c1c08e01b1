"""make_plan: composes the Plan from the sections the other modules compute. It decides
nothing itself: planning.decisions chooses; memory.budget, catalog.instances and this stage's
pod_resources, pools, latency, routing, quota and staging compute."""

from __future__ import annotations

from dataclasses import replace

from vllm_eks.catalog.ec2 import hardware_record
from vllm_eks.catalog.instances import node_plan
from vllm_eks.core.errors import InvalidOptionError
from vllm_eks.memory.budget import memory_plan
from vllm_eks.planning.decisions import Decisions, phases, serve_autoscaling
from vllm_eks.planning.kv_offload import OffloadShape, plan_kv_offload
from vllm_eks.planning.kv_transfer import plan_kv_transfer
from vllm_eks.planning.latency import default_slos
from vllm_eks.planning.model_source import load_source
from vllm_eks.planning.pod_resources import size_pod
from vllm_eks.planning.pools import plan_cost, plan_pools
from vllm_eks.planning.quota import plan_quota
from vllm_eks.planning.rate_bounds import check_load_rates
from vllm_eks.planning.routing import routing_plan
from vllm_eks.planning.staging import plan_staging
from vllm_eks.spec.plan import MeasuredPlan, Plan
from vllm_eks.spec.request import PlanRequest


def make_plan(req: PlanRequest, measured: MeasuredPlan | None = None, measured_seqs_why: str = "") -> Plan:
    """Decide the layout and every engine and pod setting for a request; errors name the flag.
    `measured` (bench/feedback.py): a benchmark sweep's max_num_seqs and KEDA threshold replace
    the estimates, explained by `measured_seqs_why`; the layout is chosen as without it."""
    dec = Decisions(req)
    tp, pp, layout_why = dec.choose_layout()
    if measured is not None:
        seqs, seqs_why = measured.max_num_seqs, measured_seqs_why
    else:
        seqs, seqs_why = dec.settle_max_num_seqs(tp, pp)
    b = dec.budget(tp, pp, seqs)
    hub = dec.model.hub
    if hub is not None and hub.checkpoint is not None:
        # the checkpoint's own bytes (what is downloaded and read), exact from its safetensors headers
        b = replace(b, weights_total=hub.checkpoint.total_bytes)
    max_len, len_why = dec.choose_max_model_len(b)
    dec.check_topology(pp)
    memory = memory_plan(dec.a, dec.hw, dec.p, b, max_len, len_why, hub=hub)
    layout = dec.layout_plan(tp, pp, layout_why, b.kv_capacity(max_len).max_concurrency)
    engine = dec.engine_plan(max_len, seqs, seqs_why, tp)
    topology = req.topology if req.topology != "auto" else ("multi-node" if pp > 1 else "single-node")
    source = dec.model_source
    revision = hub.sha if hub is not None else None
    if hub is not None and source == hub.repo:
        # the servers download the commit that was sized, not whatever main is when a pod starts
        # (vllm serve --revision; Ray Serve LLM passes engine_kwargs to the same EngineArgs field)
        engine.settings["revision"] = hub.sha
    transfer = plan_kv_transfer(dec.hw, memory, tp) if topology == "disaggregated" else None
    lay = b.worst.layout
    # MLA at TP > 1 on one node: every rank holds the same latent cache, offloaded once
    # (vllm/distributed/kv_transfer/kv_connector/v1/offloading/config.py replicated_layout)
    copies = 1 if dec.a.mla is not None and tp > 1 and pp == 1 else tp * pp
    offload = plan_kv_offload(req.kv_offload_gib, topology, OffloadShape(
        rank_block_bytes=lay.bytes_per_token_per_layer * memory.block_size * lay.group_size, copies=copies,
        block_size=memory.block_size, world_size=tp * pp))
    if offload is not None:
        engine.settings["kv_offloading_size"] = offload.kv_offload_gib
    load = load_source(req, topology)
    check_load_rates(req, load, b.weights_total)
    pod = size_pod(dec.hw, tp, tp, pp > 1 or topology == "disaggregated", b.weights_total, pp,
                   load=load,
                   reserve=(req.daemonset_reserve_cpu, req.daemonset_reserve_memory), cache=req.cache,
                   cache_read=int(req.cache_read_mib_s * 1024**2) if req.cache_read_mib_s else None,
                   host_kv_buffer=transfer.host_buffer_bytes if transfer else 0,
                   host_kv_offload=offload.kv_offload_host_bytes_per_pod if offload else 0)
    serve = serve_autoscaling(req, layout, seqs) if topology == "ray-serve" else None
    prefill, decode = phases(req, layout, engine, transfer) if transfer else (None, None)
    dec.check_engine_settings([engine.settings] + [p.settings for p in (prefill, decode) if p is not None], topology)
    pool = plan_pools(replicas=layout.replicas, serve_max=serve.max_replicas if serve else None,
                      serve_min=serve.min_replicas if serve else 1,
                      phase_replicas=(prefill.replicas, decode.replicas) if prefill and decode else None,
                      nodes_per_replica=pp, gpus_per_pod=tp, gpus_per_node=dec.hw.gpus_per_node,
                      ephemeral_bytes=pod.ephemeral_storage_bytes, max_num_seqs=seqs,
                      startup_seconds=pod.startup_probe_seconds, local_nvme_bytes=dec.hw.local_nvme_gb * 10**9,
                      keda_target=measured.keda_queue_threshold if measured else None)
    if req.cache == "instance-store" and pool.instance_store_policy != "RAID0":
        raise InvalidOptionError(
            f"--cache instance-store needs a GPU pool whose instance-store NVMe is a RAID0 array holding kubelet "
            f"storage, and the {dec.hw.name} pool ({'--hardware-name' if req.hardware_name else '--instance'}) "
            f"has none ({_no_raid0_reason(dec.hw.local_nvme_gb)}): "
            "use --cache pvc or --cache emptydir")
    slo = default_slos(dec.a, dec.hw, tp, pp, b.weights_total, max_len,
                       kv_transfer_seconds=transfer.seconds if transfer else None)
    staging = None
    if req.stage is None:
        given = [f for f, v in (("--stage-revision", req.stage_revision),
                                ("--stage-bandwidth-mib-s", req.stage_bandwidth_mib_s))
                 if v is not None]
        if given:
            raise InvalidOptionError(f"{', '.join(given)}: only with --stage")
    else:
        staging = plan_staging(req.stage, req.stage_revision or revision or "main", dec.model.hf_repo,
                               source, b.weights_total, req.stage_bandwidth_mib_s, req.source.kind)
    return Plan(model=dec.model.id, model_source=source, model_revision=revision,
                served_model_name=dec.served_model_name,
                instance=dec.hw.name, topology=topology, node=node_plan(dec.hw, pp > 1), layout=layout,
                memory=memory, engine=engine, pod=pod, pool=pool, slo=slo, cost=plan_cost(dec.hw, pp, tp),
                routing=routing_plan(dec.a, dec.hw, tp, pp, b.weights_total, memory, pool, slo, topology),
                quota=plan_quota(instance=dec.hw.name, vcpus_per_node=dec.hw.vcpu, gpus_per_node=dec.hw.gpus_per_node,
                                 topology=topology, layout=layout, pool=pool, serve=serve, prefill=prefill,
                                 decode=decode),
                serve_autoscaling=serve, prefill=prefill, decode=decode, measured=measured, staging=staging,
                kv_offload=offload,
                hardware=hardware_record(dec.hw))


def _no_raid0_reason(local_nvme_gb: int) -> str:
    return "no local NVMe disks" if not local_nvme_gb else "its NVMe array is too small for the pods' ephemeral storage"
