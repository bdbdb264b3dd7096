"""torch's mt19937 generator state: how a seed fills it, and its bytes in ``torch.get_rng_state()``.

The stream itself is numpy's ``MT19937`` (the same recurrence and tempering); only its seeding and
its position bookkeeping differ from torch's, and are translated here. torch's bytes are the POD
``CPUGeneratorImplState``: the initial seed, ``left`` (words until the next twist, plus one),
``seeded``, ``next`` (index of the next word), the 624 state words widened to 64 bits, three unused
doubles of which the middle one is the cached normal sample, its valid flag, then the cached float
normal sample and its flag, padded to 8 bytes.
"""
import struct

import numpy as np

WORDS = 624
STATE_BYTES = 5056
_HEADER = struct.Struct("<QiiQ")
_WORDS_AT = _HEADER.size
_NORMAL_AT = _WORDS_AT + 8 * WORDS
_NORMAL = struct.Struct("<dddifB")


def key_for_seed(seed):
    """The 624 words mt19937 starts from for a 64-bit seed (torch keeps only its low 32 bits)."""
    key = np.empty(WORDS, np.uint32)
    word = seed & 0xFFFFFFFF
    key[0] = word
    for j in range(1, WORDS):
        word = (1812433253 * (word ^ (word >> 30)) + j) & 0xFFFFFFFF
        key[j] = word
    return key


def numpy_state(key, position):
    """numpy's MT19937 state dict for ``key`` with ``position`` words already used (624: twist first)."""
    return {"bit_generator": "MT19937", "state": {"key": key, "pos": int(position)}}


def pack(seed, key, position, fresh, double_normal, float_normal):
    """torch's state bytes. ``fresh``: seeded and not yet drawn from (torch then records next = 0)."""
    header = _HEADER.pack(seed, 1 + WORDS - position, 1, 0 if fresh else position)
    words = key.astype("<u8").tobytes()
    normal = _NORMAL.pack(0.0, double_normal or 0.0, 0.0, double_normal is not None,
                          float_normal or 0.0, float_normal is not None)
    return (header + words + normal).ljust(STATE_BYTES, b"\0")


def unpack(data):
    """(seed, key, position, fresh, double_normal, float_normal) from torch's state bytes (``fresh``:
    seeded and not drawn from); ValueError if invalid."""
    if len(data) != STATE_BYTES:
        raise ValueError(f"Expected a CPUGeneratorImplState of size {STATE_BYTES} but found the input RNG "
                         f"state size to be {len(data)}")
    seed, left, seeded, next_word = _HEADER.unpack_from(data, 0)
    if not seeded or not 0 < left <= WORDS or next_word > WORDS:
        raise ValueError("Invalid mt19937 state")
    key = np.frombuffer(data, "<u8", WORDS, _WORDS_AT).astype(np.uint32)
    _, double_normal, _, double_valid, float_normal, float_valid = _NORMAL.unpack_from(data, _NORMAL_AT)
    return (seed, key, 1 + WORDS - left, left == 1 and next_word == 0, double_normal if double_valid else None,
            float_normal if float_valid else None)
