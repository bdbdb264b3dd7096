"""AdaptiveLogSoftmaxWithLoss: the efficient softmax of Grave et al. for many classes of skewed frequencies.

The frequent classes (below ``cutoffs[0]``) and one entry per rarer cluster form the head; each cluster's
classes have their own tail, a two-layer projection whose hidden size shrinks by ``div_value`` per cluster.
A class's log-probability is its head entry, or its cluster's head entry plus its log-probability within
the cluster, so a target only costs the head and its own cluster's tail.
"""
from collections import namedtuple

from ...ops.shape import cat
from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """``forward(input, target)`` gives each target's log-probability and the mean negative log-likelihood;
    ``log_prob`` gives all classes' log-probabilities and ``predict`` the most likely class."""

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False, device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, device=device, dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, device=device, dtype=dtype),
                                        Linear(hidden, size, bias=False, device=device, dtype=dtype)))

    def reset_parameters(self):
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_, target_):
        """(N, in_features) inputs with (N,) targets, or (in_features,) with a 0-d target."""
        _check_batch(input_, target_)
        batched = target_.dim() > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        if target.numel() and (int(target.min()) < 0 or int(target.max()) >= self.n_classes):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{int(target.min())}, {int(target.max())}] were found. ")
        head_entry = target.clone()
        output = input.new_zeros(target.shape[0])
        for i, (low, high) in enumerate(zip(self.cutoffs, self.cutoffs[1:])):
            rows = ((target >= low) & (target < high)).nonzero().squeeze(1)
            if rows.numel() == 0:
                continue
            head_entry = head_entry.index_fill(0, rows, self.shortlist_size + i)
            cluster_logprob = F.log_softmax(self.tail[i](input.index_select(0, rows)), dim=1)
            within = cluster_logprob.gather(1, (target.index_select(0, rows) - low).unsqueeze(1)).squeeze(1)
            output = output.index_add(0, rows, within)
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = output + head_logprob.gather(1, head_entry.unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _get_full_log_prob(self, input, head_output):
        """(N, n_classes) log-probabilities: the head's shortlist, then each cluster's offset by its head entry."""
        head_logprob = F.log_softmax(head_output, dim=1)
        pieces = [head_logprob[:, :self.shortlist_size]]
        for i, projection in enumerate(self.tail):
            cluster_logprob = F.log_softmax(projection(input), dim=1)
            pieces.append(cluster_logprob + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return cat(pieces, dim=1)

    def log_prob(self, input):
        """Log-probabilities of all ``n_classes`` classes for (N, in_features) inputs."""
        return self._get_full_log_prob(input, self.head(input))

    def predict(self, input):
        """The most likely class of each (N, in_features) input; the tails run only for rows whose best head
        entry is a cluster."""
        head_output = self.head(input)
        output = head_output.argmax(dim=1)
        in_cluster = output >= self.shortlist_size
        if not bool(in_cluster.any()):
            return output
        if bool(in_cluster.all()):
            return self._get_full_log_prob(input, head_output).argmax(dim=1)
        log_prob = self._get_full_log_prob(input[in_cluster], head_output[in_cluster])
        output[in_cluster] = log_prob.argmax(dim=1)
        return output


def _check_batch(input, target):
    if target.dim() == 1:
        if input.size(0) != target.size(0):
            raise RuntimeError(f"Input and target should have the same size in the batch dimension, got "
                               f"{input.size(0)} and {target.size(0)}.")
        if input.dim() != 2:
            raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with size "
                               f"{input.size()}")
    elif target.dim() == 0:
        if input.dim() != 1:
            raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with size "
                               f"{input.size()}")
    else:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")


__all__ = ["AdaptiveLogSoftmaxWithLoss"]
