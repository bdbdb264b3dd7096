"""List the registered models with their weight tags and ImageNet accuracy.

    flowvision models [PATTERN...] [--pretrained]

Each PATTERN is a shell-style wildcard (resnet1*, *resnext*); one without wildcards matches names that
contain it; a model matching any pattern is listed. --pretrained keeps the models with published
weights. The default tag of each model (weights="DEFAULT", and the CLI's choice) is marked with '*';
acc@1/acc@5 are the published ImageNet-1K figures of those weights, other metrics those of other tasks
(e.g. mIoU of segmentation weights). Older names kept for compatibility are listed as aliases.
"""
import difflib

from . import EXIT_UNKNOWN_MODEL, CLIError


def configure(parser):
    """Add the models arguments."""
    parser.add_argument("patterns", nargs="*", default=[], metavar="PATTERN", help="wildcard filters on model names")
    parser.add_argument("--pretrained", action="store_true", help="only models with pretrained weights")


def _as_filter(pattern):
    """A wildcard pattern: ``pattern`` itself when it has wildcards, else ``*pattern*``."""
    if not pattern or any(c in pattern for c in "*?["):
        return pattern
    return f"*{pattern}*"


def _number(value):
    """A metric for the table: three decimals, '-' when unknown."""
    return "-" if value is None or value != value else f"{value:.3f}"


def _metrics(meta):
    """(acc@1, acc@5, the other metrics as 'name value' pairs) of a weights' published metrics; accuracies measured
    on another dataset than ImageNet-1K (Kinetics-400 for the video models) name it among the others."""
    acc1 = acc5 = None
    others = []
    several = len(meta["_metrics"]) > 1  # then each metric names its dataset (RAFT's Sintel and KITTI)
    for name, dataset in meta["_metrics"].items():
        acc1, acc5 = dataset.get("acc@1", acc1), dataset.get("acc@5", acc5)
        if "acc@1" in dataset and name != "ImageNet-1K":
            others.append(f"accuracies on {name}")
        prefix = f"{name} " if several else ""
        others += [f"{prefix}{k} {v:g}" for k, v in dataset.items() if k not in ("acc@1", "acc@5")]
    return _number(acc1), _number(acc5), ", ".join(others)


def rows(names):
    """One row per (model, weight tag): name, tag (default starred), acc@1, acc@5, params (M), other metrics."""
    from flowvision.models import get_model_weights, list_pretrained
    from flowvision.models.registry import model_alias_of

    table = []
    for name in names:
        if model_alias_of(name):
            table.append((name, f"alias of {model_alias_of(name)}", "", "", "", ""))
            continue
        if name not in list_pretrained():
            table.append((name, "-", "-", "-", "-", ""))
            continue
        weights_enum = get_model_weights(name)
        default = weights_enum.DEFAULT.name
        for tag, member in weights_enum.__members__.items():
            if tag == "DEFAULT":
                continue
            meta = member.meta
            acc1, acc5, others = _metrics(meta)
            table.append((name, tag + (" *" if tag == default else ""), acc1, acc5,
                          f"{meta['num_params'] / 1e6:.1f}", others))
    return table


def format_table(table):
    """``table`` under a header, in aligned columns (numbers right-aligned)."""
    header = ("model", "weights", "acc@1", "acc@5", "params (M)", "other metrics")
    widths = [max(len(str(row[i])) for row in (header, *table)) for i in range(len(header))]
    lines = []
    for row in (header, *table):
        cells = [str(c).rjust(w) if 2 <= i <= 4 else str(c).ljust(w) for i, (c, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


FOOTNOTE = ("* the default weights: weights='DEFAULT' and the CLI load them; pretrained=True loads the weights "
            "torchvision's legacy flag loads (IMAGENET1K_V1 for ImageNet classifiers)")


def run(args):
    """Print the models matching any pattern, or fail with suggestions when none matches."""
    from flowvision.models import list_models

    patterns = args.patterns or [""]
    names = list_models([_as_filter(p) for p in patterns] if args.patterns else "", pretrained=args.pretrained)
    if not names:
        every = list_models(pretrained=args.pretrained)
        close = list(dict.fromkeys(m for p in patterns  # closest first, each once
                                   for m in difflib.get_close_matches(p.strip("*?"), every, n=3, cutoff=0.6)))
        hint = f" Did you mean: {', '.join(close)}?" if close else " Run 'flowvision models' to see them all."
        kind = "pretrained model" if args.pretrained else "model"
        raise CLIError(f"no {kind} matches {' or '.join(repr(p) for p in patterns)}.{hint}", EXIT_UNKNOWN_MODEL)
    table = rows(names)
    print(format_table(table))
    if any(row[1].endswith(" *") for row in table):
        print(FOOTNOTE)
    return 0
