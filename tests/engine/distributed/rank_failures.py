"""Worker (run under mpiexec by test_distributed_failures.py): rank 1 misbehaves as ``sys.argv[1]`` says
while rank 0 waits in an all_reduce with a short timeout."""
import datetime
import sys
import time

import engine
import engine.distributed as dist


def main(mode):
    dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=3))
    if dist.get_rank() == 1:
        if mode == "raise":
            raise ValueError("rank 1 fails on purpose")
        if mode == "hang":
            time.sleep(60)
        if mode == "exit":
            sys.exit(3)
    dist.all_reduce(engine.ones(4))
    print(f"rank {dist.get_rank()} finished the all_reduce", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
