"""engine.distributed's queries that need no process group, in this single process: backend
availability, default backends, launcher queries, the error classes and what needs a group refusing
without one (nothing here starts MPI)."""
import pytest

import engine.distributed as dist


def test_backend_availability():
    assert dist.is_backend_available("mpi") == dist.is_mpi_available()
    assert dist.is_backend_available("nccl") == dist.is_nccl_available()
    assert dist.is_backend_available("cpu:mpi,cuda:nccl") == (dist.is_mpi_available() and dist.is_nccl_available())
    assert not any([dist.is_gloo_available(), dist.is_ucc_available(), dist.is_xccl_available(),
                    dist.is_backend_available("gloo")])


def test_default_backend_for_device():
    assert dist.get_default_backend_for_device("cpu") == "mpi"
    assert dist.get_default_backend_for_device("cuda:1") == "nccl"
    import engine
    assert dist.get_default_backend_for_device(engine.device("cuda", 0)) == "nccl"
    with pytest.raises(ValueError, match="^Default backend not registered for device : mps$"):
        dist.get_default_backend_for_device("mps")


def test_launcher_queries(monkeypatch):
    monkeypatch.delenv("TORCHELASTIC_RUN_ID", raising=False)
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert not dist.is_torchelastic_launched()
    assert dist.get_node_local_rank(fallback_rank=3) == 3
    with pytest.raises(RuntimeError, match="^LOCAL_RANK is not in the environment. Consider passing fallback_rank"):
        dist.get_node_local_rank()
    monkeypatch.setenv("LOCAL_RANK", "2")
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "job")
    assert dist.get_node_local_rank(fallback_rank=3) == 2 and dist.is_torchelastic_launched()


def test_error_classes():
    assert issubclass(dist.DistError, RuntimeError)
    for kind in (dist.DistBackendError, dist.DistNetworkError, dist.DistStoreError):
        assert issubclass(kind, dist.DistError)


def test_without_a_default_group():
    assert dist.group.WORLD is None and not dist.is_initialized()
    assert dist.GroupMember.NON_GROUP_MEMBER == -100
    assert dist.get_rank(dist.GroupMember.NON_GROUP_MEMBER) == -1
    assert dist.get_world_size(dist.GroupMember.NON_GROUP_MEMBER) == -1
    for call in (lambda: dist.new_group([0]), lambda: dist.get_process_group_ranks(None),
                 lambda: dist.all_to_all([], []), lambda: dist.gather_object(1),
                 lambda: dist.monitored_barrier()):
        with pytest.raises(ValueError, match="^Default process group has not been initialized"):
            call()
