"""State-dict and load-state-dict hooks, ``_load_from_state_dict`` overrides and spectral_norm's metadata,
against torch."""
from collections import OrderedDict

import numpy as np
import pytest
import torch

import engine
import engine.nn as nn


def _net(lib):
    return lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.Sequential(lib.nn.BatchNorm1d(3)))


def _trace_hooks(lib, model, log):
    for name, m in model.named_modules():
        m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars, name=name: log.append(("pre", name, prefix)))
        m.register_state_dict_post_hook(
            lambda mod, sd, prefix, meta, name=name: log.append(("post", name, prefix, len(sd), meta["version"])))
        m.register_load_state_dict_pre_hook(
            lambda mod, sd, prefix, meta, strict, missing, unexpected, errors, name=name:
            log.append(("load pre", name, prefix, sorted(sd), strict)))
        m.register_load_state_dict_post_hook(
            lambda mod, keys, name=name: log.append(("load post", name, list(keys.missing_keys),
                                                     list(keys.unexpected_keys))))


def test_hook_arguments_and_order_match_torch():
    logs = {}
    for lib in (engine, torch):
        model = _net(lib)
        log = logs[lib] = []
        _trace_hooks(lib, model, log)
        sd = model.state_dict(prefix="m.")
        assert list(sd) == ["m.0.weight", "m.0.bias", "m.1.0.weight", "m.1.0.bias", "m.1.0.running_mean",
                            "m.1.0.running_var", "m.1.0.num_batches_tracked"]
        sd = model.state_dict()
        del sd["0.bias"]
        sd["extra"] = sd["0.weight"]
        result = model.load_state_dict(sd, strict=False)
        assert result.missing_keys == ["0.bias"] and result.unexpected_keys == ["extra"]
    assert logs[engine] == logs[torch]


def test_private_post_hook_may_replace_the_state_dict_and_public_one_may_not():
    m = nn.Linear(2, 2)
    m._register_state_dict_hook(lambda mod, sd, prefix, meta: OrderedDict(only=1))
    assert dict(m.state_dict()) == {"only": 1}

    def hook(mod, sd, prefix, meta):
        return sd
    m = nn.Linear(2, 2)
    m.register_state_dict_post_hook(hook)
    with pytest.raises(RuntimeError, match="^state_dict post-hook must return None$"):
        m.state_dict()
    with pytest.raises(RuntimeError, match="^Cannot register the same function as the state dict post hook that "
                                           "was previously registered via register_state_dict_post_hook$"):
        m._register_state_dict_hook(hook)


def test_load_pre_hooks_rename_keys_in_both_forms_and_handles_remove():
    for lib in (engine, torch):
        m = lib.nn.Linear(2, 2)
        sd = {("old_" + k): v.detach().clone() + 1 for k, v in m.state_dict().items()}

        def rename(state_dict, prefix, *rest):
            for k in list(state_dict):
                state_dict[prefix + k[len(prefix) + 4:]] = state_dict.pop(k)
        handle = m._register_load_state_dict_pre_hook(rename)
        m.load_state_dict(sd)
        np.testing.assert_array_equal(m.bias.detach().numpy(), sd["old_bias"].numpy())
        handle.remove()
        with pytest.raises(RuntimeError, match='Missing key'):
            m.load_state_dict(sd)
        seen = []
        m.register_load_state_dict_pre_hook(lambda mod, *args: seen.append(mod is m))
        m.load_state_dict(m.state_dict())
        assert seen == [True]


def test_load_post_hook_may_clear_keys_and_must_return_none():
    for lib in (engine, torch):
        m = lib.nn.Linear(2, 2)
        m.register_load_state_dict_post_hook(lambda mod, keys: keys.missing_keys.clear())
        result = m.load_state_dict({"weight": lib.ones(2, 2)})
        assert result.missing_keys == [] and result.unexpected_keys == []
        np.testing.assert_array_equal(m.weight.detach().numpy(), np.ones((2, 2)))
        m.register_load_state_dict_post_hook(lambda mod, keys: keys)
        with pytest.raises(AssertionError, match="Hooks registered with ``register_load_state_dict_post_hook`` are "
                                                 "not expected to return new values"):
            m.load_state_dict(m.state_dict())


def test_strict_errors_unchanged_and_nothing_copied():
    for lib in (engine, torch):
        m = lib.nn.Linear(2, 2)
        sd = {"weight": lib.ones(2, 2), "bogus": lib.ones(1)}
        with pytest.raises(RuntimeError, match='^Error\\(s\\) in loading state_dict for Linear:\n\tMissing key\\(s\\) '
                                               'in state_dict: "bias". \n\tUnexpected key\\(s\\) in state_dict: '
                                               '"bogus". $'):
            m.load_state_dict(sd)


def _custom_classes(lib):
    class Renamed(lib.nn.Linear):
        """A layer whose checkpoints of version 1 named the weight ``w``: torch's override protocol."""
        _version = 2

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
            if local_metadata.get("version", 1) < 2 and prefix + "w" in state_dict:
                state_dict[prefix + "weight"] = state_dict.pop(prefix + "w")
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing, unexpected, errors)
    return Renamed


def test_a_subclass_overriding_load_from_state_dict_works_as_in_torch():
    for lib in (engine, torch):
        model = lib.nn.Sequential(_custom_classes(lib)(2, 3))
        sd = model.state_dict()
        assert sd._metadata["0"]["version"] == 2
        old = OrderedDict(("0.w" if k == "0.weight" else k, v + 1) for k, v in sd.items())
        old._metadata = OrderedDict({"": {"version": 1}, "0": {"version": 1}})
        model.load_state_dict(old)
        np.testing.assert_array_equal(model[0].weight.detach().numpy(), old["0.w"].numpy())


def test_load_from_state_dict_called_directly_copies_at_once():
    m = nn.Linear(2, 2)
    missing, unexpected, errors = [], [], []
    m._load_from_state_dict({"p.weight": engine.ones(2, 2)}, "p.", {}, True, missing, unexpected, errors)
    assert (missing, unexpected, errors) == (["p.bias"], [], [])
    np.testing.assert_array_equal(m.weight.detach().numpy(), np.ones((2, 2)))


def test_upgrade_state_dict_still_runs_with_the_checkpoint_version():
    bn = nn.BatchNorm1d(3)
    sd = bn.state_dict()
    del sd["num_batches_tracked"]
    sd._metadata[""]["version"] = 1
    assert bn.load_state_dict(sd).missing_keys == []


def test_spectral_norm_version_goes_into_metadata_and_torch_loads_our_checkpoint():
    ours = nn.utils.spectral_norm(nn.Linear(3, 4))
    theirs = torch.nn.utils.spectral_norm(torch.nn.Linear(3, 4))
    sd = ours.state_dict()
    assert sd._metadata[""]["spectral_norm"] == theirs.state_dict()._metadata[""]["spectral_norm"] == {
        "weight.version": 1}
    converted = OrderedDict((k, torch.tensor(v.numpy())) for k, v in sd.items())
    converted._metadata = sd._metadata
    theirs.load_state_dict(converted)
    np.testing.assert_array_equal(theirs.weight_orig.detach().numpy(), ours.weight_orig.detach().numpy())
    nn.utils.remove_spectral_norm(ours)
    assert "spectral_norm" not in ours.state_dict()._metadata[""]
