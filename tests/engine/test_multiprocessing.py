"""``engine.multiprocessing`` against ``torch.multiprocessing``: shared-memory tensors (``share_memory_``,
``is_shared``, ``Module.share_memory``) that children update in place through queues and process
arguments, ``spawn`` / ``start_processes`` with their exceptions, and the module's names.

Children run with the fork start method where the behaviour does not depend on it (quick); the
spawn start method, which pickles everything a child gets, is tested on its own (slower: each child
starts Python and imports the engine)."""
import multiprocessing.reduction

import numpy as np
import pytest
import torch
import torch.multiprocessing as torch_mp

import engine
import engine.multiprocessing as mp
import mp_workers

LIBS = {"torch": (torch, torch_mp), "engine": (engine, mp)}


def _exchange(lib_name, start_method, tensors):
    """Send each tensor to a child that adds 1 in place; what the child reported, and the tensors after."""
    lib, lib_mp = LIBS[lib_name]
    context = lib_mp.get_context(start_method)
    inbox, outbox = context.Queue(), context.Queue()
    child = context.Process(target=mp_workers.add_one_from_queue, args=(inbox, outbox))
    child.start()
    reports = []
    for tensor in tensors:
        inbox.put(tensor)
        reports.append(outbox.get(timeout=60))
    inbox.put(None)
    child.join(60)
    assert child.exitcode == 0
    return reports, [t.tolist() for t in tensors]


def _shared_tensors(lib):
    base = lib.arange(12, dtype=lib.float32).reshape(3, 4).share_memory_()
    parameter = lib.nn.Parameter(lib.ones(2, 3))
    parameter.share_memory_()
    return [base, parameter, base[1:, ::2]]  # a strided view of the shared base travels as a view


def test_share_memory_and_is_shared_as_torch():
    for lib in (torch, engine):
        t = lib.arange(6, dtype=lib.float64).reshape(2, 3)
        assert t.is_shared() is False
        assert t.share_memory_() is t and t.is_shared() is True
        pointer = t.data_ptr()
        assert t.share_memory_().data_ptr() == pointer  # already shared: nothing moves
        assert t.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
        assert t[1].is_shared() and t.clone().is_shared() is False
        empty = lib.zeros(0).share_memory_()
        assert empty.is_shared() and empty.shape == (0,)


@pytest.mark.parametrize("lib_name", ["torch", "engine"])
def test_children_update_shared_tensors_through_a_queue(lib_name):
    lib, _ = LIBS[lib_name]
    tensors = _shared_tensors(lib)
    reports, after = _exchange(lib_name, "fork", tensors)
    expected_base = (np.arange(12.0).reshape(3, 4) + 1)
    expected_base[1:, ::2] += 1  # the view's update lands in the base too
    assert after[0] == expected_base.tolist()
    assert after[1] == [[2.0] * 3] * 2
    assert after[2] == expected_base[1:, ::2].tolist()
    assert [r[:3] for r in reports] == [("Tensor", False, True), ("Parameter", True, True), ("Tensor", False, True)]


def test_engine_and_torch_agree_through_queues():
    assert _exchange("engine", "fork", _shared_tensors(engine)) == _exchange("torch", "fork", _shared_tensors(torch))


def test_a_tensor_not_in_shared_memory_is_sent_as_a_copy():
    """Deliberately unlike torch (which moves it into shared memory first): share_memory_() shares."""
    t = engine.zeros(3)
    reports, after = _exchange("engine", "fork", [t])
    assert reports == [("Tensor", False, False, [1.0, 1.0, 1.0])] and after == [[0.0, 0.0, 0.0]]
    assert t.is_shared() is False


def test_what_cannot_cross_processes_is_one_line():
    leaf = engine.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="non-leaf tensor that requires grad"):
        multiprocessing.reduction.ForkingPickler.dumps(leaf * 2)
    with pytest.raises(RuntimeError, match="non-leaf tensor"):
        multiprocessing.reduction.ForkingPickler.dumps(torch.ones(2, requires_grad=True) * 2)


def test_cuda_tensors_are_refused_and_not_shared(cuda):
    t = engine.ones(3, device="cuda")
    assert t.share_memory_() is t and t.is_shared() is False and t.device.type == "cuda"
    with pytest.raises(RuntimeError, match="cannot send a cuda:0 tensor to another process"):
        multiprocessing.reduction.ForkingPickler.dumps(t)


_HOGWILD = {}


def _hogwild(lib_name):
    """A child's SGD steps on a shared model: the parent's first weight after them (computed once)."""
    if lib_name in _HOGWILD:
        return _HOGWILD[lib_name]
    lib, lib_mp = LIBS[lib_name]
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(5, 3), lib.nn.BatchNorm1d(3))
    weights = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    with lib.no_grad():
        model[0].weight.copy_(lib.tensor(weights))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    assert model.share_memory() is model
    assert all(t.is_shared() for t in [*model.parameters(), *model.buffers()])
    assert all(before[k].tolist() == v.tolist() for k, v in model.state_dict().items())
    inputs = lib.tensor(np.random.default_rng(1).standard_normal((4, 5)).astype(np.float32))
    lib_mp.start_processes(mp_workers.sgd_steps_on_shared_model, args=(model, inputs, 3), nprocs=1,
                           start_method="fork")
    assert int(model[1].num_batches_tracked) == 3  # buffers are shared too
    _HOGWILD[lib_name] = (weights, model[0].weight.detach().numpy().copy())
    return _HOGWILD[lib_name]


@pytest.mark.parametrize("lib_name", [pytest.param("torch", marks=pytest.mark.slow), "engine"])
def test_module_share_memory_hogwild(lib_name):
    """A child's SGD steps on a shared model change the parent's parameters and buffers."""
    weights, changed = _hogwild(lib_name)
    assert not np.allclose(changed, weights)


@pytest.mark.slow  # a forked child's first torch backward takes seconds
def test_hogwild_results_agree_with_torch():
    np.testing.assert_allclose(_hogwild("engine")[1], _hogwild("torch")[1], rtol=1e-5, atol=1e-6)


def _failure(lib_mp, fn, args=(), nprocs=2):
    with pytest.raises((lib_mp.ProcessRaisedException, lib_mp.ProcessExitedException)) as info:
        lib_mp.start_processes(fn, args=args, nprocs=nprocs, start_method="fork")
    return info.value


def test_an_exception_in_a_child_raises_in_the_parent_with_its_traceback():
    ours = _failure(mp, mp_workers.raise_at_rank_one, ("x",))
    theirs = _failure(torch_mp, mp_workers.raise_at_rank_one, ("x",))
    for error in (ours, theirs):
        assert type(error).__name__ == "ProcessRaisedException" and error.error_index == 1 and error.error_pid > 0
        text = str(error)
        assert text.startswith("\n\n-- Process 1 terminated with the following error:\nTraceback (most recent call last):")
        assert 'raise ValueError(f"bad rank {rank}: {text}")' in text
        assert text.rstrip().endswith("ValueError: bad rank 1: x")
    assert [c.__name__ for c in type(ours).__mro__] == [c.__name__ for c in type(theirs).__mro__]


@pytest.mark.parametrize("fn,message,code,signal_name", [
    (mp_workers.exit_with_three, "process 0 terminated with exit code 3", 3, None),
    (mp_workers.kill_myself, "process 0 terminated with signal SIGKILL", -9, "SIGKILL")])
def test_a_child_that_exits_badly(fn, message, code, signal_name):
    for lib_mp in (mp, torch_mp):
        error = _failure(lib_mp, fn, nprocs=1)
        assert type(error).__name__ == "ProcessExitedException"
        assert (str(error), error.error_index, error.exit_code, error.signal_name) == (message, 0, code, signal_name)


def test_start_processes_without_join_gives_the_context():
    shared = engine.zeros(3).share_memory_()
    context = mp.start_processes(mp_workers.write_rank, args=(shared, 10), nprocs=3, join=False,
                                 start_method="fork")
    assert isinstance(context, mp.ProcessContext) and len(context.pids()) == 3
    while not context.join(timeout=60):
        pass
    assert context.join() is True
    assert shared.tolist() == [10.0, 11.0, 12.0]


@pytest.mark.slow
def test_spawn_passes_the_rank_first_and_shares_tensor_arguments():
    """The spawn start method pickles the arguments: the shared tensor goes by file descriptor."""
    shared = engine.zeros(2).share_memory_()
    assert mp.spawn(mp_workers.write_rank, args=(shared, 5), nprocs=2) is None
    assert shared.tolist() == [5.0, 6.0]
    with pytest.warns(FutureWarning, match="only supports start_method=spawn"):
        mp.spawn(mp_workers.write_rank, args=(shared, 7), nprocs=1, start_method="fork")
    assert shared.tolist() == [7.0, 6.0]


@pytest.mark.slow
def test_spawned_child_updates_through_a_queue():
    reports, after = _exchange("engine", "spawn", _shared_tensors(engine))
    assert after[1] == [[2.0] * 3] * 2 and [r[2] for r in reports] == [True, True, True]


def test_pool_maps_tensors():
    with mp.get_context("fork").Pool(2) as pool:
        squares = pool.map(mp_workers.square, [engine.tensor([float(i), 2.0]) for i in range(4)])
    assert [s.tolist() for s in squares] == [[float(i * i), 4.0] for i in range(4)]


def test_names_are_torchs():
    missing = [name for name in torch_mp.__all__ if not hasattr(mp, name)]
    assert missing == []
    for name in ("spawn", "start_processes", "ProcessContext", "ProcessRaisedException", "ProcessExitedException",
                 "Process", "Queue", "SimpleQueue", "Pool", "get_context", "set_start_method",
                 "get_start_method", "cpu_count"):
        assert hasattr(mp, name) and hasattr(torch_mp, name), name
    assert mp.get_sharing_strategy() == "file_descriptor" and mp.get_all_sharing_strategies() == {"file_descriptor"}
    mp.set_sharing_strategy("file_descriptor")
    with pytest.raises(ValueError, match="sharing strategy 'file_system' is not supported"):
        mp.set_sharing_strategy("file_system")
