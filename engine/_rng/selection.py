"""torch's CPU ``topk`` order where keys tie: GNU libstdc++'s ``nth_element``, ``sort`` and ``partial_sort``.

Which of equal keys a top-k returns, and in which order, is whatever these algorithms leave; multinomial without
replacement takes a top-k of its keys, and its zero-probability categories all tie (key 0), so drawing more of
them than there are positive categories returns them in libstdc++'s order. The algorithms below are the
introselect, introsort and heap routines of libstdc++'s ``bits/stl_algo.h`` and ``bits/stl_heap.h``, step for
step, on a Python list with a strict "comes before" comparison.
"""
import math


def _log2(n):
    return n.bit_length() - 1


def _swap(a, i, j):
    a[i], a[j] = a[j], a[i]


def _median_to_first(a, result, x, y, z, before):
    if before(a[x], a[y]):
        pick = y if before(a[y], a[z]) else z if before(a[x], a[z]) else x
    else:
        pick = x if before(a[x], a[z]) else z if before(a[y], a[z]) else y
    _swap(a, result, pick)


def _unguarded_partition(a, first, last, pivot, before):
    while True:
        while before(a[first], a[pivot]):
            first += 1
        last -= 1
        while before(a[pivot], a[last]):
            last -= 1
        if not first < last:
            return first
        _swap(a, first, last)
        first += 1


def _partition_pivot(a, first, last, before):
    _median_to_first(a, first, first + 1, first + (last - first) // 2, last - 1, before)
    return _unguarded_partition(a, first + 1, last, first, before)


def _linear_insert(a, last, before):
    value = a[last]
    while before(value, a[last - 1]):
        a[last] = a[last - 1]
        last -= 1
    a[last] = value


def _insertion_sort(a, first, last, before):
    for i in range(first + 1, last):
        if before(a[i], a[first]):
            a[first:i + 1] = [a[i]] + a[first:i]
        else:
            _linear_insert(a, i, before)


def _push_heap(a, first, hole, top, value, before):
    parent = (hole - 1) // 2
    while hole > top and before(a[first + parent], value):
        a[first + hole] = a[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    a[first + hole] = value


def _adjust_heap(a, first, hole, length, value, before):
    top = child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if before(a[first + child], a[first + child - 1]):
            child -= 1
        a[first + hole] = a[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        a[first + hole] = a[first + child - 1]
        hole = child - 1
    _push_heap(a, first, hole, top, value, before)


def _pop_heap(a, first, last, result, before):
    value = a[result]
    a[result] = a[first]
    _adjust_heap(a, first, 0, last - first, value, before)


def _heap_select(a, first, middle, last, before):
    length = middle - first
    if length >= 2:
        for parent in range((length - 2) // 2, -1, -1):
            _adjust_heap(a, first, parent, length, a[first + parent], before)
    for i in range(middle, last):
        if before(a[i], a[first]):
            _pop_heap(a, first, middle, i, before)


def _sort_heap(a, first, last, before):
    while last - first > 1:
        last -= 1
        _pop_heap(a, first, last, last, before)


def partial_sort(a, first, middle, last, before):
    _heap_select(a, first, middle, last, before)
    _sort_heap(a, first, middle, before)


def nth_element(a, first, nth, last, before):
    if first == last or nth == last:
        return
    depth = 2 * _log2(last - first)
    while last - first > 3:
        if depth == 0:
            _heap_select(a, first, nth + 1, last, before)
            _swap(a, first, nth)
            return
        depth -= 1
        cut = _partition_pivot(a, first, last, before)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(a, first, last, before)


def _introsort(a, first, last, depth, before):
    while last - first > 16:
        if depth == 0:
            partial_sort(a, first, last, last, before)
            return
        depth -= 1
        cut = _partition_pivot(a, first, last, before)
        _introsort(a, cut, last, depth, before)
        last = cut


def sort(a, first, last, before):
    if first == last:
        return
    _introsort(a, first, last, 2 * _log2(last - first), before)
    if last - first > 16:
        _insertion_sort(a, first, first + 16, before)
        for i in range(first + 16, last):
            _linear_insert(a, i, before)
    else:
        _insertion_sort(a, first, last, before)


def _larger(x, y):
    """torch's order for the largest first: NaN before numbers, then by value."""
    return (math.isnan(x[0]) and not math.isnan(y[0])) or x[0] > y[0]


def topk_largest(keys, k):
    """The indices torch's CPU ``topk(keys, k)`` (largest, sorted) returns for the float list ``keys``."""
    queue = [(key, index) for index, key in enumerate(keys)]
    if k * 64 <= len(queue):
        partial_sort(queue, 0, k, len(queue), _larger)
    else:
        nth_element(queue, 0, k - 1, len(queue), _larger)
        sort(queue, 0, k - 1, _larger)
    return [index for _, index in queue[:k]]
