"""Worker (run under mpiexec by test_distributed_stores.py): two processes share the FileStore at
``sys.argv[1]``: one waits for the other's key, both add to one counter and race one compare_set; each
writes what it saw to ``sys.argv[2]``/rank<r>.json."""
import datetime
import json
import os
import sys

import engine.distributed as dist


def main(path, out):
    dist.init_process_group("mpi")
    rank = dist.get_rank()
    store = dist.FileStore(path, 2)
    seen = {}
    if rank == 0:
        store.set("greeting", "from rank 0")
    else:
        seen["waited"] = store.get("greeting").decode()  # waits for rank 0's set
    for _ in range(50):
        store.add("counter", rank + 1)
    seen["won"] = store.compare_set("winner", "", f"rank {rank}").decode()
    dist.barrier()
    seen["counter"] = int(store.get("counter"))
    seen["winner"] = store.get("winner").decode()
    seen["keys"] = store.num_keys()
    dist.barrier()
    prefixed = dist.PrefixStore(f"rank{rank}", store)
    prefixed.set("own", str(rank))
    dist.barrier()
    seen["other"] = store.get(f"rank{1 - rank}/own").decode()
    store.set_timeout(datetime.timedelta(seconds=0.2))
    try:
        store.get("never set")
    except dist.DistStoreError as e:
        seen["timeout"] = f"{type(e).__name__}: {e}"
    dist.destroy_process_group()
    with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
        json.dump(seen, f)


if __name__ == "__main__":
    main(*sys.argv[1:3])
