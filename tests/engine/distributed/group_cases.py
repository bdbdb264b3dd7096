"""The subgroups of the three-rank groups test and each member's inputs, reproducible in any process
(the ranks make them, test_distributed_groups.py makes them again to compute numpy's answers)."""
RANKS = 3
#: name: (the ranks new_group is given, its sort_ranks); group ranks follow the sorted list unless unsorted
GROUPS = {"pair01": ([1, 0], True), "pair12": ([1, 2], True), "pair20": ([2, 0], False), "world": (None, True)}
DTYPES = ("float32", "float64", "int64")
SHAPES = ((0,), (1,), (7,), (3, 5))
NCCL_SHAPES = ((0,), (3, 5))  # the emulated NCCL run: fewer cases, each costs an emulated launch


def members(name):
    """The group's global ranks in group-rank order."""
    ranks, sort_ranks = GROUPS[name]
    if ranks is None:
        return list(range(RANKS))
    return sorted(ranks) if sort_ranks else list(ranks)
