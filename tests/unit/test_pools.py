"""Pool and autoscaling numbers of the Plan (pools.py): what the NodePool limit must admit."""

from vllm_eks.core.units import GIB
from vllm_eks.planning.planner import make_plan
from vllm_eks.planning.pools import plan_pools
from vllm_eks.spec.request import PlanRequest


def test_shared_nodes_count_once():
    # gpt-oss-120b runs one GPU per replica: eight replicas share a p5.48xlarge
    p = make_plan(PlanRequest(model="gpt-oss-120b", instance="p5.48xlarge", replicas=8))
    assert p.layout.gpus_per_pod == 1
    assert p.pool.autoscaling_max_replicas == 16           # KEDA may double
    assert p.pool.pool_nodes == 2
    assert p.pool.pool_gpu_limit == (2 + 1) * 8            # plus one replica group of headroom


def test_keda_ceiling_fits_the_pool_limit():
    for model, instance in (("llama-3.1-8b-instruct", "g6e.xlarge"), ("llama-3.1-70b-instruct", "p5.48xlarge"),
                            ("llama-3.1-405b-instruct", "p5.48xlarge")):
        p = make_plan(PlanRequest(model=model, instance=instance))
        gpus_at_peak = p.pool.autoscaling_max_replicas * p.layout.nodes_per_replica * p.layout.gpus_per_pod
        assert p.pool.pool_gpu_limit >= gpus_at_peak + p.layout.nodes_per_replica * p.node.gpus_per_node


def test_ray_serve_and_disaggregated_peaks():
    ray = plan_pools(replicas=1, serve_max=4, phase_replicas=None, nodes_per_replica=1, gpus_per_pod=1, gpus_per_node=1, ephemeral_bytes=0,
                        max_num_seqs=64, startup_seconds=300)
    assert (ray.autoscaling_max_replicas, ray.pool_gpu_limit) == (4, 5)
    dis = plan_pools(replicas=3, serve_max=None, phase_replicas=(2, 3), nodes_per_replica=1, gpus_per_pod=1, gpus_per_node=1, ephemeral_bytes=0,
                        max_num_seqs=64, startup_seconds=300)
    # peak 5 copies, plus the upgrade's second RayCluster starting all 5 again
    assert (dis.autoscaling_max_replicas, dis.pool_gpu_limit) == (5, 10)
    # both pools always run: the floor is every copy, not the decode count (3)
    assert dis.autoscaling_min_replicas == 5


def test_ray_upgrade_second_cluster_fits_the_pool_limit():
    # A RayService upgrade (NewCluster) runs a new RayCluster beside the serving one: the pool
    # must admit the serving peak plus the new cluster's starting workers.
    dis = make_plan(PlanRequest(model="qwen3-8b", instance="g6.8xlarge", topology="disaggregated",
                                max_model_len=4096))
    serving = (dis.prefill.replicas + dis.decode.replicas) * dis.layout.gpus_per_pod
    assert dis.node.gpus_per_node == 1 and serving == 2
    assert dis.pool.pool_gpu_limit == 2 * serving == 4      # was 3: one GPU short of the second cluster
    why = next(x for x in dis.pool.derivations if x.key == "pool_gpu_limit")
    assert "second RayCluster" in why.formula and "every prefill and decode copy" in why.formula

    ray = make_plan(PlanRequest(model="llama-3.1-70b-instruct", instance="g6e.12xlarge", topology="ray-serve",
                                replicas=3))
    s = ray.serve_autoscaling
    gpus = ray.node.gpus_per_node
    peak = s.max_worker_pods * ray.layout.gpus_per_pod
    start = s.min_worker_pods * ray.layout.gpus_per_pod
    assert ray.pool.pool_gpu_limit >= peak + start
    assert ray.pool.pool_gpu_limit == (ray.pool.pool_nodes + s.min_worker_pods) * gpus


def test_root_volume_and_thresholds():
    c = plan_pools(replicas=1, serve_max=None, phase_replicas=None, nodes_per_replica=1, gpus_per_pod=1, gpus_per_node=1,
                      ephemeral_bytes=25 * GIB + 1, max_num_seqs=256, startup_seconds=3000)
    assert c.root_volume_bytes == 80 * GIB             # 20 + 30 + 25.x, rounded up to 10 GiB
    assert c.queue_alert_threshold == 64                # 256 / 4
    assert c.scale_up_period_seconds == 1800            # HPA maximum


def test_raid0_root_volume_holds_only_the_os_and_images():
    """With the instance store as RAID0, kubelet and containerd live on the NVMe array: the root
    EBS volume keeps the OS and images at gp3 baseline; without local disks it holds the model."""
    common = dict(replicas=1, serve_max=None, phase_replicas=None, nodes_per_replica=1, gpus_per_pod=8,
                  gpus_per_node=8, ephemeral_bytes=150 * GIB, max_num_seqs=256, startup_seconds=3000)
    ebs = plan_pools(**common)
    assert ebs.instance_store_policy is None
    assert ebs.root_volume_bytes == 200 * GIB and (ebs.root_volume_iops, ebs.root_volume_throughput_mib_s) == (16000, 1000)
    raid = plan_pools(**common, local_nvme_bytes=30400 * 10**9)
    assert raid.instance_store_policy == "RAID0"
    assert raid.root_volume_bytes == 50 * GIB and (raid.root_volume_iops, raid.root_volume_throughput_mib_s) == (3000, 125)
    small = plan_pools(**common, local_nvme_bytes=100 * 10**9)   # the model does not fit the array
    assert small.instance_store_policy is None and small.root_volume_bytes == 200 * GIB


def test_p5_plan_raid0_root_volume_reaches_gpu_infra():
    from vllm_eks.planning.planner import make_plan
    from vllm_eks.spec.request import PlanRequest
    from vllm_eks.values import gpu_infra
    from vllm_eks.values.options import ValuesOptions
    plan = make_plan(PlanRequest(model="llama-3.1-70b-instruct", instance="p5.48xlarge"))
    assert plan.pool.instance_store_policy == "RAID0" and plan.pool.root_volume_bytes == 50 * GIB
    (pool,) = gpu_infra.build_values(plan, ValuesOptions()).pools
    assert pool.instance_store_policy == "RAID0"
    assert (pool.root_volume.size_gi, pool.root_volume.iops, pool.root_volume.throughput) == (50, 3000, 125)
