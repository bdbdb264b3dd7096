"""``engine.distributions``: torch.distributions on the engine's tensors.

Parameterised probability distributions with sampling (``sample``; ``rsample`` with gradients to the parameters
where torch has it), scoring (``log_prob``, ``cdf``, ``icdf``), moments and ``entropy``; ``kl_divergence`` between
pairs; transforms and ``TransformedDistribution``; ``biject_to``/``transform_to`` onto constraints. Under the same
seed the draws are torch's numbers (the tensor samplers normal_, uniform_, exponential_, cauchy_, multinomial,
bernoulli... and torch's Gamma, Poisson and Binomial loops), except Wishart's: torch's singular-sample check is
inverted, so it draws every sample a second time; here a draw is redrawn only where it is singular.

The submodules load on first use of a name (``engine.distributions.Normal``): importing them all takes ~55 ms,
which ``import engine`` should not pay.
"""
import importlib

_HOMES = {
    "Bernoulli": "bernoulli", "Beta": "beta", "Binomial": "binomial", "Categorical": "categorical",
    "Cauchy": "cauchy", "Chi2": "chi2", "ContinuousBernoulli": "continuous_bernoulli", "Dirichlet": "dirichlet",
    "Distribution": "distribution", "Exponential": "exponential", "ExponentialFamily": "exp_family",
    "FisherSnedecor": "fishersnedecor", "Gamma": "gamma", "GeneralizedPareto": "generalized_pareto",
    "Geometric": "geometric", "Gumbel": "gumbel", "HalfCauchy": "half_cauchy", "HalfNormal": "half_normal",
    "Independent": "independent", "InverseGamma": "inverse_gamma",
    "Kumaraswamy": "kumaraswamy", "LKJCholesky": "lkj_cholesky", "Laplace": "laplace", "LogNormal": "log_normal",
    "LogisticNormal": "logistic_normal", "LowRankMultivariateNormal": "lowrank_multivariate_normal",
    "MixtureSameFamily": "mixture_same_family", "Multinomial": "multinomial",
    "MultivariateNormal": "multivariate_normal", "NegativeBinomial": "negative_binomial", "Normal": "normal",
    "OneHotCategorical": "one_hot_categorical", "OneHotCategoricalStraightThrough": "one_hot_categorical",
    "Pareto": "pareto", "Poisson": "poisson", "RelaxedBernoulli": "relaxed_bernoulli",
    "RelaxedOneHotCategorical": "relaxed_categorical", "StudentT": "studentT",
    "TransformedDistribution": "transformed_distribution", "Uniform": "uniform", "VonMises": "von_mises",
    "Weibull": "weibull", "Wishart": "wishart", "biject_to": "constraint_registry",
    "transform_to": "constraint_registry", "kl_divergence": "kl", "register_kl": "kl",
    "AbsTransform": "transforms", "AffineTransform": "transforms", "CatTransform": "transforms",
    "ComposeTransform": "transforms", "CorrCholeskyTransform": "transforms",
    "CumulativeDistributionTransform": "transforms", "ExpTransform": "transforms",
    "IndependentTransform": "transforms", "LowerCholeskyTransform": "transforms",
    "PositiveDefiniteTransform": "transforms", "PowerTransform": "transforms", "ReshapeTransform": "transforms",
    "SigmoidTransform": "transforms", "SoftmaxTransform": "transforms", "SoftplusTransform": "transforms",
    "StackTransform": "transforms", "StickBreakingTransform": "transforms", "TanhTransform": "transforms",
    "Transform": "transforms", "identity_transform": "transforms",
}

__all__ = sorted(_HOMES) + ["constraints", "transforms"]


def __getattr__(name):
    if name in _HOMES:
        value = getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
    else:
        try:
            value = importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__():
    return __all__
