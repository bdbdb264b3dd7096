"""``torch.ops``: the namespaces of registered operators (``ops.mylib.mysin``, ``ops.mylib.mysin.default``).

Kept free of engine imports at import time so that ``engine.ops``'s module ``__getattr__`` can look a namespace
up here without importing anything (an op can only be registered once ``engine.library`` is imported, which
imports this).
"""

#: namespace -> {op name -> OpOverloadPacket}
_PACKETS = {}
#: namespace -> OpNamespace
_NAMESPACES = {}


class OpOverload:
    """One overload of an operator (``ops.mylib.foo.default``): calling it runs the operator."""

    def __init__(self, packet, overload, opdef):
        self.overloadpacket, self._overloadname, self._op = packet, overload, opdef

    @property
    def _schema(self):
        return self._op._schema

    @property
    def _opname(self):
        return self.overloadpacket._opname

    def name(self):
        """``ns::name`` or ``ns::name.overload`` (torch's ``OpOverload.name()``)."""
        qual = self.overloadpacket._qualified_op_name
        return qual if self._overloadname == "default" else f"{qual}.{self._overloadname}"

    def __call__(self, *args, **kwargs):
        return self._op(*args, **kwargs)

    def __repr__(self):
        return f"<OpOverload(op='{self.overloadpacket}', overload='{self._overloadname}')>"

    def __str__(self):
        return f"{self.overloadpacket}.{self._overloadname}"


class OpOverloadPacket:
    """All overloads of one operator name (``ops.mylib.foo``); calling it runs the overload that takes the
    arguments."""

    def __init__(self, namespace, name):
        self._namespace, self._opname = namespace, name
        self._overloads = {}

    @property
    def _qualified_op_name(self):
        return f"{self._namespace}::{self._opname}"

    def overloads(self):
        return list(self._overloads)

    def __getattr__(self, overload):
        if overload.startswith("__"):
            raise AttributeError(overload)
        try:
            return self.__dict__["_overloads"][overload]
        except KeyError:
            raise AttributeError(f"The underlying op of '{self}' has no overload name '{overload}'") from None

    def __call__(self, *args, **kwargs):
        """The first overload (in the order defined) whose schema takes these arguments, as torch resolves a
        call of the packet; a lone overload is called whatever its name."""
        from .schema import bind

        overloads = list(self._overloads.values())
        if len(overloads) == 1:
            return overloads[0](*args, **kwargs)
        errors = []
        for overload in overloads:
            try:
                bind(overload._schema, self._qualified_op_name, args, kwargs)
            except RuntimeError as e:
                errors.append(str(e))
                continue
            return overload(*args, **kwargs)
        raise RuntimeError("Overloaded torch operator invoked from Python failed to match any schema: " +
                           " ".join(errors))

    def __repr__(self):
        return f"<OpOverloadPacket(op='{self}')>"

    def __str__(self):
        return f"{self._namespace}.{self._opname}"


class OpNamespace:
    """The operators of one namespace (``ops.mylib``)."""

    def __init__(self, name):
        self.name = name

    def __getattr__(self, op_name):
        if op_name.startswith("__"):
            raise AttributeError(op_name)
        packet = _PACKETS.get(self.name, {}).get(op_name)
        if packet is None:
            raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute '{op_name}'")
        return packet

    def __dir__(self):
        return sorted(_PACKETS.get(self.name, {}))

    def __repr__(self):
        return f"<OpNamespace '{self.name}' (engine.ops)>"


def add(opdef):
    """Register ``opdef`` (a CustomOpDef) under its namespace, name and overload; returns its OpOverload."""
    ns, name, overload = opdef._namespace, opdef._name, opdef._schema.overload or "default"
    _NAMESPACES.setdefault(ns, OpNamespace(ns))
    packet = _PACKETS.setdefault(ns, {}).get(name)
    if packet is None:
        packet = _PACKETS[ns][name] = OpOverloadPacket(ns, name)
    overload_obj = packet._overloads[overload] = OpOverload(packet, overload, opdef)
    return overload_obj


def lookup(ns, name, overload="default"):
    """The CustomOpDef registered as ``ns::name.overload``, or None."""
    packet = _PACKETS.get(ns, {}).get(name)
    if packet is None or overload not in packet._overloads:
        return None
    return packet._overloads[overload]._op


def remove(ns, name, overload="default"):
    """Forget an operator (a custom_op redefined under the same name replaces the old one)."""
    packet = _PACKETS.get(ns, {}).get(name)
    if packet is not None:
        packet._overloads.pop(overload, None)


def namespace(name):
    """The namespace ``name`` if an operator was registered in it; AttributeError otherwise (what
    ``engine.ops``'s module ``__getattr__`` returns, so that ``engine.ops``'s own submodules still import)."""
    if name not in _PACKETS:
        raise AttributeError(f"module 'engine.ops' has no attribute '{name}'")
    return _NAMESPACES.setdefault(name, OpNamespace(name))


def claim(ns):
    """Make ``ns`` a known namespace (a Library was opened on it), before any operator is defined there."""
    _PACKETS.setdefault(ns, {})


class Ops:
    """``torch.ops``: any attribute is a namespace (``ops.mylib``), empty until operators are registered."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _NAMESPACES.setdefault(name, OpNamespace(name))

    def __repr__(self):
        return "<engine.library.ops>"


ops = Ops()
