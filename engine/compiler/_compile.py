"""``engine.compile``: torch.compile's API, on the engine's static-graph mode ``nn.Graph``.

A compiled callable (a module, wrapped in ``OptimizedModule``, or a function) replays an inference ``nn.Graph``
around itself where that gives what eager code would, and runs eagerly everywhere else:

- Graphed: calls that autograd would not record (grad mode is off, or neither an input nor a tensor the call
  reads from outside requires grad: a module's parameters and buffers, a function's module and tensor globals
  and closure variables, and, once traced, every tensor the plan reads), with every module reached in eval mode,
  and with inputs that are tensors, tuples/lists/dicts of them and plain constants (None, bool, int, float,
  str), positional or keyword. Modules passed positionally (``self`` of a compiled ``forward``) get a graph
  each, dropped with the module. One plan per input signature (shapes, dtypes, devices, the constants), as
  ``nn.Graph`` keys them: ``dynamic=True`` is accepted and still traces each signature. A signature's first call
  is its trace, which runs eagerly under the caller's grad mode, so its result is eager's; later calls replay
  the plan on raw arrays (convolutions with BatchNorm, residual add and activation fused, reading the current
  parameters and statistics; on the GPU, a CUDA graph). Outputs may be tensors and tuples, lists, namedtuples,
  dicts and OrderedDicts of them and of constants.
- Eager: training (a module in train mode, or a tensor that requires grad under grad mode: gradients are then
  exactly eager's, and train-mode layers such as BatchNorm update their state as eager code does), calls
  inside another graph's trace (they become part of it), other arguments (objects, one tensor passed twice),
  signatures past ``recompile_limit`` (8, torch's default), ``backend="eager"``/``"aot_eager"``, and a signature
  whose trace cannot be one graph: a value read such as ``.item()``, data-dependent sizes, a call to an
  ``engine.compiler.disable`` function, ``backward()``, an error (eager code then raises it). ``fullgraph=True``
  raises there instead. Where the trace stopped part way (a value read, ``disable``, ``backward()``), that first
  call runs again eagerly, so what ran before the stop ran twice (random draws, in-place updates).
- Staleness: a graph reads parameters and buffers where they are, so in-place updates (optimizer steps,
  ``load_state_dict``) need nothing. Each call fingerprints what the graph was traced around (the identities of
  modules, parameters, buffers and hooks with their names, each tensor's shape, dtype and array type, and a
  function's module and tensor globals): a change (a replaced classifier, ``.to()`` another dtype, a new hook)
  drops the graph and traces anew. Autocast and the default dtype select a graph too. Plain Python attributes
  that ``forward`` reads are not watched (torch's guards do watch them).
- Stance: ``set_stance`` (``stance.py``) can make calls eager, or refuse or skip traces after the first.
"""
import functools
import weakref
from collections import OrderedDict

from .. import _dtype
from ..amp import autocast_mode
from ..autograd import grad_mode, tracing
from ..nn.graph.capture import _outside_tensors
from ..nn.graph.graph import Graph, _flatten as _graph_inputs
from ..nn.modules.module import Module
from ..tensor import Tensor
from . import stance

_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
_GRAPH_BACKENDS = ("cudagraphs", "inductor")  # run as nn.Graphs
_EAGER_BACKENDS = ("aot_eager", "eager")  # torch's debugging backends: run eagerly here
_CONSTANTS = (type(None), bool, int, float, str)
_RECOMPILE_LIMIT = 8  # torch._dynamo.config.recompile_limit's default
_EAGER = object()  # a decision: run this call eagerly
_FAIL = object()  # a decision: a new signature raises (set_stance("fail_on_recompile"))
_EAGER_FIRST = ("eager_then_compile", "aot_eager_then_compile")
_COMPILED = weakref.WeakSet()  # every live _Compiled, for reset()


class _Trace:
    """The graph whose trace is running now, if it is one of engine.compile's (``disable`` asks)."""

    graph = None


class _GraphBreak(RuntimeError):
    """Raised inside a trace that cannot become one graph; the call then runs eagerly."""


class _Unreplayable(Exception):
    """Raised out of a finished trace whose plan must not be replayed; ``outputs`` are that call's (the trace
    ran eagerly, so they are exact)."""

    def __init__(self, reason, outputs):
        super().__init__(reason)
        self.outputs = outputs


# ---- inputs, outputs and fingerprints -------------------------------------------------------------
def _plain_inputs(obj, leaves):
    """Whether ``obj`` holds only tensors (appended to ``leaves``) and constants in plain tuples, lists and
    dicts: what an nn.Graph signature keys exactly."""
    if isinstance(obj, Tensor):
        leaves.append(obj)
        return True
    if isinstance(obj, _CONSTANTS):
        return True
    if type(obj) in (tuple, list):
        return all(_plain_inputs(o, leaves) for o in obj)
    if type(obj) is dict:
        return all(isinstance(k, _CONSTANTS) and _plain_inputs(v, leaves) for k, v in obj.items())
    return False


def _output_spec(obj, leaves):
    """The structure of a call's outputs, its tensors appended to ``leaves``; None where it holds an object a
    replay could not rebuild."""
    if isinstance(obj, Tensor):
        leaves.append(obj)
        return ("tensor",)
    if isinstance(obj, _CONSTANTS):
        return ("const", obj)
    kind = type(obj)
    if kind in (tuple, list) or (isinstance(obj, tuple) and hasattr(obj, "_fields")):
        items = tuple(_output_spec(o, leaves) for o in obj)
        return None if None in items else ("seq", kind, items)
    if kind in (dict, OrderedDict):
        items = tuple(_output_spec(v, leaves) for v in obj.values())
        return None if None in items else ("map", kind, tuple(obj), items)
    return None


def _rebuild(spec, leaves):
    """The outputs ``_output_spec`` described, with the tensors taken in order from the iterator ``leaves``."""
    tag = spec[0]
    if tag == "tensor":
        return next(leaves)
    if tag == "const":
        return spec[1]
    if tag == "seq":
        kind, items = spec[1], [_rebuild(s, leaves) for s in spec[2]]
        return kind(*items) if hasattr(kind, "_fields") else kind(items)
    return spec[1](zip(spec[2], [_rebuild(s, leaves) for s in spec[3]]))


def _tensor_key(t):
    """What a plan depends on of a parameter, buffer or global tensor: which tensor, and its array's shape, dtype
    and kind (numpy or CuPy); not its values, which replays read where they are."""
    return None if t is None else (id(t), t._data.shape, t._data.dtype, type(t._data))


def _survey(modules, tensors):
    """(fingerprint, whether a module is training, whether a parameter or tensor requires grad) of what a call
    reaches: the modules' trees (identities and names of submodules, parameters, buffers and forward hooks) and
    the tensors."""
    parts, training, requires_grad = [], False, False
    for top in modules:
        for m in top.modules():
            d = m.__dict__
            training = training or m.training
            params, buffers = d["_parameters"], d["_buffers"]
            parts.append((id(m), tuple(d["_modules"]), tuple(params), tuple(buffers),
                          tuple(d["_forward_pre_hooks"]), tuple(d["_forward_hooks"])))
            for p in params.values():
                requires_grad = requires_grad or (p is not None and p.requires_grad)
                parts.append(_tensor_key(p))
            parts += [_tensor_key(b) for b in buffers.values()]
    for t in tensors:
        requires_grad = requires_grad or t.requires_grad
        parts.append(_tensor_key(t))
    return tuple(parts), training, requires_grad


def _ambient():
    """The global settings a trace bakes in: the default dtype, and autocast's dtype per device type where on."""
    return (_dtype.get_default_dtype(),) + tuple(
        autocast_mode.get_autocast_dtype(d) if autocast_mode.is_autocast_enabled(d) else None
        for d in ("cpu", "cuda"))


def _code_names(code):
    """The global names ``code`` and the code nested in it (lambdas, comprehensions, inner functions) load."""
    names = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= _code_names(const)
    return tuple(sorted(names))


def _cell_values(function):
    """The values of ``function``'s closure variables, now (a cell may be rebound after compile)."""
    values = []
    for cell in getattr(function, "__closure__", None) or ():
        try:
            values.append(cell.cell_contents)
        except ValueError:  # a cell not yet bound
            pass
    return values


# ---- the graph ------------------------------------------------------------------------------------
class _CallGraph(Graph):
    """The inference nn.Graph of one compiled callable; ``fingerprint`` is ``_survey``'s at its creation. Its
    ``build`` calls the callable with the modules passed positionally put back in their places (held only while a
    trace runs, so that a graph keeps no module alive) and returns the outputs' tensors as a list, keeping their
    structure. No module is registered: only calls with every module in eval mode are graphed."""

    def __init__(self, fn, fingerprint, compiled):
        super().__init__()
        object.__setattr__(self, "_fn", fn)  # not registered where it is a module
        self.fingerprint = fingerprint
        self._fullgraph = compiled.fullgraph
        self._label = compiled.label
        self._statics = ()  # (position, module) of the call being traced
        self._structures = {}  # signature -> the outputs' structure
        self._outside = {}  # signature -> the tensors its plan reads from outside
        self._eager = set()  # signatures that run eagerly
        self._structure = None  # the last trace's
        self.config.enable_cuda_graph(compiled.cuda_graph)

    @property
    def name(self):
        return f"engine.compile({self._label})"

    def build(self, *args, **kwargs):
        """The traced call; refuses (raising) what a replay would not reproduce."""
        for position, module in self._statics:
            args = args[:position] + (module,) + args[position:]
        _Trace.graph = self
        try:
            outputs = self._fn(*args, **kwargs)
        finally:
            _Trace.graph = None
        tracer = tracing.active
        if tracer.backward_calls:
            raise _GraphBreak("it calls backward()")
        leaves = []
        structure = _output_spec(outputs, leaves)
        if structure is None:
            raise _Unreplayable("it returns objects other than tensors, constants and containers of them", outputs)
        if tracer.counts:
            raise _Unreplayable("sizes depend on values (nonzero, boolean masks, NMS)", outputs)
        if not all(tracer.is_traced(t) for t in leaves):
            raise _Unreplayable("it returns a tensor that is not computed from its inputs", outputs)
        self._structure = structure
        return leaves

    def _call(self, inputs):
        """``Graph._call`` of an inference graph, but the trace runs under the caller's grad mode: a signature's
        first call is the eager call itself, autograd included where a tensor it reads requires grad. Replays
        run on arrays and record nothing."""
        return self._run(inputs, None)

    def call(self, args, kwargs, statics, may_trace):
        """This call's outputs, or ``_EAGER`` where it runs eagerly (see the module docstring). ``may_trace``:
        whether a new signature is traced; ``_FAIL``: raises instead (``set_stance("fail_on_recompile")``)."""
        leaves = []
        key = self._signature(leaves, _graph_inputs((args, kwargs), leaves))
        if key in self._eager:
            return _EAGER
        if key not in self._plans:
            if may_trace is _FAIL:
                raise RuntimeError(f"Detected recompile when torch.compile stance is 'fail_on_recompile'. function "
                                   f"name: '{self._label}'")
            return self._trace(key, args, kwargs, statics) if may_trace else _EAGER
        if grad_mode.is_grad_enabled() and any(t.requires_grad for t in self._outside[key]):
            return _EAGER
        return _rebuild(self._structures[key], iter(self(*args, **kwargs)))

    def _trace(self, key, args, kwargs, statics):
        """A signature's first call, traced: its outputs, or ``_EAGER`` where it has to run again eagerly; a
        signature that cannot be one graph is remembered as eager (or raises, with ``fullgraph``)."""
        self._statics = statics
        try:
            leaves = self(*args, **kwargs)
        except (_GraphBreak, _Unreplayable) as refusal:
            if self._fullgraph:
                raise RuntimeError(f"{self.name} with fullgraph=True: the call cannot be one graph: {refusal}") \
                    from refusal
            self._eager.add(key)
            return refusal.outputs if isinstance(refusal, _Unreplayable) else _EAGER
        except Exception:
            if self._fullgraph:
                raise
            self._eager.add(key)  # eager code then raises what is wrong with the call, or runs what a trace cannot
            return _EAGER
        finally:
            self._statics = ()
        self._structures[key] = self._structure
        self._outside[key] = _outside_tensors(self._plans[key])
        return _rebuild(self._structure, iter(leaves))


# ---- what engine.compile returns ----------------------------------------------------------------
class _Compiled:
    """One compiled callable: its settings and graphs (one per ambient state and modules passed), and the
    choice, call by call, between a graph and eager code. Copies and pickles carry no graphs."""

    def __init__(self, fn, *, fullgraph, cuda_graph, eager, recompile_limit):
        self.fn = fn
        self.fullgraph = bool(fullgraph)
        self.cuda_graph = cuda_graph
        self.eager = eager
        self.recompile_limit = _RECOMPILE_LIMIT if recompile_limit is None else int(recompile_limit)
        function = getattr(fn, "__func__", fn)
        self.label = getattr(function, "__qualname__", type(fn).__name__)
        code = getattr(function, "__code__", None)
        self.names = () if isinstance(fn, Module) or code is None else _code_names(code)
        self.graphs = {}
        self.called = self.traced = False  # called before; traced a signature before (for set_stance)
        _COMPILED.add(self)

    def __getstate__(self):
        return {**self.__dict__, "graphs": {}}

    def __setstate__(self, state):
        self.__dict__.update(state)
        _COMPILED.add(self)

    def __call__(self, args, kwargs):
        policy = stance.current()
        first, self.called = not self.called, True
        # inside another trace, the call is part of that graph; the stance may ask for eager code
        if self.eager or tracing.active is not None or policy.stance == "force_eager" or \
                policy.backend in _EAGER_BACKENDS or (first and policy.stance in _EAGER_FIRST):
            return self.fn(*args, **kwargs)
        outputs = self._graphed(args, kwargs)
        return self.fn(*args, **kwargs) if outputs is _EAGER else outputs

    def _reached(self):
        """(modules, tensors) the callable reaches: a module itself; a function's (or bound method's) globals,
        closure variables and ``__self__``."""
        fn = self.fn
        if isinstance(fn, Module):
            return [fn], []
        function = getattr(fn, "__func__", fn)
        namespace = getattr(function, "__globals__", {})
        values = [namespace[n] for n in self.names if n in namespace] + _cell_values(function)
        values.append(getattr(fn, "__self__", None))
        return [v for v in values if isinstance(v, Module)], [v for v in values if isinstance(v, Tensor)]

    def _graphed(self, args, kwargs):
        """This call's outputs from a graph, or ``_EAGER`` (the module docstring says when)."""
        statics = tuple((i, a) for i, a in enumerate(args) if isinstance(a, Module))
        if statics:
            args = tuple(a for a in args if not isinstance(a, Module))
        leaves = []
        if not _plain_inputs((args, kwargs), leaves) or len({id(t) for t in leaves}) < len(leaves):
            return _EAGER
        modules, tensors = self._reached()
        modules = [m for _, m in statics] + modules
        fingerprint, training, requires_grad = _survey(modules, tensors)
        if training or (grad_mode.is_grad_enabled() and (requires_grad or any(t.requires_grad for t in leaves))):
            return _EAGER
        key = (tuple((i, id(m)) for i, m in statics), _ambient())
        graph = self.graphs.get(key)
        if graph is None:
            if len(self.graphs) >= self.recompile_limit:
                return _EAGER
            for _, module in statics:  # its graph goes with it (an id is reused once its object is gone)
                weakref.finalize(module, self.graphs.pop, key, None)
        if graph is None or graph.fingerprint != fingerprint:
            graph = self.graphs[key] = _CallGraph(self.fn, fingerprint, self)
        traced = sum(g.num_compiled for g in self.graphs.values())
        may_trace = traced < self.recompile_limit
        if self.traced and stance.current().stance in ("eager_on_recompile", "fail_on_recompile"):
            may_trace = _FAIL if stance.current().stance == "fail_on_recompile" else False
        outputs = graph.call(args, kwargs, statics, may_trace=may_trace)
        self.traced = self.traced or graph.num_compiled > 0
        return outputs


class OptimizedModule(Module):
    """What ``engine.compile(module)`` returns, as torch's: the module as ``_orig_mod`` (so state_dict keys
    start with ``_orig_mod.``), parameters shared, attributes read and written through to it, ``train()`` and
    ``eval()`` reaching it; calling it runs the original's ``__call__`` (hooks included), graphed where it can
    be (see the module docstring)."""

    _opt_mod_attributes = frozenset({"_orig_mod", "_compiled"})

    def __init__(self, mod, compiled):
        super().__init__()
        self._orig_mod = mod
        self._compiled = compiled

    @property
    def training(self):
        return self._orig_mod.training

    @training.setter
    def training(self, value):
        mod = self.__dict__.get("_modules", {}).get("_orig_mod")
        if mod is not None:  # Module.__init__ sets a default before the original is registered
            mod.training = value

    def forward(self, *args, **kwargs):
        """The original module's call, through its graph where one applies."""
        return self._compiled(args, kwargs)

    def __getattr__(self, name):
        modules = self.__dict__.get("_modules")
        if modules is None or "_orig_mod" not in modules:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        if name == "_orig_mod":
            return modules["_orig_mod"]
        return getattr(modules["_orig_mod"], name)

    def __setattr__(self, name, value):
        if hasattr(type(self), name) or name in self._opt_mod_attributes:
            super().__setattr__(name, value)
        else:
            setattr(self._orig_mod, name, value)

    def __delattr__(self, name):
        if hasattr(type(self), name) or name in self._opt_mod_attributes:
            super().__delattr__(name)
        else:
            delattr(self._orig_mod, name)

    def __len__(self):
        if not hasattr(type(self._orig_mod), "__len__"):
            raise TypeError(f"{type(self._orig_mod).__name__} does not support len()")
        return len(self._orig_mod)

    def __dir__(self):
        mine = self._orig_mod.__dir__()
        return mine + [a for a in super().__dir__() if a not in mine]


# ---- the API ----------------------------------------------------------------------------------------
def _cuda_graph(backend, mode, options):
    """Whether plans are captured into CUDA graphs on the GPU: yes but where the settings turn them off."""
    if backend == "cudagraphs":
        return True
    return mode != "max-autotune-no-cudagraphs" and (options or {}).get("triton.cudagraphs", True) is not False


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,
            disable=False, recompile_limit=None):
    """``torch.compile``: ``model`` (a module or a function) graphed through ``nn.Graph`` where that equals eager
    execution (see this module's docstring). Also a decorator, bare or with arguments.

    ``mode``: torch's names; all capture CUDA graphs on the GPU but ``"max-autotune-no-cudagraphs"``.
    ``options``: only ``{"triton.cudagraphs": False}`` has an effect (no capture); the rest is accepted, as
    inductor's knobs have nothing to tune here. ``backend``: ``"inductor"`` and ``"cudagraphs"`` graph,
    ``"eager"`` and ``"aot_eager"`` run eagerly; callables (FX backends) are refused. ``fullgraph=True``: a trace
    that cannot be one graph raises. ``dynamic``: accepted; each input signature gets its own plan.
    ``disable=True``: ``model`` itself. ``recompile_limit``: input signatures traced at most (torch's 8)."""
    if model is None:
        def decorate(model):
            if model is None:
                raise RuntimeError("Model can't be None")
            return compile(model, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options,
                           disable=disable, recompile_limit=recompile_limit)
        return decorate
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if backend == "inductor" and mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    if callable(backend):
        raise NotImplementedError("engine.compile: backend callables take an FX GraphModule, which engine does not "
                                  f"have; name one of {list(_GRAPH_BACKENDS + _EAGER_BACKENDS)}")
    if backend not in _GRAPH_BACKENDS + _EAGER_BACKENDS:
        raise RuntimeError(f"Invalid backend: {backend!r}. See `engine.compiler.list_backends()` for available "
                           "backends.")
    if not callable(model):
        raise AssertionError(f"A callable function is expected, but {type(model)} is provided.")
    if disable:
        return model
    compiled = _Compiled(model, fullgraph=fullgraph, cuda_graph=_cuda_graph(backend, mode, options),
                         eager=backend in _EAGER_BACKENDS, recompile_limit=recompile_limit)
    if isinstance(model, Module):
        return OptimizedModule(model, compiled)

    @functools.wraps(model)
    def compiled_function(*args, **kwargs):
        return compiled(args, kwargs)
    return compiled_function


def reset():
    """``torch.compiler.reset``: drop every compiled callable's graphs; their next calls trace anew."""
    for compiled in list(_COMPILED):
        compiled.graphs.clear()
        compiled.traced = False


def is_compiling():
    """``torch.compiler.is_compiling``: True while a graph is being traced (engine.compile's, any nn.Graph's, an
    ONNX export's), when code runs once to be recorded rather than for its result."""
    return tracing.active is not None


def disable(fn=None, recursive=True, *, reason=None):
    """``torch.compiler.disable``: ``fn`` runs eagerly, in Python, on every call, also inside compiled code. A
    compiled call that reaches it cannot be one graph: its input signature then runs eagerly, whole (torch runs
    the code around ``fn`` as graphs; ``recursive`` is accepted, as everything ``fn`` calls is eager anyway). In
    a plain nn.Graph's trace ``fn`` is traced like any code."""
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)

    @functools.wraps(fn)
    def eager(*args, **kwargs):
        if _Trace.graph is not None:
            why = f" ({reason})" if reason else ""
            raise _GraphBreak(f"{getattr(fn, '__qualname__', fn)} is engine.compiler.disable'd{why}")
        return fn(*args, **kwargs)
    return eager


def list_backends(exclude_tags=("debug", "experimental")):
    """``torch.compiler.list_backends``: the backend names ``compile`` takes (the eager ones are "debug")."""
    names = _GRAPH_BACKENDS + (() if "debug" in (exclude_tags or ()) else _EAGER_BACKENDS)
    return sorted(names)


def cudagraph_mark_step_begin():
    """``torch.compiler.cudagraph_mark_step_begin``: nothing to mark here; a captured graph's outputs are copies,
    valid after later replays."""
