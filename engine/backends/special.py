"""Special functions that ops and the kernels of both devices share."""
import numpy as np


def erf(xp, x):
    """erf of a float array of module ``xp`` (numpy or CuPy), in its dtype: SciPy's (CuPy's on the GPU) where
    installed, else a fit with |error| < 1.2e-7 (Numerical Recipes' erfc Chebyshev fit): SciPy is not required."""
    try:
        if xp is np:
            from scipy.special import erf as special_erf
        else:
            from cupyx.scipy.special import erf as special_erf
        return special_erf(x).astype(x.dtype, copy=False)
    except ImportError:
        pass
    z = xp.abs(x).astype(np.float64)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (
            -0.82215223 + t * 0.17087277))))))))
    erfc = t * xp.exp(poly)
    return xp.where(x >= 0, 1 - erfc, erfc - 1).astype(x.dtype)
