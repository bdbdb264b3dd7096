"""``Compare``: many Measurements as text tables, as torch.utils.benchmark.Compare prints them.

One table per label; rows are (num_threads, env, sub_label or stmt), grouped under a "<n> threads: "
rule when the thread count changes; columns are descriptions; cells are medians in the unit of the
fastest measurement of the table. ``trim_significant_figures()`` prints only the digits each
measurement supports; ``colorize()`` marks each cell against the best of its column (or row) with ANSI
colours; ``highlight_warnings()`` adds "(! XX%)" to noisy cells.
"""
import collections
import enum
import math

from .common import Measurement, ordered_unique, select_unit, trim_sigfig, unit_to_english

__all__ = ["Colorize", "Compare"]

BEST = "\033[92m"
GOOD = "\033[34m"
BAD = "\033[2m\033[91m"
VERY_BAD = "\033[31m"
BOLD = "\033[1m"
TERMINATE = "\033[0m"


class Colorize(enum.Enum):
    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


def _leading_digits(value):
    return math.ceil(math.log10(value))


class _Column:
    """One description's cells: a shared number format wide enough for its largest median."""

    def __init__(self, groups, time_scale, trim, highlight):
        self.groups = groups
        cells = [m for group in groups for m in group if m is not None]
        self.trim = trim
        self.highlight = highlight and any(m.has_warnings for m in cells)
        digits = [_leading_digits(m.median / time_scale) for m in cells]
        decimals = min(max(m.significant_figures - d, 0) for m, d in zip(cells, digits)) if trim else 1
        width = max(digits) + decimals + (1 if decimals else 0)
        self.template = f"{{:>{width}.{decimals}f}}{{:>{7 if self.highlight else 0}}}"

    def text(self, value, sigfigs, spread):
        if value is None:
            return " " * len(self.text(1, sigfigs, None))
        if self.trim:
            value = trim_sigfig(value, sigfigs)
        return self.template.format(value, f" (! {spread * 100:.0f}%)" if self.highlight and spread is not None
                                    else "")


def _colour(text, value, best):
    if value <= best * 1.01 or value <= best + 100e-9:
        return BEST + BOLD + text + TERMINATE * 2
    if value <= best * 1.1:
        return GOOD + BOLD + text + TERMINATE * 2
    if value >= best * 5:
        return VERY_BAD + BOLD + text + TERMINATE * 2
    if value >= best * 2:
        return BAD + text + TERMINATE * 2
    return text


class _Table:
    """The measurements of one label laid out as rows and columns."""

    def __init__(self, results, colorize, trim, highlight):
        self.results, self.colorize, self.highlight = results, colorize, highlight
        self.label = results[0].label
        self.unit, self.scale = select_unit(min(m.median for m in results))
        rows = ordered_unique((m.num_threads, m.env, m.as_row_name) for m in results)
        self.row_keys = sorted(rows, key=lambda key: key[:2])
        self.column_keys = ordered_unique(m.description for m in results)
        cells = {(m.num_threads, m.env, m.as_row_name, m.description): m for m in results}
        self.grid = [[cells.get((*row, col)) for col in self.column_keys] for row in self.row_keys]
        self.group_of = []
        group, previous_threads = -1, None
        for threads, _, _ in self.row_keys:
            if threads != previous_threads:
                group, previous_threads = group + 1, threads
            self.group_of.append(group)
        n_groups = group + 1
        self.columns = []
        for j in range(len(self.column_keys)):
            groups = [tuple(self.grid[i][j] for i in range(len(self.grid)) if self.group_of[i] == g)
                      for g in range(n_groups)]
            self.columns.append(_Column(groups, self.scale, trim, highlight))
        envs = {m.env for m in results}
        self.render_env = len(envs) > 1
        self.env_width = max(len(str(e)) for e in envs) if self.render_env else 0

    def _row_strings(self, i):
        row = self.grid[i]
        first = next(m for m in row if m is not None)
        show_env = self.render_env and (i == 0 or self.row_keys[i][1] != self.row_keys[i - 1][1]
                                        or self.group_of[i] != self.group_of[i - 1])
        env = (f"({first.env})" if show_env else "").ljust(self.env_width + 4)
        out = ["  " + env + first.as_row_name]
        for m, column in zip(row, self.columns):
            if m is None:
                out.append(column.text(None, 1, None))
            else:
                out.append(column.text(m.median / self.scale, m.significant_figures,
                                       m.iqr / m.median if m.has_warnings else None))
        return out

    def _best(self, i):
        row = self.grid[i]
        if self.colorize == Colorize.ROWWISE:
            best = min(m.median for m in row if m is not None)
            return [best] * len(row)
        if self.colorize == Colorize.COLUMNWISE:
            return [min((m.median for m in c.groups[self.group_of[i]] if m is not None), default=None)
                    for c in self.columns]
        return [None] * len(row)

    def render(self):
        header = [""] + ["" if k is None else str(k) for k in self.column_keys]
        strings = [header] + [self._row_strings(i) for i in range(len(self.grid))]
        n_cols = max(len(s) for s in strings)
        for s in strings:
            s.extend([""] * (n_cols - len(s)))
        widths = [max(len(s[j]) for s in strings) for j in range(n_cols)]
        header = "  |  ".join(text.center(w) for text, w in zip(strings[0], widths))
        lines = [header]
        for i, string_row in enumerate(strings[1:]):
            if i == 0 or self.group_of[i] != self.group_of[i - 1]:
                lines.append(f"{self.row_keys[i][0]} threads: ".ljust(len(header), "-"))
            cells = [string_row[0].ljust(widths[0])]
            for text, width, m, best in zip(string_row[1:], widths[1:], self.grid[i], self._best(i)):
                text = text.center(width)
                if self.colorize != Colorize.NONE and m is not None and best is not None:
                    text = _colour(text, m.median, best)
                cells.append(text)
            lines.append("  |  ".join(cells))
        warn = self.highlight and any(m.has_warnings for m in self.results)
        title = f" {self.label or ''} ".center(len(header) - 2, "-")
        return (f"[{title}]\n" + "\n".join(lines) + f"\n\nTimes are in {unit_to_english(self.unit)}s ({self.unit}).\n"
                + ("(! XX%) Measurement has high variance, where XX is the IQR / median * 100.\n" if warn else ""))


class Compare:
    """Tables of Measurements (``str(compare)`` or ``compare.print()``), one per label."""

    def __init__(self, results):
        self._results = []
        self.extend_results(results)
        self._trim_significant_figures = False
        self._colorize = Colorize.NONE
        self._highlight_warnings = False

    def extend_results(self, results):
        """Add Measurements to the ones already held."""
        for r in results:
            if not isinstance(r, Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} instead.")
        self._results.extend(results)

    def trim_significant_figures(self):
        self._trim_significant_figures = True

    def colorize(self, rowwise=False):
        """Colour cells against the best of their column (or of their row with ``rowwise``)."""
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self):
        self._highlight_warnings = True

    def __str__(self):
        return "\n".join(self._render())

    def print(self):
        print(str(self))

    def _render(self):
        by_label = collections.defaultdict(list)
        for m in Measurement.merge(self._results):
            by_label[m.label].append(m)
        return [_Table(group, self._colorize, self._trim_significant_figures, self._highlight_warnings).render()
                for group in by_label.values()]
