"""``python -m engine.distributed.run``: start a training script on several processes, torchrun-style,
through the MPI launcher (``mpiexec``: MPICH's Hydra, or Open MPI's).

    python -m engine.distributed.run --nproc-per-node 2 train.py --epochs 3
    python -m engine.distributed.run --nproc-per-node 4 --hosts node1,node2 train.py   # 8 processes

Each process gets torchrun's variables (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``)
before the script starts, and ``init_process_group()`` joins them. Unless ``OMP_NUM_THREADS`` is set,
each process gets an equal share of this host's cores for its BLAS threads. Several hosts need the same Python
environment and paths on each and password-less ssh between them (as MPI always does); ``--hostfile``
takes MPI's host file instead of ``--hosts``. ``--dry-run`` prints the mpiexec command instead.
"""
import argparse
import os
import shlex
import shutil
import subprocess
import sys


def _parser():
    parser = argparse.ArgumentParser(prog="python -m engine.distributed.run",
                                     description="Start a script on several processes through mpiexec.")
    parser.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1,
                        help="processes on each host (default 1)")
    hosts = parser.add_mutually_exclusive_group()
    hosts.add_argument("--hosts", help="comma-separated host names (default: this host only)")
    hosts.add_argument("--hostfile", help="an MPI host file, one host a line")
    parser.add_argument("--mpiexec", help="the mpiexec to use (default: the one beside this Python, else on PATH)")
    parser.add_argument("--dry-run", action="store_true", help="print the command instead of running it")
    parser.add_argument("-m", "--module", action="store_true", help="run the script argument as a module")
    parser.add_argument("script", help="the training script (or module, with -m)")
    parser.add_argument("script_args", nargs=argparse.REMAINDER, help="the script's own arguments")
    return parser


def find_mpiexec(explicit=None):
    """The mpiexec to start processes with: ``explicit``, the one beside this Python (pip's mpich puts it
    there), or the first on PATH; one line naming the fix where there is none."""
    if explicit:
        return explicit
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    found = beside if os.path.exists(beside) else shutil.which("mpiexec")
    if found is None:
        raise SystemExit("engine.distributed.run: no mpiexec found: pip install mpi4py mpich (or pass --mpiexec)")
    return found


def launcher_flavour(mpiexec):
    """``"openmpi"`` or ``"hydra"`` (MPICH, Intel MPI and MVAPICH use Hydra's options)."""
    try:
        version = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=30)
    except OSError as e:
        raise SystemExit(f"engine.distributed.run: cannot run {mpiexec}: {e}") from None
    text = version.stdout + version.stderr
    return "openmpi" if "Open MPI" in text or "OpenRTE" in text else "hydra"


def _host_count(args):
    if args.hosts:
        return len([h for h in args.hosts.split(",") if h.strip()])
    if args.hostfile:
        with open(args.hostfile) as f:
            return len([line for line in f if line.strip() and not line.lstrip().startswith("#")])
    return 1


def placement_options(args, flavour):
    """mpiexec's options placing ``--nproc-per-node`` processes on each host."""
    per_node = str(args.nproc_per_node)
    if flavour == "openmpi":
        if args.hosts:
            return ["--host", ",".join(f"{h}:{per_node}" for h in args.hosts.split(",")),
                    "--map-by", f"ppr:{per_node}:node"]
        if args.hostfile:
            return ["--hostfile", args.hostfile, "--map-by", f"ppr:{per_node}:node"]
        return []
    if args.hosts:
        return ["-hosts", args.hosts, "-ppn", per_node]
    if args.hostfile:
        return ["-f", args.hostfile, "-ppn", per_node]
    return []


def build_command(args, mpiexec, flavour):
    """The mpiexec command line that starts the job."""
    if args.nproc_per_node < 1:
        raise SystemExit(f"engine.distributed.run: --nproc-per-node must be at least 1, got {args.nproc_per_node}")
    total = args.nproc_per_node * _host_count(args)
    target = ["-m", args.script] if args.module else [args.script]
    return ([mpiexec, "-n", str(total)] + placement_options(args, flavour)
            + [sys.executable, "-m", "engine.distributed.launch_worker"] + target + list(args.script_args))


def thread_settings(nproc_per_node, environ=None):
    """``OMP_NUM_THREADS`` for each process where it is not set: this host's cores shared out among its
    processes (BLAS threads of processes that share the cores only contend; torchrun sets it to 1)."""
    environ = os.environ if environ is None else environ
    if "OMP_NUM_THREADS" in environ or nproc_per_node < 2:
        return {}
    return {"OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 1) // nproc_per_node))}


def main(argv=None):
    args = _parser().parse_args(argv)
    mpiexec = find_mpiexec(args.mpiexec)
    command = build_command(args, mpiexec, launcher_flavour(mpiexec))
    threads = thread_settings(args.nproc_per_node)
    if args.dry_run:
        print(" ".join([f"{k}={v}" for k, v in threads.items()] + [shlex.join(command)]))
        return 0
    return subprocess.run(command, env={**os.environ, **threads}).returncode


if __name__ == "__main__":
    sys.exit(main())
