#!/usr/bin/python3
"""A small data-parallel training job for trainctl: PyTorch DDP over gloo, on CPU.

It reads only what trainctl gives every replica: RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT
(through init_process_group("env://")) and AIP_CHECKPOINT_DIR. Rank 0 saves a checkpoint there
(model, optimizer, step) every --checkpoint-every steps; every rank resumes from it on start. Each
rank prints one line per step, "rank 0 step 12 loss 0.123", and the script exits 0 after --steps.

The fault flags make one rank fail, for trainctl's tests: --abort-at-step (a crash, once),
--exit-at-step (an error of its own, every run), --ignore-sigterm-rank (a survivor that hangs).
"""
import argparse
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

CHECKPOINT = "checkpoint.pt"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=20, metavar="M",
                   help="train until step M, then exit 0")
    p.add_argument("--checkpoint-every", type=int, default=5, metavar="K",
                   help="rank 0 saves a checkpoint every K steps and after the last (0: never)")
    p.add_argument("--step-seconds", type=float, default=0.0, metavar="S",
                   help="sleep S seconds in every step, so a test can catch the job mid-run")
    p.add_argument("--abort-at-step", type=int, metavar="N",
                   help="rank --abort-rank calls os.abort() when it reaches step N; it leaves a "
                        "marker in the checkpoint dir, so a restarted run does not abort again")
    p.add_argument("--abort-rank", type=int, default=0, metavar="R")
    p.add_argument("--exit-at-step", type=int, metavar="N",
                   help="rank --exit-rank exits --exit-code when it reaches step N, in every run")
    p.add_argument("--exit-rank", type=int, default=0, metavar="R")
    p.add_argument("--exit-code", type=int, default=1, metavar="C")
    p.add_argument("--ignore-sigterm-rank", type=int, metavar="R",
                   help="rank R ignores SIGTERM, and sleeps on when a collective fails (a peer "
                        "died) instead of exiting: a survivor hung in a collective")
    return p.parse_args()


def log(message):
    print(message, flush=True)


def synthetic_batch(rank, step):
    """32 samples of y = x . w + noise, different on every rank and step, the same in every run."""
    g = torch.Generator().manual_seed(1000 * step + rank)
    x = torch.randn(32, 8, generator=g)
    w = torch.linspace(-1, 1, 8).unsqueeze(1)
    return x, x @ w + 0.1 * torch.randn(32, 1, generator=g)


def save_checkpoint(path, model, optimizer, step):
    """Writes a temporary file and renames it over the checkpoint: a crash leaves the old one."""
    tmp = f"{path}.tmp-{os.getpid()}"
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step},
               tmp)
    os.replace(tmp, path)


def inject_faults(args, rank, step, checkpoint_dir):
    if args.abort_at_step == step and args.abort_rank == rank:
        marker = os.path.join(checkpoint_dir, f"aborted-rank-{rank}")
        if not os.path.exists(marker):
            open(marker, "w").close()
            log(f"rank {rank} aborting at step {step}")
            os.abort()
    if args.exit_at_step == step and args.exit_rank == rank:
        log(f"rank {rank} exiting with status {args.exit_code} at step {step}")
        os._exit(args.exit_code)


def main():
    args = parse_args()
    rank = int(os.environ["RANK"])
    checkpoint_dir = os.environ["AIP_CHECKPOINT_DIR"]
    checkpoint = os.path.join(checkpoint_dir, CHECKPOINT)
    hang = args.ignore_sigterm_rank == rank
    if hang:
        signal.signal(signal.SIGTERM, lambda *_: log(f"rank {rank} ignoring SIGTERM"))
    # The model is tiny: one thread is fastest, and the replicas of a host share its cores.
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="env://")

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    step = 0
    # Every rank reads the same file: no rank writes before all of them have joined DDP below.
    if os.path.exists(checkpoint):
        state = torch.load(checkpoint)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        step = state["step"]
        log(f"rank {rank} resumed from step {step}")
    model = DistributedDataParallel(model)  # broadcasts rank 0's parameters

    try:
        while step < args.steps:
            step += 1
            inject_faults(args, rank, step, checkpoint_dir)
            x, y = synthetic_batch(rank, step)
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()  # gradients are averaged across the ranks here
            optimizer.step()
            log(f"rank {rank} step {step} loss {loss.item():.3f}")
            if rank == 0 and args.checkpoint_every > 0 and (
                    step % args.checkpoint_every == 0 or step == args.steps):
                save_checkpoint(checkpoint, model.module, optimizer, step)
            time.sleep(args.step_seconds)
        # Rank 0 ends the job when it exits 0: it waits until every rank has logged its last step.
        dist.barrier()
    except RuntimeError as e:  # a collective failed: a peer is gone
        log(f"rank {rank} step {step}: collective failed: {e}")
        while hang:
            time.sleep(1)
        sys.exit(1)
    log(f"rank {rank} done after step {step}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
