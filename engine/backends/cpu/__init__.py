"""numpy CPU kernels: convolution, pooling and interpolation forward/backward on ndarrays."""
