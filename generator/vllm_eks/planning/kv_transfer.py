"""Where NIXL moves a disaggregated deployment's KV cache from: GPU memory (GPUDirect RDMA) or a
host-memory copy of it, and what the host copy costs.

Read at the pinned versions (nixl 1.3.1 in the Ray image, ai-dynamo/nixl tag v1.3.1,
commit b20f4d0; vLLM v0.26.0 there, v0.32.0 in the model-server image):

- NIXL's LIBFABRIC plugin says "GDR (GPU Direct RDMA) support is currently required" for its
  zero-copy GPU (VRAM) transfers (src/plugins/libfabric/README.md). The plugin also registers
  host memory: `getSupportedMems` always lists DRAM_SEG, VRAM_SEG only with a CUDA or Neuron
  runtime (src/plugins/libfabric/libfabric_backend.cpp), and a DRAM_SEG region is registered
  with `FI_HMEM_SYSTEM`, plain host memory any EFA device reads (src/utils/libfabric/
  libfabric_rail.cpp, `registerMemory`).
- vLLM's NixlConnector takes `kv_buffer_device` from kv_transfer_config (default: the platform's
  device, vllm/config/kv_transfer.py); on CUDA it accepts "cuda" or "cpu"
  (`_NIXL_SUPPORTED_DEVICE`, vllm/distributed/kv_transfer/kv_connector/v1/nixl/utils.py). With
  "cpu" it sets `use_host_buffer`, registers DRAM with NIXL and allocates, per layer, a host
  tensor of the same shape as that layer's KV cache (`initialize_host_xfer_buffer`,
  nixl/base_worker.py: `torch.empty(kv_shape, dtype, device="cpu")`, not pinned); the prefill
  engine copies a finished request's blocks device-to-host (`save_kv_to_host`) and the decode
  engine host-to-device after the read (`sync_recved_kv_to_device`). The backends NIXL creates
  are `kv_connector_extra_config.backends` (default ["UCX"]). Same at both tags.

So on an instance type without GPUDirect RDMA the Plan sets kv_buffer_device "cpu": the transfer
goes through host memory, which NIXL's LIBFABRIC backend supports, at the cost of a host copy of
the whole KV cache in each engine pod and two PCIe copies per request. With GPUDirect RDMA it
keeps "cuda". Neither was run here: the transfer needs EFA hardware."""

from __future__ import annotations

from dataclasses import dataclass

from vllm_eks.catalog.gpudirect import GPUDIRECT_RDMA_SOURCE
from vllm_eks.catalog.instances import Hardware
from vllm_eks.core.derivations import Derivation, Derivations
from vllm_eks.core.units import gib
from vllm_eks.planning.latency import TYPICAL_PROMPT_TOKENS
from vllm_eks.spec.plan import MemoryPlan

# Copies between a GPU and the pageable host buffer: PCIe 4.0 x16 carries 32 GB/s each way in
# theory; a copy from or to pageable (not pinned) memory goes through the driver's staging buffer
# and reaches about a third of that. A planning figure, not a measurement.
HOST_COPY_BYTES_PER_S = 10e9
HOST_COPY_SOURCE = ("PCIe 4.0 x16 is 32 GB/s each way; vLLM's host buffer is pageable (torch.empty without "
                    "pin_memory), so a copy reaches about a third of it: a planning figure, not measured")


@dataclass(frozen=True)
class KvTransfer:
    """The KV transfer of a disaggregated Plan: NIXL's buffer, its host memory, its time per request."""

    buffer_device: str           # vLLM kv_buffer_device: "cuda" (GPUDirect RDMA) or "cpu" (host buffer)
    host_buffer_bytes: int       # host memory one engine pod holds for the buffer (0 with "cuda")
    seconds: float               # one typical prompt's KV cache, prefill to decode
    derivations: list[Derivation]


def plan_kv_transfer(hw: Hardware, memory: MemoryPlan, gpus_per_pod: int) -> KvTransfer:
    """NIXL's buffer device on `hw`, the host memory it takes in one engine pod and the time one
    typical prompt's KV cache takes from the prefill to the decode engine."""
    d = Derivations()
    gdr = hw.gpudirect_rdma
    device = "cuda" if gdr else "cpu"
    d.add("kv_buffer_device", device,
          f"{hw.name} {'has' if gdr else 'has no'} GPUDirect RDMA: NIXL's LIBFABRIC backend "
          + ("registers the KV cache in GPU memory (VRAM_SEG)" if gdr
             else "reads host memory only (DRAM_SEG), so vLLM copies the KV cache through a host buffer"),
          GPUDIRECT_RDMA_SOURCE + "; NIXL v1.3.1 src/plugins/libfabric/README.md: GDR required for VRAM")
    host = 0 if gdr else memory.available_kv_cache_bytes_per_gpu * gpus_per_pod
    d.add("host_kv_buffer_bytes", gib(host),
          "GPUDirect RDMA: no host copy" if gdr else
          f"the KV cache of each GPU {gib(memory.available_kv_cache_bytes_per_gpu)} x {gpus_per_pod} GPUs per pod",
          "vLLM nixl/base_worker.py initialize_host_xfer_buffer: one host tensor per layer, shaped as its KV cache")
    prompt = min(memory.max_model_len, TYPICAL_PROMPT_TOKENS)
    kv = prompt * memory.kv_bytes_per_token_per_gpu * gpus_per_pod
    # the pod's share of the node's network, by its share of the GPUs (as its CPU and memory)
    share = gpus_per_pod / hw.gpus_per_node
    network = hw.network_mbps * 1e6 / 8 * share
    over_efa = kv / network if network else 0.0
    copies = 0.0 if gdr else 2 * kv / HOST_COPY_BYTES_PER_S
    seconds = over_efa + copies
    net = (f"{kv / 1e6:.0f} MB / {network / 1e9:g} GB/s ({hw.network_mbps:,} Mbit/s x "
           f"{gpus_per_pod}/{hw.gpus_per_node} GPUs)" if network
           else "network bandwidth unknown: not counted")
    d.add("kv_transfer_seconds", f"{seconds:.3f} s",
          f"KV of {prompt} tokens: {prompt} x {memory.kv_bytes_per_token_per_gpu:,} B x {gpus_per_pod} GPUs = "
          f"{kv / 1e6:.0f} MB; over EFA {net}"
          + ("" if gdr else f" + device-to-host and host-to-device copies 2 x {kv / 1e6:.0f} MB / "
                            f"{HOST_COPY_BYTES_PER_S / 1e9:g} GB/s"),
          "NIXL reads the prefill engine's blocks over EFA" + ("" if gdr else "; " + HOST_COPY_SOURCE))
    return KvTransfer(buffer_device=device, host_buffer_bytes=host, seconds=round(seconds, 3),
                      derivations=d.items)
