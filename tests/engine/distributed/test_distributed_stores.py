"""HashStore, FileStore, PrefixStore and TCPStore: torch's Store semantics (set/get/add/compare_set/wait/
num_keys/delete_key/check, timeouts as DistStoreError), checked against torch's own HashStore in this
process; a FileStore shared by two MPI processes (rank_stores.py); a TCPStore's master and a client."""
import datetime
import json
import socket
import threading
import time

import pytest
import torch.distributed as torch_dist

pytestmark = pytest.mark.slow  # an MPI job of a few seconds: outside the quick subset

import engine.distributed as dist
from distributed_runner import check_ok, run_ranks


def _script(store):
    """The same calls on an engine or a torch store; what each returned."""
    seen = [store.set("a", "1"), store.get("a"), store.add("n", 3), store.add("n", 2), store.get("n"),
            store.compare_set("a", "1", "2"), store.compare_set("a", "x", "3"), store.get("a"),
            store.compare_set("b", "", b"new"), store.compare_set("c", "zz", "new"), store.check(["c"]),
            store.num_keys(), store.delete_key("b"), store.delete_key("b"), store.num_keys(),
            store.check(["a", "n"]), store.check(["a", "q"])]
    store.append("w", "x")
    store.append("w", b"y")
    store.multi_set(["m1", "m2"], ["1", b"2"])
    return seen + [store.multi_get(["w", "m1", "m2"]), sorted(store.list_keys()), store.timeout]


@pytest.mark.parametrize("make", ["hash", "file", "prefix", "tcp"])
def test_store_calls_match_torch_hash_store(make, tmp_path):
    expected = _script(torch_dist.HashStore())
    if make == "hash":
        store = dist.HashStore()
    elif make == "file":
        store = dist.FileStore(str(tmp_path / "store"), 1)
    elif make == "prefix":
        store = dist.PrefixStore("pre", dist.HashStore())
    else:
        store = dist.TCPStore("127.0.0.1", 0, 1, True)
    assert _script(store) == expected
    assert isinstance(store, dist.Store)


def test_prefix_store_keys_live_in_the_underlying_store():
    inner = dist.HashStore()
    inner.set("outside", "x")
    prefixed = dist.PrefixStore("job", inner)
    prefixed.set("k", b"v")
    assert inner.get("job/k") == b"v" and prefixed.get("k") == b"v"
    assert prefixed.num_keys() == 2 and prefixed.list_keys() == ["k"] and prefixed.underlying_store is inner


def test_waits_end_when_another_thread_sets_the_key_or_time_out():
    store = dist.HashStore()
    threading.Timer(0.05, lambda: store.set("late", "here")).start()
    start = time.monotonic()
    assert store.get("late") == b"here" and time.monotonic() - start < 5
    store.set_timeout(datetime.timedelta(seconds=0.05))
    with pytest.raises(dist.DistStoreError, match="^Wait timeout$"):
        store.get("missing")
    with pytest.raises(dist.DistStoreError, match="^Wait timeout$"):
        store.wait(["late", "missing"], datetime.timedelta(seconds=0.05))
    assert issubclass(dist.DistStoreError, dist.DistError) and issubclass(dist.DistError, RuntimeError)


def test_file_store_timeout_and_bad_counter(tmp_path):
    store = dist.FileStore(tmp_path / "store")
    store.set_timeout(datetime.timedelta(seconds=0.05))
    with pytest.raises(dist.DistStoreError, match="^Timeout waiting for key: nope after 50 ms$"):
        store.get("nope")
    store.set("text", "abc")
    with pytest.raises(ValueError, match="^store key 'text' holds 'abc', not an integer counter$"):
        store.add("text", 1)


def test_file_store_shared_by_two_processes(tmp_path):
    check_ok(run_ranks("rank_stores.py", tmp_path / "store", tmp_path, timeout=60))
    seen = [json.load(open(tmp_path / f"rank{r}.json")) for r in range(2)]
    assert seen[1]["waited"] == "from rank 0"
    # the first compare_set sets the key; the second finds it set and returns the first one's value
    assert seen[0]["won"] == seen[1]["won"] == seen[0]["winner"] == seen[1]["winner"] in ("rank 0", "rank 1")
    for rank, s in enumerate(seen):
        assert s["counter"] == 50 * 1 + 50 * 2
        assert s["keys"] == 3
        assert s["other"] == str(1 - rank)
        assert s["timeout"] == "DistStoreError: Timeout waiting for key: never set after 200 ms"


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_tcp_store_master_and_client():
    timeout = datetime.timedelta(seconds=10)
    port = _free_port()
    joined = {}
    # the master's constructor returns once both processes (here: threads) have connected
    thread = threading.Thread(target=lambda: joined.setdefault("master", dist.TCPStore("127.0.0.1", port, 2, True,
                                                                                         timeout=timeout)))
    thread.start()
    client = dist.TCPStore("127.0.0.1", port, 2, False, timeout=timeout)
    thread.join(10)
    store = joined["master"]
    assert store.port == client.port == port
    threading.Timer(0.05, lambda: store.set("late", "from the master")).start()
    assert client.get("late") == b"from the master"
    assert [client.add("n", 2), store.add("n", 3)] == [2, 5]
    client.set_timeout(datetime.timedelta(seconds=0.05))
    with pytest.raises(dist.DistStoreError, match="^wait timeout after 50ms, keys: missing$"):
        client.wait(["missing"])
    store.set("text", "abc")
    with pytest.raises(ValueError, match="^store key 'text' holds 'abc', not an integer counter$"):
        client.add("text", 1)


def test_tcp_store_connection_timeout():
    with pytest.raises(dist.DistNetworkError, match=r"^The client socket has timed out after 100ms while trying "
                       r"to connect to \(127.0.0.1, 1\).$"):
        dist.TCPStore("127.0.0.1", 1, 2, False, timeout=datetime.timedelta(seconds=0.1))
