#!/usr/bin/env python3
"""A fabric check program for trainctl-agent's --gang-check-program: an all-reduce over gloo.

trainctl runs it on every node of a multi-node gang at once, before the gang's replicas start,
with RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set for the check (docs/operators/
gang-health.md). Every node all-reduces a tensor of --mb MiB a few times; the program prints the
bus bandwidth it measured as the JSON line trainctl reads ({"gbps": N}, judged against the
agents' --gang-check-min-gbps) and exits 0, or exits 1 naming what failed. On GPU hosts an NCCL
test (nccl-tests' all_reduce_perf, or this program with backend "nccl") checks the GPU fabric.

    trainctl-agent ... --gang-check-program '/usr/bin/python3 /opt/trainctl/gloo_check.py'
"""
import argparse
import datetime
import json
import sys
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=16, help="tensor size in MiB (default 16)")
    parser.add_argument("--rounds", type=int, default=3, help="timed all-reduces (default 3)")
    parser.add_argument("--timeout", type=float, default=20,
                        help="seconds to wait for the other nodes (default 20)")
    args = parser.parse_args()

    import torch
    import torch.distributed as dist

    try:
        dist.init_process_group("gloo", init_method="env://",
                                timeout=datetime.timedelta(seconds=args.timeout))
        world = dist.get_world_size()
        tensor = torch.ones(max(1, int(args.mb * 2**20 / 4)))
        dist.all_reduce(tensor)  # the connections, once
        start = time.monotonic()
        for _ in range(args.rounds):
            dist.all_reduce(tensor)
        took = max(time.monotonic() - start, 1e-9)
        expected = float(world) ** (args.rounds + 1)
        if tensor[0].item() != expected:
            print(f"all-reduce gave {tensor[0].item()}, expected {expected}", file=sys.stderr)
            return 1
        # Bus bandwidth, as nccl-tests count it: each rank sends 2(n-1)/n of the tensor.
        size_bits = tensor.numel() * 4 * 8
        gbps = 2 * (world - 1) / world * size_bits * args.rounds / took / 1e9
        print(json.dumps({"gbps": round(gbps, 3), "world": world, "seconds": round(took, 3)}))
        dist.destroy_process_group()
        return 0
    except Exception as e:  # noqa: BLE001 - any failure is the check's result
        print(f"gloo all-reduce failed: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
