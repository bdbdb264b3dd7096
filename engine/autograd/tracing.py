"""The switch that lets ``nn.Graph`` watch ops run: while a tracer is active, every Function
call is reported to it, and reading a traced tensor's value (control flow on data) is refused."""

active = None


def check_value_read(tensor, what):
    """Raise when ``build`` reads the value of a tensor computed in the graph (data-dependent flow)."""
    if active is not None and active.is_traced(tensor):
        active.refuse_value_read(what)
