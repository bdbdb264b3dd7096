"""The Bessel functions J0, J1, Y0, Y1 and the Airy function Ai as PyTorch evaluates them.

torch's kernels for these (``torch.special.bessel_j0`` ..., ``airy_ai``) are Cephes' rational approximations, but
they sum every polynomial from zero (no implicit leading 1 where Cephes has one), so their values differ from
scipy's (which are Cephes' own) by up to ~1e-3 relative near the zeros, in float64 too. To give torch's values this
module evaluates the same approximations the same way: the coefficients are Cephes' published ones, the arithmetic
runs in the input's dtype (float32 stays float32), elementwise over whole arrays, each branch computed everywhere
and chosen with ``where``. Callers silence floating-point warnings (branches see values they do not keep).
"""
import math

import numpy as np

_SQRT_2_OVER_PI = 0.797884560802865355879892119868763737  # the amplitude of the asymptotic forms
_TWO_OVER_PI = 0.636619772367581343075535053490057448
_PI_4, _3PI_4 = 0.785398163397448309615660845819875721, 2.356194490192344928846982537459627163

# J0 and Y0 for x > 5: modulus P/Q and phase correction in powers of 25 / x^2
_J0_PP = (7.96936729297347051624e-04, 8.28352392107440799803e-02, 1.23953371646414299388e+00,
          5.44725003058768775090e+00, 8.74716500199817011941e+00, 5.30324038235394892183e+00,
          9.99999999999999997821e-01)
_J0_PQ = (9.24408810558863637013e-04, 8.56288474354474431428e-02, 1.25352743901058953537e+00,
          5.47097740330417105182e+00, 8.76190883237069594232e+00, 5.30605288235394617618e+00,
          1.00000000000000000218e+00)
_J0_QP = (-1.13663838898469149931e-02, -1.28252718670509318512e+00, -1.95539544257735972385e+01,
          -9.32060152123768231369e+01, -1.77681167980488050595e+02, -1.47077505154951170175e+02,
          -5.14105326766599330220e+01, -6.05014350600728481186e+00)
_J0_QQ = (6.43178256118178023184e+01, 8.56430025976980587198e+02, 3.88240183605401609683e+03,
          7.24046774195652478189e+03, 5.93072701187316984827e+03, 2.06209331660327847417e+03,
          2.42005740240291393179e+02)
# J0 for x <= 5, between its first two zeros' factors
_J0_RP = (-4.79443220978201773821e+09, 1.95617491946556577543e+12, -2.49248344360967716204e+14,
          9.70862251047306323952e+15)
_J0_RQ = (4.99563147152651017219e+02, 1.73785401676374683123e+05, 4.84409658339962045305e+07,
          1.11855537045356834862e+10, 2.11277520115489217587e+12, 3.10518229857422583814e+14,
          3.18121955943204943306e+16, 1.71086294081043136091e+18)
_J0_ZEROS_SQUARED = (5.78318596294678452118e+00, 3.04712623436620863991e+01)
# Y0 for x <= 5, beside (2 / pi) log(x) J0(x)
_Y0_YP = (1.55924367855235737965e+04, -1.46639295903971606143e+07, 5.43526477051876500413e+09,
          -9.82136065717911466409e+11, 8.75906394395366999549e+13, -3.46628303384729719441e+15,
          4.42733268572569800351e+16, -1.84950800436986690637e+16)
_Y0_YQ = (1.04128353664259848412e+03, 6.26107330137134956842e+05, 2.68919633393814121987e+08,
          8.64002487103935000337e+10, 2.02979612750105546709e+13, 3.17157752842975028269e+15,
          2.50596256172653059228e+17)

# J1 and Y1 for x > 5, in powers of (5 / x)^2
_J1_PP = (7.62125616208173112003e-04, 7.31397056940917570436e-02, 1.12719608129684925192e+00,
          5.11207951146807644818e+00, 8.42404590141772420927e+00, 5.21451598682361504063e+00,
          1.00000000000000000254e+00)
_J1_PQ = (5.71323128072548699714e-04, 6.88455908754495404082e-02, 1.10514232634061696926e+00,
          5.07386386128601488557e+00, 8.39985554327604159757e+00, 5.20982848682361821619e+00,
          9.99999999999999997461e-01)
_J1_QP = (5.10862594750176621635e-02, 4.98213872951233449420e+00, 7.58238284132545283818e+01,
          3.66779609360150777800e+02, 7.10856304998926107277e+02, 5.97489612400613639965e+02,
          2.11688757100572135698e+02, 2.52070205858023719784e+01)
_J1_QQ = (7.42373277035675149943e+01, 1.05644886038262816351e+03, 4.98641058337653607651e+03,
          9.56231892404756170795e+03, 7.99704160447350683650e+03, 2.82619278517639096600e+03,
          3.36093607810698293419e+02)
_J1_RP = (-8.99971225705559398224e+08, 4.52228297998194034323e+11, -7.27494245221818276015e+13,
          3.68295732863852883286e+15)
_J1_RQ = (6.20836478118054335476e+02, 2.56987256757748830383e+05, 8.35146791431949253037e+07,
          2.21511595479792499675e+10, 4.74914122079991414898e+12, 7.84369607876235854894e+14,
          8.95222336184627338078e+16, 5.32278620332680085395e+18)
_J1_ZEROS_SQUARED = (1.46819706421238932572e+01, 4.92184563216946036703e+01)
_Y1_YP = (1.26320474790178026440e+09, -6.47355876379160291031e+11, 1.14509511541823727583e+14,
          -8.12770255501325109621e+15, 2.02439475713594898196e+17, -7.78877196265950026825e+17)
_Y1_YQ = (5.94301592346128195359e+02, 2.35564092943068577943e+05, 7.34811944459721705660e+07,
          1.87601316108706159478e+10, 3.88231277496238566008e+12, 6.20557727146953693363e+14,
          6.87141087355300489866e+16, 3.97270608116560655612e+18)

# Ai: x >= 2.09 in powers of 1 / zeta; x < -2.09 (oscillating) in powers of z^2
_AI_AN = (3.46538101525629032477e-01, 1.20075952739645805542e+01, 7.62796053615234516538e+01,
          1.68089224934630576269e+02, 1.59756391350164413639e+02, 7.05360906840444183113e+01,
          1.40264691163389668864e+01, 9.99999999999999995305e-01)
_AI_AD = (5.67594532638770212846e-01, 1.47562562584847203173e+01, 8.45138970141474626562e+01,
          1.77318088145400459522e+02, 1.64234692871529701831e+02, 7.14778400825575695274e+01,
          1.40959135607834029598e+01, 1.00000000000000000470e+00)
_AI_AFN = (-1.31696323418331795333e-01, -6.26456544431912369773e-01, -6.93158036036933542233e-01,
           -2.79779981545119124951e-01, -4.91900132609500318020e-02, -4.06265923594885404393e-03,
           -1.59276496239262096340e-04, -2.77649108155232920844e-06, -1.67787698489114633780e-08)
_AI_AFD = (1.33560420706553243746e+01, 3.26825032795224613948e+01, 2.67367040941499554804e+01,
           9.18707402907259625840e+00, 1.47529146771666414581e+00, 1.15687173795188044134e-01,
           4.40291641615211203805e-03, 7.54720348287414296618e-05, 4.51850092970580378464e-07)
_AI_AGN = (1.97339932091685679179e-02, 3.91103029615688277255e-01, 1.06579897599595591108e+00,
           9.39169229816650230044e-01, 3.51465656105547619242e-01, 6.33888919628925490927e-02,
           5.85804113048388458567e-03, 2.82851600836737019778e-04, 6.98793669997260967291e-06,
           8.11789239554389293311e-08, 3.41551784765923618484e-10)
_AI_AGD = (9.30892908077441974853e+00, 1.98352928718312140417e+01, 1.55646628932864612953e+01,
           5.47686069422975497931e+00, 9.54293611618961883998e-01, 8.64580826352392193095e-02,
           4.12656523824222607191e-03, 1.01259085116509135510e-04, 1.17166733214413521882e-06,
           4.91834570062930015649e-09)
_AI_C1, _AI_C2 = 0.355028053887817239260, 0.258819403792806798405  # Ai(0) and -Ai'(0)
_ONE_OVER_SQRT_PI = 5.64189583547756286948e-01


def _poly(coeffs, w):
    """sum c_i w^(n-i) by Horner's rule, starting from 0 (torch's loops: 0 * w is NaN where w is infinite)."""
    p = w * 0
    for c in coeffs:
        p = p * w + c
    return p


def _asymptotic(xp, x, w, tables, phase, first):
    """(P cos(x - phase) - 5/x Q sin(x - phase)) sqrt(2/pi) / sqrt(x) with P = pp/pq and Q = qp/qq at w, for J;
    Y has sin and cos swapped and a plus (``first`` is the function of the P term)."""
    pp, pq, qp, qq = (_poly(c, w) for c in tables)
    s, c = xp.sin(x - phase), xp.cos(x - phase)
    if first == "cos":
        return (pp / pq * c - 5.0 / x * (qp / qq) * s) * _SQRT_2_OVER_PI / xp.sqrt(x)
    return (pp / pq * s + 5.0 / x * (qp / qq) * c) * _SQRT_2_OVER_PI / xp.sqrt(x)


_J0_TABLES = (_J0_PP, _J0_PQ, _J0_QP, _J0_QQ)
_J1_TABLES = (_J1_PP, _J1_PQ, _J1_QP, _J1_QQ)


def bessel_j0(xp, x):
    """J0(x), even in x."""
    x = xp.abs(x)
    xx = x * x
    near = (xx - _J0_ZEROS_SQUARED[0]) * (xx - _J0_ZEROS_SQUARED[1]) * _poly(_J0_RP, xx) / _poly(_J0_RQ, xx)
    near = xp.where(x < 1e-5, 1.0 - xx / 4.0, near)
    return xp.where(x <= 5.0, near, _asymptotic(xp, x, 25.0 / xx, _J0_TABLES, _PI_4, "cos"))


def _j1_positive(xp, x):
    xx = x * x
    near = _poly(_J1_RP, xx) / _poly(_J1_RQ, xx) * x * (xx - _J1_ZEROS_SQUARED[0]) * (xx - _J1_ZEROS_SQUARED[1])
    w = 5.0 / x * (5.0 / x)
    return xp.where(x <= 5.0, near, _asymptotic(xp, x, w, _J1_TABLES, _3PI_4, "cos"))


def bessel_j1(xp, x):
    """J1(x), odd in x (-0 gives -0)."""
    negative = x < 0
    y = _j1_positive(xp, xp.where(negative, -x, x))
    return xp.where(negative, -y, y)


def bessel_y0(xp, x):
    """Y0(x): -inf at 0, NaN for x < 0."""
    xx = x * x
    near = _poly(_Y0_YP, xx) / _poly(_Y0_YQ, xx) + _TWO_OVER_PI * xp.log(x) * bessel_j0(xp, x)
    near = xp.where(x == 0, -np.inf, xp.where(x < 0, np.nan, near))
    return xp.where(x <= 5.0, near, _asymptotic(xp, x, 25.0 / xx, _J0_TABLES, _PI_4, "sin"))


def bessel_y1(xp, x):
    """Y1(x): -inf at 0, NaN for x < 0."""
    xx = x * x
    near = x * (_poly(_Y1_YP, xx) / _poly(_Y1_YQ, xx)) + _TWO_OVER_PI * (_j1_positive(xp, x) * xp.log(x) - 1.0 / x)
    near = xp.where(x == 0, -np.inf, xp.where(x < 0, np.nan, near))
    w = 5.0 / x * (5.0 / x)
    return xp.where(x <= 5.0, near, _asymptotic(xp, x, w, _J1_TABLES, _3PI_4, "sin"))


def _airy_series(xp, x):
    """Ai(x) = c1 f(x) - c2 g(x) from the Maclaurin series of f and g, summed until the last term of f is below
    machine epsilon relative to f (each element stops on its own)."""
    eps = float(np.finfo(x.dtype).eps)
    f, g, m, n = xp.ones_like(x), x.copy(), xp.ones_like(x), x.copy()
    z = x * x * x
    k = 1.0
    active = xp.ones(x.shape, dtype=bool)
    while bool(active.any()):
        m2 = m * z / (k + 1) / (k + 2)
        n2 = n * z / (k + 2) / (k + 3)
        f2, g2 = f + m2, g + n2
        m, n = xp.where(active, m2, m), xp.where(active, n2, n)
        f, g = xp.where(active, f2, f), xp.where(active, g2, g)
        active &= xp.abs(m2 / f2) > eps
        k += 3.0
    return _AI_C1 * f - _AI_C2 * g


def airy_ai(xp, x):
    """Ai(x): the series near 0, the asymptotic forms beyond +-2.09; 0 beyond 103.892, NaN at +-inf."""
    dt = x.dtype.type
    inside = (x >= -2.09) & (x < 2.09)
    series = _airy_series(xp, xp.where(inside, x, 0))
    zeta = 2.0 * x * xp.sqrt(x) / 3.0
    decaying = _ONE_OVER_SQRT_PI * (_poly(_AI_AN, 1.0 / zeta) / _poly(_AI_AD, 1.0 / zeta)) / (
        2.0 * xp.sqrt(xp.sqrt(x)) * xp.exp(zeta))
    zeta = -2.0 * x * xp.sqrt(-x) / 3.0
    z = 1.0 / zeta
    zz = z * z
    t = zeta + dt(0.25) * dt(math.pi)
    oscillating = _ONE_OVER_SQRT_PI / xp.sqrt(xp.sqrt(-x)) * (
        xp.sin(t) * (1.0 + zz * _poly(_AI_AFN, zz) / _poly(_AI_AFD, zz))
        - xp.cos(t) * (z * _poly(_AI_AGN, zz) / _poly(_AI_AGD, zz)))
    y = xp.where(x < -2.09, oscillating, xp.where(inside, series, decaying))
    y = xp.where(x > 103.892, 0, y)
    return xp.where(xp.isinf(x), np.nan, y).astype(x.dtype, copy=False)
