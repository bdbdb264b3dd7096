"""L-BFGS: a quasi-Newton method that re-evaluates the model through a closure, with an optional
strong-Wolfe line search.

All parameters are handled as one flat vector. Scalars derived from it (dot products, curvature
estimates, step lengths) stay in the parameters' precision, as torch's 0-dim tensors do, so the
iterates follow torch's.
"""
from .line_search import strong_wolfe
from .optimizer import Optimizer, _bump_version, _check_lr, _real, _to_scalar
from ..ops._common import xp_of
from ..tensor import Tensor, _new


class LBFGS(Optimizer):
    """``torch.optim.LBFGS`` (Nocedal and Wright, algorithm 7.5); ``step(closure)`` runs up to
    ``max_iter`` iterations. One parameter group only.

    Its state (on the first parameter, as torch keeps it) holds the search direction ``d``, step ``t``,
    curvature pairs ``old_dirs``/``old_stps``/``ro``, ``H_diag``, the previous flat gradient and loss
    and the evaluation counters, so ``state_dict()`` resumes it exactly.
    """

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100, line_search_fn=None, *, maximize=False):
        _check_lr(lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size,
                        line_search_fn=line_search_fn, maximize=maximize)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def __setstate__(self, state):
        super().__setstate__(state)
        self._params = self.param_groups[0]["params"]

    # ---- the parameters as one flat vector ------------------------------------------------------
    def _gather_flat_grad(self):
        """Every parameter's gradient (zeros where there is none) in one new vector, negated to maximize; a
        complex one as its real and imaginary parts (``view_as_real``), as torch flattens it."""
        xp = xp_of(self._params[0]._data)
        views = [_real(xp.zeros_like(p._data) if p.grad is None else p.grad._data).reshape(-1)
                 for p in self._params]
        flat = xp.concatenate(views)
        if self.param_groups[0]["maximize"]:
            flat = -flat
        return flat

    def _add_grad(self, step_size, update):
        """``params += step_size * update`` with ``update`` a flat vector (complex parameters as real pairs)."""
        offset = 0
        for p in self._params:
            x = _real(p._data)
            numel = x.size
            x += step_size * update[offset:offset + numel].reshape(x.shape)
            _bump_version(p)
            offset += numel

    def _set_param(self, arrays):
        for p, arr in zip(self._params, arrays):
            p._data[...] = arr
            _bump_version(p)

    def _evaluate(self, closure):
        """The closure's loss as a float (negated to maximize) and the flat gradient it left."""
        loss = float(self._closure_loss(closure))
        if self.param_groups[0]["maximize"]:
            loss = -loss
        return loss, self._gather_flat_grad()

    def _directional_evaluate(self, closure, x, t, d):
        """Loss and flat gradient at ``x + t * d``; the parameters are put back to ``x`` afterwards."""
        self._add_grad(t, d)
        loss, flat_grad = self._evaluate(closure)
        self._set_param(x)
        return loss, flat_grad

    # ---- the step -----------------------------------------------------------------------------
    def step(self, closure):
        """Minimize the closure's loss for up to ``max_iter`` iterations; returns its first loss."""
        if len(self._params) == 0:
            return self._closure_loss(closure)
        group = self.param_groups[0]
        lr = _to_scalar(group["lr"])
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = self._closure_loss(closure)
        loss = -float(orig_loss) if group["maximize"] else float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if abs(flat_grad).max() <= tolerance_grad:
            return orig_loss

        d, t = _array(state.get("d")), _array(state.get("t"))
        old_dirs, old_stps, ro = (_arrays(state.get(k)) for k in ("old_dirs", "old_stps", "ro"))
        H_diag, prev_loss = _array(state.get("H_diag")), state.get("prev_loss")
        prev_flat_grad = _array(state.get("prev_flat_grad"))

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:
                H_diag = self._remember_curvature(flat_grad - prev_flat_grad, d * t, old_dirs, old_stps, ro,
                                                  H_diag, history_size)
                d = self._two_loop_direction(state, flat_grad, old_dirs, old_stps, ro, H_diag, history_size)
            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.copy()
            else:
                prev_flat_grad[...] = flat_grad
            prev_loss = loss

            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / abs(flat_grad).sum()) * lr
            else:
                t = lr
            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:
                break

            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = [p._data.copy() for p in self._params]

                def obj_func(x, step_length, direction):
                    return self._directional_evaluate(closure, x, step_length, direction)

                loss, flat_grad, t, ls_func_evals = strong_wolfe(obj_func, x_init, t, d, loss, flat_grad, gtd,
                                                                 max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = abs(flat_grad).max() <= tolerance_grad
            else:
                self._add_grad(t, d)
                ls_func_evals = 0
                opt_cond = False
                if n_iter != max_iter:
                    loss, flat_grad = self._evaluate(closure)
                    opt_cond = abs(flat_grad).max() <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if abs(d * t).max() <= tolerance_change or abs(loss - prev_loss) < tolerance_change:
                break

        state["d"] = _tensor(d)
        state["t"] = _tensor(t)
        state["old_dirs"] = [_tensor(v) for v in old_dirs]
        state["old_stps"] = [_tensor(v) for v in old_stps]
        state["ro"] = [_tensor(v) for v in ro]
        state["H_diag"] = _tensor(H_diag)
        state["prev_flat_grad"] = _tensor(prev_flat_grad)
        state["prev_loss"] = prev_loss
        return orig_loss

    @staticmethod
    def _remember_curvature(y, s, old_dirs, old_stps, ro, H_diag, history_size):
        """Store the pair (y, s) when it has positive curvature; returns the new diagonal scaling."""
        ys = y.dot(s)
        if ys > 1e-10:
            if len(old_dirs) == history_size:
                old_dirs.pop(0)
                old_stps.pop(0)
                ro.pop(0)
            old_dirs.append(y)
            old_stps.append(s)
            ro.append(1.0 / ys)
            H_diag = ys / y.dot(y)
        return H_diag

    @staticmethod
    def _two_loop_direction(state, flat_grad, old_dirs, old_stps, ro, H_diag, history_size):
        """The quasi-Newton direction ``-H @ flat_grad`` by the two-loop recursion (``state['al']`` its scratch)."""
        if "al" not in state:
            state["al"] = [None] * history_size
        al = state["al"]
        q = -flat_grad
        for i in range(len(old_dirs) - 1, -1, -1):
            al[i] = _tensor(old_stps[i].dot(q) * ro[i])
            q -= al[i]._data * old_dirs[i]
        r = q * H_diag
        for i in range(len(old_dirs)):
            be_i = old_dirs[i].dot(r) * ro[i]
            r += (al[i]._data - be_i) * old_stps[i]
        return r


def _tensor(value):
    """A state value as torch keeps it: arrays and array scalars as tensors, Python numbers as they are."""
    if value is None or type(value) in (int, float):
        return value
    return _new(xp_of(value).asarray(value))


def _array(value):
    """A state value back as the array (or number) the step computes with."""
    return value._data if isinstance(value, Tensor) else value


def _arrays(values):
    return None if values is None else [_array(v) for v in values]
