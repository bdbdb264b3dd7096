"""What each process that ``python -m engine.distributed.run`` starts under mpiexec runs first: torchrun's
variables (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``) filled in from the MPI
launcher's, then the user's script (or ``-m module``) as ``__main__``, with its own arguments."""
import os
import runpy
import sys

from .environment import export_torchrun_variables


def main(argv):
    export_torchrun_variables()
    if argv[:1] == ["-m"]:
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return
    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))  # as `python script.py` sets it
    runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
