"""An ONNX graph under construction: uniquely named nodes and initializers, written with ``onnx.helper``.

Converters add nodes through ``node``; constant arrays become initializers (equal small constants
are shared, a tensor reached twice is stored once, under its state_dict name when it has one).
"""
import contextlib

import numpy as np


class OnnxGraph:
    """Nodes, initializers and the name bookkeeping of the graph being written."""

    def __init__(self, onnx, opset, tensor_names):
        self.onnx = onnx
        self.opset = opset
        self.tensor_names = tensor_names  # id(array) -> state_dict key, for parameters and buffers
        self.nodes = []
        self.initializers = []
        self.scope = ""
        self._used = set()
        self._constants = {}
        self._by_array = {}

    def fresh(self, hint):
        """A value or node name not used yet, built from ``hint``."""
        name = hint
        k = 0
        while name in self._used:
            k += 1
            name = f"{hint}_{k}"
        self._used.add(name)
        return name

    def reserve(self, name):
        """Claim ``name`` (a graph input's or output's) so that nothing else takes it."""
        self._used.add(name)

    def node(self, op_type, inputs, outputs=1, **attrs):
        """Add one ``op_type`` node reading ``inputs`` (names; "" for an absent optional input).

        Returns its output name, or a list of names when ``outputs`` > 1 (or a list of names given).
        """
        base = f"{self.scope}/{op_type}" if self.scope else op_type
        if isinstance(outputs, int):
            names = [self.fresh(f"{base}_output_{k}") for k in range(outputs)]
        else:
            names = list(outputs)
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(self.onnx.helper.make_node(op_type, list(inputs), names, name=self.fresh(base), **attrs))
        return names[0] if isinstance(outputs, int) and outputs == 1 else names

    @contextlib.contextmanager
    def subgraph(self):
        """Collect the nodes added inside the block into the yielded list instead of the graph: the body of a
        ``Loop``. Its names stay unique across both scopes; it may read the graph's initializers."""
        outer = self.nodes
        self.nodes = []
        try:
            yield self.nodes
        finally:
            self.nodes = outer

    def constant(self, value, dtype=None, hint="const"):
        """An initializer holding ``value`` (an array or a Python number) as ``dtype``; small ones are shared."""
        array = np.asarray(value, dtype=dtype)
        if array.dtype == np.float64 and dtype is None and not isinstance(value, np.ndarray):
            array = array.astype(np.float32)
        key = None
        if array.size <= 64:
            key = (array.dtype.str, array.shape, array.tobytes())
            if key in self._constants:
                return self._constants[key]
        name = self._initializer(array, hint)
        if key is not None:
            self._constants[key] = name
        return name

    def ints(self, values):
        """A 1-D int64 constant (shapes, axes, pads)."""
        return self.constant(np.asarray(list(values), dtype=np.int64), hint="ints")

    def array(self, array, hint="tensor"):
        """An initializer for a tensor's array, stored once however often it is read."""
        cached = self._by_array.get(id(array))
        if cached is not None and cached[0] is array:
            return cached[1]
        name = self._initializer(np.asarray(array), self.tensor_names.get(id(array), hint))
        self._by_array[id(array)] = (array, name)
        return name

    def _initializer(self, array, hint):
        name = self.fresh(hint)
        self.initializers.append(self.onnx.numpy_helper.from_array(np.asarray(array, order="C"), name))
        return name

    def elem_type(self, dtype):
        """The ONNX element type of a numpy dtype."""
        return self.onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))

    def rename(self, old, new):
        """Make the node that produces ``old`` produce ``new`` instead, and its readers read ``new``."""
        for node in self.nodes:
            for k, name in enumerate(node.output):
                if name == old:
                    node.output[k] = new
            for k, name in enumerate(node.input):
                if name == old:
                    node.input[k] = new

    def produced(self, name):
        return any(name in node.output for node in self.nodes)

    def schedule(self, outputs):
        """Order the nodes depth-first from the outputs, each input's producers before the node and the first
        input's before the second's (as torch's exporter orders a residual block: the branch that feeds the
        add first); a value is then computed close to where it is read. Nodes nothing reads are dropped."""
        producer = {name: node for node in self.nodes for name in node.output}
        ordered, done = [], set()
        for output in outputs:
            stack = [(producer.get(output), False)]
            while stack:
                node, expanded = stack.pop()
                if node is None or id(node) in done:
                    continue
                if expanded:
                    done.add(id(node))
                    ordered.append(node)
                    continue
                stack.append((node, True))
                stack.extend((producer.get(name), False) for name in reversed(node.input))
        self.nodes = ordered
