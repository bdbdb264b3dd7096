"""Worker started by ``python -m engine.distributed.run`` in test_distributed_launcher.py: reports torchrun's
variables as the script sees them before init, its arguments, and an all_reduce over the job."""
import json
import os
import sys

placement = {name: os.environ.get(name) for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")}

import engine  # noqa: E402  (the variables are read before anything starts MPI)
import engine.distributed as dist  # noqa: E402

dist.init_process_group()
total = engine.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(total)
with open(os.path.join(sys.argv[1], f"rank{dist.get_rank()}.json"), "w") as f:
    json.dump({"placement": placement, "argv": sys.argv[2:], "name": __name__, "total": total.item(),
               "backend": dist.get_backend()}, f)
dist.destroy_process_group()
