"""numpy CPU kernels: forward/backward array functions (convolution, pooling, interpolation, ...) on ndarrays."""
