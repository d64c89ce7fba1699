"""Builds classic-ML models offline: scikit-learn through skl2onnx, LightGBM through onnxmltools.

Each model is trained with a fixed seed on a dataset that ships with scikit-learn (iris, breast
cancer, diabetes) and converted with the converter's default options (classifiers then end in
a ZipMap whose output is a list of ``{label: probability}`` dicts) or, for the ``-nozipmap``
variants, with ``zipmap=False`` (a ``float[N, C]`` probability tensor). The input is ``X``,
float32 ``[N, F]`` with a symbolic ``N``.

Outputs are cached under ``<cache>/sklearn/<name>.onnx`` (``tools/_cache.py``), written
atomically; the cached file is reused unless ``--force``.

Usage::

    python tools/build_sklearn.py [--model NAME|all] [--force] [--list]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:  # allow loading this file by path
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cache import cache_dir as default_cache_dir, write_atomic  # noqa: E402

__all__ = ["SklearnModel", "MODELS", "build", "dataset", "sample_rows"]

SEED = 0


def dataset(name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(X float32 [n, F], y)`` of a dataset shipped with scikit-learn.

    ``iris`` (150 x 4, 3 classes), ``cancer`` (breast cancer, 569 x 30, 2 classes),
    ``diabetes`` (442 x 10, regression), ``iris-categorical`` (iris with the first feature
    rounded to one of 5 integer categories, for one-hot encoding).
    """
    from sklearn import datasets

    if name in ("iris", "iris-categorical"):
        x, y = datasets.load_iris(return_X_y=True)
        if name == "iris-categorical":
            x = x.copy()
            x[:, 0] = np.clip(np.round(x[:, 0]), 4, 8)
    elif name == "cancer":
        x, y = datasets.load_breast_cancer(return_X_y=True)
    elif name == "diabetes":
        x, y = datasets.load_diabetes(return_X_y=True)
    else:
        raise KeyError(f"unknown dataset {name!r}")
    return x.astype(np.float32), y


def sample_rows(name: str, rng: np.random.Generator, count: int = 64) -> np.ndarray:
    """``count`` rows of dataset ``name`` drawn with ``rng`` (realistic inputs, seeded)."""
    x, _ = dataset(name)
    return x[rng.choice(len(x), size=count, replace=False)]


@dataclasses.dataclass(frozen=True)
class SklearnModel:
    """One classic-ML model: how to train it and how to convert it."""

    name: str
    dataset: str
    make: Callable[[], object]
    """Returns the unfitted estimator (seeded)."""
    description: str
    zipmap: bool = True
    """Converter default (ZipMap output) or ``zipmap=False``."""
    converter: str = "skl2onnx"
    """``skl2onnx`` or ``onnxmltools-lightgbm``."""

    @property
    def requires(self) -> tuple[str, ...]:
        if self.converter == "skl2onnx":
            return ("sklearn", "skl2onnx", "onnxruntime")
        return ("sklearn", "lightgbm", "onnxmltools", "onnxruntime")


def _pipeline(*steps: object) -> object:
    from sklearn.pipeline import make_pipeline

    return make_pipeline(*steps)


def _est(module: str, cls: str, **kwargs: object) -> Callable[[], object]:
    def make() -> object:
        import importlib

        return getattr(importlib.import_module(module), cls)(**kwargs)

    return make


def _scaled(module: str, cls: str, **kwargs: object) -> Callable[[], object]:
    def make() -> object:
        from sklearn.preprocessing import StandardScaler

        return _pipeline(StandardScaler(), _est(module, cls, **kwargs)())

    return make


def _pca_logreg() -> object:
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    return _pipeline(StandardScaler(), PCA(n_components=3, random_state=SEED), LogisticRegression(max_iter=500))


def _onehot_logreg() -> object:
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    columns = ColumnTransformer(
        [("category", OneHotEncoder(handle_unknown="ignore"), [0]), ("numeric", StandardScaler(), [1, 2, 3])]
    )
    return _pipeline(columns, LogisticRegression(max_iter=500))


_LINEAR = "sklearn.linear_model"
_ENSEMBLE = "sklearn.ensemble"
_SVM = "sklearn.svm"


def _models() -> list[SklearnModel]:
    m = SklearnModel
    models = [
        m("logreg-iris", "iris", _est(_LINEAR, "LogisticRegression", max_iter=500), "LogisticRegression, 3 classes"),
        m("logreg-iris-nozipmap", "iris", _est(_LINEAR, "LogisticRegression", max_iter=500), "LogisticRegression, 3 classes", zipmap=False),
        m("logreg-cancer-scaled", "cancer", _scaled(_LINEAR, "LogisticRegression"), "StandardScaler + LogisticRegression, binary"),
        m("random-forest-iris", "iris", _est(_ENSEMBLE, "RandomForestClassifier", n_estimators=50, random_state=SEED), "RandomForestClassifier, 50 trees"),
        m("random-forest-iris-nozipmap", "iris", _est(_ENSEMBLE, "RandomForestClassifier", n_estimators=50, random_state=SEED), "RandomForestClassifier, 50 trees", zipmap=False),
        m("random-forest-cancer", "cancer", _est(_ENSEMBLE, "RandomForestClassifier", n_estimators=50, random_state=SEED), "RandomForestClassifier, 50 trees, binary"),
        m("extra-trees-iris", "iris", _est(_ENSEMBLE, "ExtraTreesClassifier", n_estimators=50, random_state=SEED), "ExtraTreesClassifier, 50 trees"),
        m("gradient-boosting-iris", "iris", _est(_ENSEMBLE, "GradientBoostingClassifier", n_estimators=30, random_state=SEED), "GradientBoostingClassifier, 30 rounds x 3 classes"),
        m("gradient-boosting-cancer-nozipmap", "cancer", _est(_ENSEMBLE, "GradientBoostingClassifier", n_estimators=30, random_state=SEED), "GradientBoostingClassifier, binary (one score, LOGISTIC)", zipmap=False),
        m("random-forest-regressor-diabetes", "diabetes", _est(_ENSEMBLE, "RandomForestRegressor", n_estimators=30, max_depth=8, random_state=SEED), "RandomForestRegressor, 30 trees, depth 8"),
        m("gradient-boosting-regressor-diabetes", "diabetes", _est(_ENSEMBLE, "GradientBoostingRegressor", n_estimators=50, random_state=SEED), "GradientBoostingRegressor, 50 rounds"),
        m("svc-rbf-iris", "iris", _est(_SVM, "SVC"), "SVC rbf, decision values (no probabilities)"),
        m("svc-poly-iris-probability", "iris", _est(_SVM, "SVC", kernel="poly", probability=True, random_state=SEED), "SVC poly with Platt probabilities (pairwise coupling)"),
        m("svc-rbf-cancer-nozipmap", "cancer", _scaled(_SVM, "SVC", probability=True, random_state=SEED), "StandardScaler + SVC rbf with probabilities, binary", zipmap=False),
        m("svr-diabetes", "diabetes", _est(_SVM, "SVR", C=50.0), "SVR rbf"),
        m("linear-svc-iris", "iris", _est(_SVM, "LinearSVC", max_iter=5000, random_state=SEED), "LinearSVC (skl2onnx cannot convert it inside a Pipeline)"),
        m("linear-regression-diabetes", "diabetes", _est(_LINEAR, "LinearRegression"), "LinearRegression"),
        m("knn-iris", "iris", _est("sklearn.neighbors", "KNeighborsClassifier", n_neighbors=5), "KNeighborsClassifier (Scan, TopK)"),
        m("mlp-iris", "iris", _scaled("sklearn.neural_network", "MLPClassifier", hidden_layer_sizes=(32,), max_iter=500, random_state=SEED), "StandardScaler + MLPClassifier"),
        m("kmeans-iris", "iris", _est("sklearn.cluster", "KMeans", n_clusters=3, n_init=3, random_state=SEED), "KMeans: cluster label and distances"),
        m("pca-logreg-iris", "iris", _pca_logreg, "StandardScaler + PCA + LogisticRegression"),
        m("onehot-logreg-iris", "iris-categorical", _onehot_logreg, "ColumnTransformer(OneHotEncoder, StandardScaler) + LogisticRegression"),
        m("lightgbm-iris", "iris", _est("lightgbm", "LGBMClassifier", n_estimators=30, verbose=-1, random_state=SEED), "LightGBM classifier, 30 rounds x 3 classes", converter="onnxmltools-lightgbm"),
        m("lightgbm-cancer-nozipmap", "cancer", _est("lightgbm", "LGBMClassifier", n_estimators=30, verbose=-1, random_state=SEED), "LightGBM classifier, binary", zipmap=False, converter="onnxmltools-lightgbm"),
        m("lightgbm-regressor-diabetes", "diabetes", _est("lightgbm", "LGBMRegressor", n_estimators=50, verbose=-1, random_state=SEED), "LightGBM regressor, 50 rounds", converter="onnxmltools-lightgbm"),
    ]
    return models


MODELS: dict[str, SklearnModel] = {model.name: model for model in _models()}


def _is_classifier(estimator: object) -> bool:
    from sklearn.base import is_classifier

    return bool(is_classifier(estimator))


def convert(model: SklearnModel):
    """Trains ``model`` and returns its ``onnx.ModelProto``."""
    x, y = dataset(model.dataset)
    estimator = model.make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.fit(x, y)
        if model.converter == "skl2onnx":
            from skl2onnx import to_onnx

            final = estimator.steps[-1][1] if hasattr(estimator, "steps") else estimator
            options = {id(final): {"zipmap": False}} if not model.zipmap else None
            return to_onnx(estimator, x[:1], options=options, target_opset={"": 17, "ai.onnx.ml": 3})
        from onnxmltools import convert_lightgbm
        from onnxmltools.convert.common.data_types import FloatTensorType

        kwargs = {"zipmap": model.zipmap} if _is_classifier(estimator) else {}
        return convert_lightgbm(
            estimator, initial_types=[("X", FloatTensorType([None, x.shape[1]]))], target_opset=15, **kwargs
        )


def build(name: str, cache_dir: Path | None = None, force: bool = False) -> Path:
    """Returns the path of model ``name``, training and converting it if not cached."""
    model = MODELS[name]
    target = (cache_dir or default_cache_dir()) / "sklearn" / f"{name}.onnx"
    if target.exists() and not force:
        return target
    proto = convert(model)
    return write_atomic(target, lambda tmp: tmp.write_bytes(proto.SerializeToString()))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="all", help="a model name, or all")
    parser.add_argument("--force", action="store_true", help="rebuild even if cached")
    parser.add_argument("--list", action="store_true", help="list the models")
    args = parser.parse_args(argv)
    if args.list:
        for model in MODELS.values():
            print(f"{model.name:40} {model.converter:22} {model.description}")
        return 0
    names = list(MODELS) if args.model == "all" else [args.model]
    for name in names:
        print(build(name, force=args.force))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
