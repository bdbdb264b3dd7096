"""PyTorch's CPU random numbers, reproduced bit for bit.

``state`` is torch's mt19937 generator state (seeding and the bytes of ``get_rng_state``);
``continuous`` and ``discrete`` are its samplers, each consuming the 32-bit stream exactly as
torch 2.x's CPU kernels do and rounding as their compiled code does (``rounding``, ``avx_math``);
``order`` is the order in which a kernel visits the elements of a strided target.
"""
