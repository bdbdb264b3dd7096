"""The README is a current user's guide: generated tables up to date, short, its exit codes the CLI's;
the performance page is written one section per suite."""
import ast
import os
import re

import pytest

import flowvision.cli as cli
from script_loader import load_script

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = os.path.join(ROOT, "README.md")


def _script(name, monkeypatch):
    """Import ``scripts/<name>.py`` as a module (with scripts/ on the path, as when it runs)."""
    monkeypatch.syspath_prepend(os.path.join(ROOT, "scripts"))
    return load_script(name)


@pytest.fixture(scope="module")
def readme():
    with open(README, encoding="utf-8") as f:
        return f.read()


def test_model_zoo_tables_are_the_registry(monkeypatch):
    model_table = _script("model_table", monkeypatch)
    assert model_table.readme_table() == model_table.summary()
    with open(model_table.PAGE, encoding="utf-8") as f:
        assert f.read() == model_table.page()


def test_performance_rows_are_the_page(monkeypatch):
    headline = _script("headline_rows", monkeypatch)
    shown = headline.readme_rows()
    assert shown == headline.rows()
    assert len(shown.splitlines()) == 2 + len(headline.HEADLINE_CASES), "a headline case is missing from the page"


def test_readme_is_a_guide_not_a_diary(readme):
    # one short section per feature (14 of them, the model table and the headline rows generated): a guide
    # past 300 lines has taken on reference or history that belongs in docs/ and git
    assert len(readme.splitlines()) < 300
    assert not re.search(r"\d\d:\d\d UTC|20\d\d-\d\d-\d\d", readme), "dated runs belong in docs/performance.md"


def test_exit_codes_are_the_clis(readme):
    sentence = readme.split("exit codes:", 1)[1].split("\n\n", 1)[0]
    documented = {int(code) for code in re.findall(r"(?:^|,)\s*(\d+) ", sentence)}
    defined = {value for name, value in vars(cli).items() if name.startswith("EXIT_")}
    assert documented == defined


def test_python_examples_parse(readme):
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert len(blocks) >= 4
    for block in blocks:
        ast.parse(block)


def test_performance_page_keeps_other_suites(tmp_path, monkeypatch):
    bench = _script("bench", monkeypatch)
    table = bench.format_ratios("resnet", [("a", "torch", 0.002), ("a", "ours", 0.003), ("b", "torch", 1.0),
                                           ("b", "ours", 0.5)])
    assert "| a | 2.00 | 3.00 | 1.50 |" in table and "| b | 1000.00 | 500.00 | 0.50 |" in table
    assert table.endswith("worst ratio 1.50, median ratio 1.00")
    page = tmp_path / "performance.md"
    bench.update_page(str(page), {"train": "## train\n\nold", "resnet": "## resnet\n\nold"})
    bench.update_page(str(page), {"resnet": table})
    text = page.read_text()
    assert text.startswith("# Performance\n") and "## train\n\nold" in text and table in text
    assert text.count("## resnet") == 1 and "## resnet\n\nold" not in text


def test_headline_rows_follow_the_page(tmp_path, monkeypatch):
    headline = _script("headline_rows", monkeypatch)
    page = tmp_path / "performance.md"
    page.write_text("## resnet\n\n| case | PyTorch ms | ours ms | ours/PyTorch |\n| --- | ---: | ---: | ---: |\n"
                    "| resnet50 graph b8 | 1.00 | 2.00 | 2.00 |\n| resnet101 graph b8 | 1.00 | 9.00 | 9.00 |\n\n"
                    "## train\n\n| case | PyTorch ms | ours ms | ours/PyTorch |\n| --- | ---: | ---: | ---: |\n"
                    "| resnet50 train step graph | 3.00 | 3.00 | 1.00 |\n")
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{headline.BEGIN}\nstale\n{headline.END}\noutro\n")
    headline.write(str(page), str(readme))
    assert readme.read_text() == (f"intro\n{headline.BEGIN}\n{headline.HEADER}\n| resnet50 graph b8 | 1.00 | 2.00 | 2.00 |\n"
                                  f"| resnet50 train step graph | 3.00 | 3.00 | 1.00 |\n{headline.END}\noutro\n")
