"""The hparams plugin's summaries for ``add_hparams``, as torch.utils.tensorboard.summary.hparams builds
them: an experiment (hyperparameter and metric names), this run's hyperparameter values, and its end."""
from . import messages, plugins
from .convert import make_np

PLUGIN_NAME = "hparams"


def _hparam_entry(name, v, domain):
    """(value for SessionStartInfo, encoded HParamInfo) of one hyperparameter, typed as torch's writer
    types it (bools are ints in Python, so they are logged as numbers)."""
    if isinstance(v, (int, float)):
        domain = None if domain is None else [float(d) for d in domain]
        return float(v), plugins.hparam_info(name, plugins.DATA_TYPE_FLOAT64, domain)
    if isinstance(v, str):
        return v, plugins.hparam_info(name, plugins.DATA_TYPE_STRING, domain)
    if hasattr(v, "detach"):
        return float(make_np(v).reshape(-1)[0]), plugins.hparam_info(name, plugins.DATA_TYPE_FLOAT64)
    raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")


def summaries(hparam_dict, metric_dict, hparam_domain_discrete=None):
    """The hparams plugin's three summaries (experiment, session start, session end)."""
    if not isinstance(hparam_dict, dict):
        raise TypeError("parameter: hparam_dict should be a dictionary, nothing logged.")
    if not isinstance(metric_dict, dict):
        raise TypeError("parameter: metric_dict should be a dictionary, nothing logged.")
    domains = hparam_domain_discrete or {}
    if not isinstance(domains, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
    for k, v in domains.items():
        if k not in hparam_dict or not isinstance(v, list) or not all(isinstance(d, type(hparam_dict[k])) for d in v):
            raise TypeError(f"parameter: hparam_domain_discrete[{k}] should be a list of same type as "
                            f"hparam_dict[{k}].")
    start_values, infos = {}, []
    for k, v in hparam_dict.items():
        if v is None:
            continue
        start_values[k], info = _hparam_entry(k, v, domains.get(k))
        infos.append(info)

    def wrap(tag, **payload):
        meta = messages.metadata(PLUGIN_NAME, plugins.hparams_plugin_data(**payload))
        return messages.summary(messages.value(tag, metadata=meta))

    return (wrap("_hparams_/experiment", experiment=plugins.experiment(infos, list(metric_dict))),
            wrap("_hparams_/session_start_info", session_start_info=plugins.session_start_info(start_values)),
            wrap("_hparams_/session_end_info", session_end_info=plugins.session_end_info()))
