"""``scripts/api_coverage.py``: the core list is real PyTorch API, its missing count does not grow,
and the full listing covers every namespace in text and JSON."""
import json
import os

import pytest
import torch

from script_loader import load_script

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# How many names of the core list the engine lacked when this was last recorded; lower it when names
# are added (python scripts/api_coverage.py --core lists them).
CORE_MISSING_AT_MOST = 0


@pytest.fixture(scope="module")
def coverage():
    return load_script("api_coverage")


def test_core_list_names_exist_in_torch(coverage):
    for namespace, names in coverage.core_names().items():
        root = coverage._import(namespace)
        unknown = [n for n in names if not coverage.resolve(root, n)]
        assert not unknown, f"not in {namespace}: {unknown}"
        assert len(set(names)) == len(names), f"{namespace} lists a name twice"
    assert 250 <= sum(len(v) for v in coverage.core_names().values()) <= 400


def test_core_missing_count_does_not_grow(coverage):
    result = coverage.report(coverage.core_names())
    missing = {ns: entry["names"] for ns, entry in result.items() if entry["names"]}
    count = sum(len(v) for v in missing.values())
    assert count <= CORE_MISSING_AT_MOST, f"{count} core names missing (recorded {CORE_MISSING_AT_MOST}): {missing}"


def test_resolve_walks_dotted_names_and_tensor_instance_attributes(coverage):
    import engine
    assert coverage.resolve(engine, "nn.utils.clip_grad_norm_")
    assert coverage.resolve(engine, "optim.lr_scheduler.StepLR")
    assert coverage.resolve(engine.Tensor, "grad") and coverage.resolve(engine.Tensor, "requires_grad")
    assert not coverage.resolve(engine, "nn.no_such_module.thing")
    assert not coverage.resolve(engine.Tensor, "no_such_attribute")


def test_public_names_leave_out_imports(coverage):
    functional = coverage.public_names("torch.nn.functional")
    assert "conv2d" in functional and "Tensor" in functional
    assert not {"np", "math", "warnings", "Optional", "Callable"} & set(functional)
    assert "add_" in coverage.public_names("torch.Tensor")
    scheduler = coverage.public_names("torch.optim.lr_scheduler")
    assert "StepLR" in scheduler and not {"inf", "annotations", "TYPE_CHECKING"} & set(scheduler)
    assert "torch" not in coverage.public_names("torch.cuda") and "amp" in coverage.public_names("torch.cuda")


def test_a_namespace_the_engine_lacks_counts_every_name_missing(coverage, monkeypatch):
    monkeypatch.setitem(coverage.NAMESPACES, "torch.fft", "engine.no_such_namespace")
    names = coverage.public_names("torch.fft")
    assert "rfft" in names and coverage.missing("torch.fft", names) == names


def test_full_listing_in_json_and_text(coverage, capsys):
    coverage.main(["--json"])
    result = json.loads(capsys.readouterr().out)
    assert list(result) == list(coverage.NAMESPACES)
    for entry in result.values():
        assert entry["missing"] == len(entry["names"]) <= entry["total"]
    assert result["torch.Tensor"]["total"] == len([n for n in dir(torch.Tensor) if not n.startswith("_")])
    coverage.main(["--core"])
    text = capsys.readouterr().out
    core = coverage.report(coverage.core_names())
    assert text.startswith("core list")
    for namespace, entry in core.items():
        assert f"\n{namespace}: {entry['missing']} of {entry['total']} missing\n" in text
