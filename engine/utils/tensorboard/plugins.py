"""Plugin payloads carried in ``SummaryMetadata.PluginData.content`` or in string tensors: the hparams
plugin's ``HParamsPluginData``, the PR-curve and text plugins' version records, and the custom-scalars
``Layout``. Each returns serialized bytes (field numbers from the plugins' .proto files)."""
from . import proto

HPARAMS_VERSION = 0
DATA_TYPE_STRING, DATA_TYPE_BOOL, DATA_TYPE_FLOAT64 = 1, 2, 3
STATUS_SUCCESS = 1


def struct_value(v):
    """A ``google.protobuf.Value`` holding a number, string or bool (its kind is a oneof)."""
    if isinstance(v, str):
        return proto.blob(3, v, always=True)
    if isinstance(v, bool):
        return proto.uint(4, v, always=True)
    return proto.double(2, v, always=True)


def _list_value(values):
    return proto.repeated_blob(1, [struct_value(v) for v in values])


def hparam_info(name, data_type, domain=None):
    """An ``HParamInfo``; ``domain`` a list of the discrete values the hyperparameter takes."""
    out = proto.blob(1, name) + proto.uint(4, data_type)
    if domain is not None:
        out += proto.message(5, _list_value(domain))
    return out


def experiment(hparam_infos, metric_tags):
    """An ``Experiment``: the hyperparameters and the metrics (by tag) compared across runs."""
    metric_infos = [proto.message(1, proto.blob(2, tag)) for tag in metric_tags]
    return proto.repeated_blob(4, hparam_infos) + proto.repeated_blob(5, metric_infos)


def session_start_info(hparams):
    """A ``SessionStartInfo``: map name -> Value of this run's hyperparameters, entries sorted by name
    (protobuf's deterministic map order; the official encoder's default order is its hash order)."""
    entries = [proto.blob(1, k, always=True) + proto.message(2, struct_value(hparams[k]))
               for k in sorted(hparams)]
    return proto.repeated_blob(1, entries)


def session_end_info(status=STATUS_SUCCESS):
    """A ``SessionEndInfo`` with the run's status."""
    return proto.uint(1, status)


def hparams_plugin_data(experiment=None, session_start_info=None, session_end_info=None):
    """An ``HParamsPluginData`` wrapping one of its three payloads."""
    out = proto.uint(1, HPARAMS_VERSION)
    for number, payload in ((2, experiment), (3, session_start_info), (4, session_end_info)):
        if payload is not None:
            out += proto.message(number, payload)
    return out


def pr_curve_plugin_data(num_thresholds, version=0):
    """A ``PrCurvePluginData``."""
    return proto.uint(1, version) + proto.uint(2, num_thresholds)


def text_plugin_data(version=0):
    """A ``TextPluginData``."""
    return proto.uint(1, version)


def layout(categories):
    """A custom-scalars ``Layout`` from {category: {chart title: [kind, tags]}}, kind 'Margin'
    (tags = value, lower, upper) or anything else for a multiline chart of ``tags``."""
    encoded_categories = []
    for title, charts in categories.items():
        encoded_charts = []
        for chart_title, (kind, tags) in charts.items():
            if kind == "Margin":
                if len(tags) != 3:
                    raise ValueError(f"a Margin chart needs 3 tags (value, lower, upper), got {len(tags)}")
                series = proto.blob(1, tags[0]) + proto.blob(2, tags[1]) + proto.blob(3, tags[2])
                content = proto.message(3, proto.message(1, series))
            else:
                content = proto.message(2, proto.repeated_blob(1, tags))
            encoded_charts.append(proto.blob(1, chart_title) + content)
        encoded_categories.append(proto.blob(1, title) + proto.repeated_blob(2, encoded_charts))
    return proto.repeated_blob(2, encoded_categories)
