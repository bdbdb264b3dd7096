"""The strong-Wolfe line search of ``LBFGS`` (Nocedal and Wright, algorithms 3.5 and 3.6), with
safeguarded cubic interpolation, in torch's order of evaluations.

Losses are Python floats; gradients are flat arrays; directional derivatives stay array scalars in
the parameters' precision.
"""
from ..ops._common import xp_of


def cubic_minimum(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimizer of the cubic through (x1, f1, slope g1) and (x2, f2, slope g2), clipped to
    ``bounds`` (default: between x1 and x2); the bounds' midpoint when the cubic has no minimum."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if not d2_square >= 0:
        return (xmin_bound + xmax_bound) / 2.0
    d2 = xp_of(d2_square).sqrt(d2_square)
    if x1 <= x2:
        min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(min_pos, xmin_bound), xmax_bound)


class _Bracket:
    """Step lengths with their losses, gradients and directional derivatives (one or two points)."""

    def __init__(self, ts, fs, gs, gtds):
        self.t, self.f, self.g, self.gtd = ts, fs, gs, gtds

    def set(self, i, t, f, g, gtd):
        self.t[i], self.f[i], self.g[i], self.gtd[i] = t, f, g, gtd

    def ends(self):
        """(low, high): the index of the lower loss first."""
        return (0, 1) if self.f[0] <= self.f[-1] else (1, 0)


def strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """A step length along ``d`` from ``x`` meeting the strong Wolfe conditions (or the best found in
    ``max_ls`` evaluations); ``obj_func(x, t, d)`` returns (loss, flat gradient) at ``x + t d``.

    Returns (loss, flat gradient, step length, evaluations)."""
    d_norm = abs(d).max()
    g = g.copy()
    f_new, g_new = obj_func(x, t, d)
    evals = 1
    gtd_new = g_new.dot(d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    while ls_iter < max_ls:  # bracketing: grow the step until an interval holds a Wolfe point
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket = _Bracket([t_prev, t], [f_prev, f_new], [g_prev, g_new.copy()], [gtd_prev, gtd_new])
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, done = _Bracket([t], [f_new], [g_new], [gtd_new]), True
            break
        if gtd_new >= 0:
            bracket = _Bracket([t_prev, t], [f_prev, f_new], [g_prev, g_new.copy()], [gtd_prev, gtd_new])
            break
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        t_prev, t = t, cubic_minimum(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step))
        f_prev, g_prev, gtd_prev = f_new, g_new.copy(), gtd_new
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
    if ls_iter >= max_ls:  # no bracket found: the interval from the start to the last step
        bracket = _Bracket([0, t], [f, f_new], [g, g_new], [None, None])

    insufficient_progress = False
    low, high = bracket.ends()
    while not done and ls_iter < max_ls:  # zoom: shrink the interval around a Wolfe point
        if abs(bracket.t[1] - bracket.t[0]) * d_norm < tolerance_change:
            break
        t = cubic_minimum(bracket.t[0], bracket.f[0], bracket.gtd[0], bracket.t[1], bracket.f[1], bracket.gtd[1])
        t, insufficient_progress = _keep_away_from_ends(t, bracket.t, insufficient_progress)
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket.f[low]:
            bracket.set(high, t, f_new, g_new.copy(), gtd_new)
            low, high = bracket.ends()
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket.t[high] - bracket.t[low]) >= 0:
                bracket.set(high, bracket.t[low], bracket.f[low], bracket.g[low], bracket.gtd[low])
            bracket.set(low, t, f_new, g_new.copy(), gtd_new)
    return bracket.f[low], bracket.g[low], bracket.t[low], evals


def _keep_away_from_ends(t, ends, insufficient_progress):
    """Move a trial step that lands within 10% of the interval's ends back inside, the second time in a
    row (or at once when it lies on or beyond an end); returns (t, insufficient progress)."""
    lo, hi = min(ends), max(ends)
    eps = 0.1 * (hi - lo)
    if not min(hi - t, t - lo) < eps:
        return t, False
    if insufficient_progress or t >= hi or t <= lo:
        t = hi - eps if abs(t - hi) < abs(t - lo) else lo + eps
        return t, False
    return t, True
