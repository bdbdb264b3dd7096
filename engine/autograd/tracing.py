"""The switch that lets ``nn.Graph`` watch ops run: while a tracer is active, every Function
call is reported to it, and reading a traced tensor's value (control flow on data) is refused."""

active = None


def check_value_read(tensor, what):
    """Raise when ``build`` reads the value of a tensor computed in the graph (data-dependent flow)."""
    if active is not None and active.is_traced(tensor):
        active.refuse_value_read(what)


def vary(count):
    """Whether an op should change its data-dependent number of results (``count``: the entries a mask or NMS
    keeps) in this traced run. Only an export's probe trace says yes, where the count equals the exported
    trace's at the same op: the two traces then differ in every such size, and the exporter writes each as a
    size computed at run time, never as the traced number."""
    decide = getattr(active, "vary_count", None)
    return decide is not None and decide(int(count))


def vary_mask(mask):
    """``mask`` (a boolean array), or a copy with its first entry flipped where ``vary`` says so. Outside a trace
    the mask is not counted (on a GPU, counting would wait for the device)."""
    if active is None or mask.size == 0 or not vary(mask.sum()):
        return mask
    mask = mask.copy()
    mask.flat[0] = not mask.flat[0]
    return mask
