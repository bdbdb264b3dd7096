"""Run the ``flowvision`` command in-process and check its one-line errors."""
import re

from flowvision.cli import main


def run_cli(capsys, *argv):
    """(exit code, stdout, stderr) of ``flowvision argv...`` run in-process."""
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def check_error(result, code, pattern):
    """``result`` failed with ``code`` and one ``error:`` line, the last, matching ``pattern`` (no traceback).

    argparse's usage errors name the command first (``flowvision detect: error: ...``).
    """
    actual_code, _, err = result
    lines = [line for line in err.splitlines() if line.strip()]
    assert actual_code == code, err
    errors = [line for line in lines if re.match(r"(flowvision[\w ]*: )?error: ", line)]
    assert len(errors) == 1 and lines[-1] == errors[0] and "Traceback" not in err, err
    assert re.search(pattern, errors[0]), errors[0]
