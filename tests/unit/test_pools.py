"""Pool and autoscaling numbers of the Plan (pools.py): what the NodePool limit must admit."""

from vllm_eks.pools import plan_pools
from vllm_eks.planner import make_plan
from vllm_eks.request import PlanRequest
from vllm_eks.units import GIB



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
    assert (dis.autoscaling_max_replicas, dis.pool_gpu_limit) == (5, 6)


def test_root_volume_and_thresholds():
    c = plan_pools(replicas=1, serve_max=None, phase_replicas=None, nodes_per_replica=1, gpus_per_pod=1, gpus_per_node=1,
                      ephemeral_bytes=25 * GIB + 1, max_num_seqs=256, startup_seconds=3000)
    assert c.root_volume_bytes == 80 * GIB             # 20 + 30 + 25.x, rounded up to 10 GiB
    assert c.queue_alert_threshold == 64                # 256 / 4
    assert c.scale_up_period_seconds == 1800            # HPA maximum
