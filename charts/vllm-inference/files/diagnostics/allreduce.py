#!/usr/bin/env python3
"""NCCL all-reduce bandwidth across one LeaderWorkerSet group (helm test of topology multi-node).

The test pod runs this script in every pod of a group at once (kubectl exec). Each copy starts
one process per local GPU; they rendezvous at the group leader (LWS_LEADER_ADDRESS, set by the
LWS controller together with LWS_WORKER_INDEX and LWS_GROUP_SIZE) through torch.distributed's TCP
store: no MPI, no SSH. Rank 0 (on the leader) reports the bus bandwidth of the slowest rank,

    algbw = bytes / time,  busbw = algbw * 2 (n - 1) / n

(the all-reduce correction factor of nccl-tests, doc/PERFORMANCE.md), and fails when it is below
min_fraction x the instance's network rating: NCCL then runs over TCP sockets, not EFA. With
NCCL_DEBUG=INFO captured to a file it also names the network plugin NCCL picked.

The arithmetic and log parsing use the standard library; torch is imported only to run.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import re
import sys
import time
from dataclasses import asdict, dataclass

WARMUP = 5
# Lines NCCL prints at INFO level naming the network transport: "Using network AWS Libfabric"
# (NCCL >= 2.19) or "NET/OFI Selected provider is efa" from aws-ofi-nccl; "Using network Socket"
# is the TCP fallback.
_NETWORK = re.compile(r"NCCL INFO Using network (.+?)\s*$")
_OFI_PROVIDER = re.compile(r"NET/OFI Selected [Pp]rovider is (\w+)")


@dataclass(frozen=True)
class Result:
    world_size: int
    size_bytes: int
    seconds_per_iteration: float
    algbw_gbps: float
    busbw_gbps: float
    expected_gbps: float
    min_fraction: float
    transport: str
    passed: bool
    message: str


def bus_bandwidth_gbps(size_bytes: int, seconds: float, world_size: int) -> tuple[float, float]:
    """(algbw, busbw) in GB/s (10^9 bytes) of one all-reduce of size_bytes taking seconds."""
    if seconds <= 0 or size_bytes <= 0:
        raise ValueError("size and time must be positive")
    if world_size < 2:
        raise ValueError("an all-reduce needs at least 2 ranks")
    algbw = size_bytes / seconds / 1e9
    return algbw, algbw * 2 * (world_size - 1) / world_size


def verdict(busbw_gbps: float, expected_gbps: float, min_fraction: float) -> tuple[bool, str]:
    """Pass unless busbw is below min_fraction of the rating. expected 0: report only."""
    if not 0 < min_fraction <= 1:
        raise ValueError(f"min_fraction must be in (0, 1], got {min_fraction}")
    if expected_gbps <= 0:
        return True, f"bus bandwidth {busbw_gbps:.1f} GB/s (no rating given, not judged)"
    floor = expected_gbps * min_fraction
    share = busbw_gbps / expected_gbps
    if busbw_gbps < floor:
        return False, (f"FAIL: bus bandwidth {busbw_gbps:.1f} GB/s is {share:.1%} of the instance's "
                       f"{expected_gbps:.1f} GB/s network rating (floor {floor:.1f} GB/s = {min_fraction:.0%}): "
                       "NCCL is not using EFA (check the image has aws-ofi-nccl and the pods request "
                       "vpc.amazonaws.com/efa)")
    return True, (f"OK: bus bandwidth {busbw_gbps:.1f} GB/s is {share:.1%} of the instance's "
                  f"{expected_gbps:.1f} GB/s network rating (floor {min_fraction:.0%})")


def network_from_log(text: str) -> str:
    """The network NCCL used according to its INFO log, or "unknown"."""
    names = [m.group(1) for m in map(_NETWORK.search, text.splitlines()) if m]
    if names:
        return names[-1]
    provider = _OFI_PROVIDER.search(text)
    if provider:
        return f"AWS Libfabric ({provider.group(1)})"
    return "unknown"


def evaluate(size_bytes: int, seconds: float, world_size: int, expected_gbps: float,
             min_fraction: float, nccl_log: str = "") -> Result:
    algbw, busbw = bus_bandwidth_gbps(size_bytes, seconds, world_size)
    transport = network_from_log(nccl_log)
    passed, message = verdict(busbw, expected_gbps, min_fraction)
    if transport == "Socket" and passed and expected_gbps > 0:
        passed, message = False, f"FAIL: NCCL used TCP sockets (Using network Socket); {message}"
    return Result(world_size, size_bytes, seconds, round(algbw, 3), round(busbw, 3), expected_gbps,
                  min_fraction, transport, passed, message)


def parse_result(output: str) -> Result:
    """The RESULT line this script prints (what `helm test --logs` shows), as a Result."""
    for line in output.splitlines():
        if line.startswith("RESULT "):
            return Result(**json.loads(line[len("RESULT "):]))
    raise ValueError("no RESULT line in the output")


# --------------------------------------------------------------------------- running (torch)

def _worker(local_rank: int, args: argparse.Namespace, node_rank: int, nodes: int, gpus: int,
            leader: str) -> None:
    import torch
    import torch.distributed as dist

    rank = node_rank * gpus + local_rank
    world = nodes * gpus
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", init_method=f"tcp://{leader}:{args.port}", rank=rank,
                            world_size=world, timeout=datetime.timedelta(seconds=args.timeout))
    size = args.size_mib << 20
    data = torch.ones(size // 4, dtype=torch.float32, device="cuda")
    for _ in range(WARMUP):
        dist.all_reduce(data)
    torch.cuda.synchronize()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(args.iterations):
        dist.all_reduce(data)
    torch.cuda.synchronize()
    elapsed = torch.tensor([(time.perf_counter() - start) / args.iterations], device="cuda")
    # The group is as fast as its slowest rank.
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
    if rank == 0:
        log = "".join(open(p, encoding="utf-8", errors="replace").read()
                      for p in glob.glob(os.path.join(args.log_dir, "nccl.*.log")))
        result = evaluate(data.numel() * 4, float(elapsed.item()), world, args.expected_gbps,
                          args.min_fraction, log)
        print("RESULT " + json.dumps(asdict(result)), flush=True)
        print(result.message, flush=True)
        with open(os.path.join(args.log_dir, "passed"), "w", encoding="utf-8") as fh:
            fh.write("1" if result.passed else "0")
    dist.destroy_process_group()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=256)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--expected-gbps", type=float, default=0.0, help="network rating in GB/s")
    parser.add_argument("--min-fraction", type=float, default=0.25)
    parser.add_argument("--port", type=int, default=29555)
    parser.add_argument("--timeout", type=int, default=600, help="rendezvous timeout in seconds")
    parser.add_argument("--log-dir", default="/tmp/vllm-eks-allreduce")
    args = parser.parse_args(argv)
    try:
        leader = os.environ["LWS_LEADER_ADDRESS"]
        node_rank = int(os.environ["LWS_WORKER_INDEX"])
        nodes = int(os.environ["LWS_GROUP_SIZE"])
    except KeyError as exc:
        print(f"FAIL: {exc.args[0]} is not set: run inside a LeaderWorkerSet pod")
        return 2
    import torch
    import torch.multiprocessing as mp

    gpus = torch.cuda.device_count()
    if gpus < 1:
        print("FAIL: no GPU visible in this container")
        return 2
    os.makedirs(args.log_dir, exist_ok=True)
    for stale in glob.glob(os.path.join(args.log_dir, "*")):
        os.remove(stale)
    # INFO-level NCCL log to files, read back by rank 0 to name the transport.
    os.environ.update(NCCL_DEBUG="INFO", NCCL_DEBUG_SUBSYS="INIT,NET",
                      NCCL_DEBUG_FILE=os.path.join(args.log_dir, "nccl.%h.%p.log"))
    print(f"pod {node_rank + 1}/{nodes}: {gpus} GPU(s), rendezvous at {leader}:{args.port}", flush=True)
    mp.spawn(_worker, args=(args, node_rank, nodes, gpus, leader), nprocs=gpus, join=True)
    if node_rank != 0:
        return 0
    with open(os.path.join(args.log_dir, "passed"), encoding="utf-8") as fh:
        return 0 if fh.read() == "1" else 1


if __name__ == "__main__":
    sys.exit(main())
