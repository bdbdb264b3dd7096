"""``python -m flowvision``: the ``flowvision`` command."""
import sys

from flowvision.cli import main

if __name__ == "__main__":
    sys.exit(main())
