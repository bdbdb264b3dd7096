"""The checks a trace with ``concrete_args`` puts in its graph (torch's ``_assert`` / ``_assert_is_none``): the
generated ``forward`` refuses inputs other than the values the graph was specialized for."""


def _assert(condition, message):
    """Raise AssertionError(message) unless ``condition`` holds."""
    if not condition:
        raise AssertionError(message)


def _assert_is_none(value, message):
    """Raise AssertionError(message) unless ``value`` is None."""
    if value is not None:
        raise AssertionError(message)


#: functions whose call nodes dead-code elimination keeps (``has_side_effect`` adds to it)
SIDE_EFFECTS = {_assert, _assert_is_none}
