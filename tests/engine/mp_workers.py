"""Functions that the multiprocessing tests run in child processes. They live apart from the test module
so that a spawned child imports only this (and the library of the tensor it gets), not torch with the
tests; each works on engine and torch tensors alike."""
import os
import signal
import sys


def add_one_from_queue(inbox, outbox):
    """Take tensors from ``inbox`` until None; add 1 to each in place (through ``.data``: a parameter
    requires grad); report its kind and sharing."""
    while (tensor := inbox.get()) is not None:
        tensor.data.add_(1)
        outbox.put((type(tensor).__name__, tensor.requires_grad, tensor.is_shared(), tensor.tolist()))


def write_rank(rank, shared, offset):
    """``spawn``'s target: write ``rank + offset`` at ``shared[rank]``."""
    shared[rank] = rank + offset


def raise_at_rank_one(rank, text):
    if rank == 1:
        raise ValueError(f"bad rank {rank}: {text}")


def exit_with_three(rank):
    sys.exit(3)


def kill_myself(rank):
    os.kill(os.getpid(), signal.SIGKILL)


def sgd_steps_on_shared_model(rank, model, inputs, steps):
    """Hogwild's child: a few SGD steps on a shared model, whatever library it is from."""
    lib = sys.modules[type(model).__module__.split(".")[0]]
    lib.set_num_threads(1)  # torch's OpenMP pool hangs in a child forked after the parent used it
    optimizer = lib.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        optimizer.zero_grad()
        model(inputs).square().sum().backward()
        optimizer.step()


def square(tensor):
    return tensor * tensor
