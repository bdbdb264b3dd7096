"""The default process group: which processes take part, over which transports, with which timeout.

``init_process_group`` joins the processes MPI started (``mpiexec -n N`` or ``python -m
engine.distributed.run``); a process started alone is a group of one. The group has its own MPI
communicator (a duplicate of ``COMM_WORLD``, so the user's own MPI calls never mix with its messages),
over which host arrays travel; with ``backend="nccl"`` CUDA arrays travel over an NCCL communicator
whose unique id rank 0 broadcasts over MPI. With ``backend="mpi"``, CUDA arrays are staged through
host memory. MPI is started by the first ``init_process_group``, not by importing the package.
Subgroups (``subgroups.py``) are ProcessGroups over a communicator split from the default group's.

An uncaught exception on any rank aborts the whole MPI job (as ``python -m mpi4py`` does), so that no
rank is left waiting for one that died; a rank stuck in a call raises after the group's timeout.
"""
import datetime
import importlib.util
import sys
import time

from .environment import launcher_placement

#: torch's default_pg_timeout
DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)
_ABORT_GRACE_SECONDS = 0.5  # time for the launcher to pass on a failing rank's last output before the abort
_NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                    "init_process_group.")


class Backend(str):
    """A backend name (``Backend.MPI``, ``Backend.NCCL``), lower-cased as torch's."""

    MPI = "mpi"
    NCCL = "nccl"

    def __new__(cls, name):
        value = str(name).lower()
        if value not in (cls.MPI, cls.NCCL):
            raise ValueError(f"backend {name!r} is not available here: use 'mpi' (CPU tensors, and CUDA "
                             "tensors staged through the host) or 'nccl' (CUDA tensors)")
        return super().__new__(cls, value)


class ProcessGroup:
    """Processes that communicate together: the job's default group, or a subgroup of it (``new_group``).

    ``ranks`` are the members' global ranks in the order of their group ranks; ``rank()`` and ``size()``
    are this process's rank in the group and the group's size, as torch's ``ProcessGroup``."""

    def __init__(self, backend, timeout, comm, ranks=None, device_id=None, group_desc=None):
        from .mpi_transport import MPITransport
        self.backend = backend
        self.timeout = timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout)
        self.comm = comm
        self._rank = comm.Get_rank()
        self._size = comm.Get_size()
        self.ranks = list(range(self._size)) if ranks is None else list(ranks)
        self.group_desc = group_desc or ("default_pg" if ranks is None else "undefined")
        self.mpi = MPITransport(comm, self)
        self.nccl = None
        if backend == Backend.NCCL:
            from .nccl_transport import NCCLTransport
            self.mpi.barrier().wait()  # every rank is here before NCCL's initialisation, which cannot time out
            self.nccl = NCCLTransport(self, _device_index(device_id))

    def rank(self):
        """This process's rank in the group."""
        return self._rank

    def size(self):
        """The number of processes in the group."""
        return self._size

    def destroy(self):
        if self.nccl is not None:
            self.nccl.destroy()
        self.mpi.free()
        self.comm.Free()

    def __repr__(self):
        return (f"ProcessGroup(backend={self.backend!r}, rank={self._rank}, size={self._size}, "
                f"ranks={self.ranks})")


def _device_index(device_id):
    """The GPU index ``init_process_group``'s ``device_id`` names (None: let the transport choose)."""
    if device_id is None:
        return None
    from .._device import device
    return device(device_id).index or 0


class _World:
    """The state of this process: its default group (None before ``init_process_group``)."""

    group = None
    subgroups = []  # the groups new_group made that this process belongs to, not destroyed yet
    previous_excepthook = None


def is_available():
    """Whether distributed runs can work here: mpi4py is installed (MPI itself starts at init)."""
    return is_mpi_available()


def is_mpi_available():
    return importlib.util.find_spec("mpi4py") is not None


def is_nccl_available():
    """Whether CuPy with its NCCL bindings is installed (a GPU is needed to use them)."""
    if importlib.util.find_spec("cupy") is None:
        return False
    try:
        nccl = importlib.import_module("cupy.cuda.nccl")
    except Exception:
        return False
    return bool(getattr(nccl, "available", True))


def is_gloo_available():
    """False: there is no Gloo here (CPU tensors travel over MPI)."""
    return False


def is_ucc_available():
    """False: there is no UCC backend here."""
    return False


def is_xccl_available():
    """False: there is no XCCL (Intel GPU) backend here."""
    return False


def is_backend_available(backend):
    """Whether ``backend`` ("mpi", "nccl", or another of torch's names) can be used here."""
    name = str(backend).lower()
    if ":" in name:  # torch's device-qualified form, "cpu:mpi,cuda:nccl"
        return all(is_backend_available(part.split(":")[-1]) for part in name.split(","))
    return {Backend.MPI: is_mpi_available, Backend.NCCL: is_nccl_available}.get(name, lambda: False)()


def get_default_backend_for_device(device):
    """The backend a group uses for tensors on ``device`` (a string or device): "mpi" for the CPU,
    "nccl" for CUDA."""
    kind = getattr(device, "type", None) or str(device).split(":")[0]
    backend = {"cpu": Backend.MPI, "cuda": Backend.NCCL}.get(kind)
    if backend is None:
        raise ValueError(f"Default backend not registered for device : {device}")
    return str(backend)


def is_initialized():
    return _World.group is not None


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """Join this process to the job's default process group (``torch.distributed.init_process_group``).

    The ranks are MPI's; ``world_size``/``rank`` arguments and the ``WORLD_SIZE``/``RANK`` variables,
    where given, must agree with them. ``backend`` is ``"mpi"`` (default) or ``"nccl"``; ``timeout``
    (a ``timedelta``, 30 minutes by default) bounds every wait for another rank."""
    if _World.group is not None:
        raise RuntimeError("trying to initialize the default process group twice!")
    backend = Backend(backend or Backend.MPI)
    if init_method not in (None, "env://") or store is not None:
        raise ValueError("engine.distributed joins the processes MPI started: init_method and store are not "
                         "used (start the job with `python -m engine.distributed.run` or mpiexec)")
    if not is_mpi_available():
        raise RuntimeError("engine.distributed needs mpi4py and an MPI library: pip install mpi4py mpich")
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    _check_placement(comm.Get_rank(), comm.Get_size(), rank, world_size)
    _World.group = ProcessGroup(backend, timeout or DEFAULT_TIMEOUT, comm.Dup(), device_id)
    _World.previous_excepthook = sys.excepthook
    sys.excepthook = _abort_job_on_uncaught_exception


def _check_placement(mpi_rank, mpi_size, rank, world_size):
    """One line when the launcher's variables or the arguments disagree with the processes MPI started."""
    stated = launcher_placement()
    sources = []
    if stated is not None:
        sources.append(("RANK/WORLD_SIZE from the environment", stated[0], stated[1]))
    if world_size is not None and world_size >= 0:
        sources.append(("init_process_group's rank/world_size", rank if rank >= 0 else mpi_rank, world_size))
    for where, stated_rank, stated_size in sources:
        if (stated_rank, stated_size) != (mpi_rank, mpi_size):
            raise RuntimeError(f"{where} say rank {stated_rank} of {stated_size}, but MPI started this process "
                               f"as rank {mpi_rank} of {mpi_size}: start {stated_size} processes with "
                               f"`python -m engine.distributed.run --nproc-per-node {stated_size} script.py` "
                               f"or `mpiexec -n {stated_size} python script.py`")


def _abort_job_on_uncaught_exception(kind, value, traceback):
    """Print the error, then end every rank of the job: the others would otherwise wait for this one."""
    previous = _World.previous_excepthook or sys.__excepthook__
    previous(kind, value, traceback)
    group = _World.group
    if group is not None and group.size() > 1:
        sys.stderr.write(f"engine.distributed: rank {group.rank()} failed; aborting all {group.size()} ranks\n")
        sys.stderr.flush()
        # the launcher forwards each rank's output through a pipe, and Abort kills the job at once: without a
        # pause, the traceback just written was sometimes lost on a loaded machine
        time.sleep(_ABORT_GRACE_SECONDS)
        from mpi4py import MPI
        MPI.COMM_WORLD.Abort(1)


def destroy_process_group(group=None):
    """Leave ``group``: a subgroup, or (None, the default) every group, the default one last (MPI stays
    started for a later ``init_process_group``)."""
    current = resolve(group) if not is_non_member(group) else None
    if current is None:
        return
    if current is not _World.group:
        _World.subgroups.remove(current)
        current.destroy()
        return
    while _World.subgroups:
        _World.subgroups.pop().destroy()
    _World.group = None
    if sys.excepthook is _abort_job_on_uncaught_exception:
        sys.excepthook = _World.previous_excepthook
    current.destroy()


def is_non_member(group):
    """Whether ``group`` is ``GroupMember.NON_GROUP_MEMBER``: what ``new_group`` returns to the ranks it
    leaves out."""
    return isinstance(group, int) and not isinstance(group, bool) and group == NON_GROUP_MEMBER


def resolve(group=None):
    """The ProcessGroup ``group`` names: None or ``group.WORLD`` for the default group, or a subgroup this
    process belongs to (one line for anything else, including ``NON_GROUP_MEMBER``)."""
    current = _World.group
    if current is None:
        raise ValueError(_NOT_INITIALIZED)
    if group is None or group is current:
        return current
    if isinstance(group, ProcessGroup) and group in _World.subgroups:
        return group
    if is_non_member(group):
        raise ValueError(f"rank {current.rank()} is not a member of the given group (new_group returned "
                         "GroupMember.NON_GROUP_MEMBER to it)")
    raise ValueError(f"Invalid process group specified: {group!r} (pass None, group.WORLD, or a group "
                     "new_group returned that has not been destroyed)")


def get_rank(group=None):
    """This process's rank in ``group`` (the default group when None); -1 where it is not a member."""
    return -1 if is_non_member(group) else resolve(group).rank()


def get_world_size(group=None):
    """The number of processes in ``group`` (the default group when None); -1 where this one is not a member."""
    return -1 if is_non_member(group) else resolve(group).size()


def get_backend(group=None):
    return resolve(group).backend


#: what ``new_group`` returns to the ranks it leaves out (torch's value)
NON_GROUP_MEMBER = -100


class _GroupNamespace(type):
    @property
    def WORLD(cls):
        """The default process group (None before ``init_process_group``), as torch's ``group.WORLD``."""
        return _World.group


class group(metaclass=_GroupNamespace):
    """torch's ``dist.group`` namespace: ``group.WORLD`` (the default group) and ``NON_GROUP_MEMBER``."""

    NON_GROUP_MEMBER = NON_GROUP_MEMBER


GroupMember = group
