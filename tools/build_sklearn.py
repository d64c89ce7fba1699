"""Builds classic-ML models offline: scikit-learn through skl2onnx, LightGBM and XGBoost
through onnxmltools.

Each model is trained with a fixed seed on a dataset that ships with scikit-learn (iris, breast
cancer, diabetes, or one derived from them: see :func:`dataset`) and converted with the
converter's default options (skl2onnx classifiers then end in a ZipMap whose output is a list of
``{label: probability}`` dicts) or, for the ``-nozipmap`` variants, with ``zipmap=False`` (a
``float[N, C]`` probability tensor). The input is ``X``: float32 ``[N, F]`` with a symbolic
``N``; for the DictVectorizer pipelines a ``map(string|int64, tensor(float))`` (one dict per
run, as onnxruntime takes it); for the string-feature pipeline a string ``[N, 3]``.

HistGradientBoosting: skl2onnx 1.20's converter writes a Python ``False`` (a leaf's
missing-value flag) into the int list ``nodes_missing_value_tracks_true``, which onnx 1.23's
``make_node`` refuses ("Expected an int, got a boolean"). :func:`_hgb_converters` re-registers
skl2onnx's own HGB converters through its public ``update_registered_converter`` around a
container whose ``add_node`` writes bools and numpy integers as Python ints; the trees are
still skl2onnx's conversion, value for value.

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
    rounded to one of 5 integer categories, for one-hot encoding), ``iris-names`` (iris with
    the species names as string labels), ``iris-dict`` / ``iris-dict-int`` (each row a dict
    from feature name / an int64 feature id to its value, about 10% of the entries left out,
    for DictVectorizer), ``iris-strings`` (each feature binned into a word: ``X`` a string
    ``[150, 3]`` array, string labels), ``cancer-missing`` (breast cancer with 5% of the
    values NaN, for HistGradientBoosting's missing-value branches).
    """
    from sklearn import datasets

    if name in ("iris", "iris-categorical", "iris-names", "iris-dict", "iris-dict-int", "iris-strings"):
        x, y = datasets.load_iris(return_X_y=True)
        x = x.astype(np.float32)
        names = np.array(["setosa", "versicolor", "virginica"])
        if name == "iris-categorical":
            x = x.copy()
            x[:, 0] = np.clip(np.round(x[:, 0]), 4, 8)
        elif name == "iris-names":
            y = names[y]
        elif name in ("iris-dict", "iris-dict-int"):
            keep = np.random.default_rng(SEED).random(x.shape) > 0.1
            keys = ["sepal length", "sepal width", "petal length", "petal width"] if name == "iris-dict" else [3, 8, 21, 40]
            rows = [{keys[j]: float(v) for j, v in enumerate(row) if k[j]} or {keys[0]: float(row[0])} for row, k in zip(x, keep)]
            return rows, y  # type: ignore[return-value]
        elif name == "iris-strings":
            words = [("short", "medium", "long"), ("thin", "medium", "wide"), ("narrow", "average", "broad")]
            columns = []
            for j, labels in zip((0, 2, 3), words):
                edges = np.quantile(x[:, j], [1 / 3, 2 / 3])
                columns.append(np.array(labels)[np.searchsorted(edges, x[:, j])])
            return np.stack(columns, axis=1), names[y]
    elif name in ("cancer", "cancer-missing"):
        x, y = datasets.load_breast_cancer(return_X_y=True)
        x = x.astype(np.float32)
        if name == "cancer-missing":
            x[np.random.default_rng(SEED).random(x.shape) < 0.05] = np.nan
    elif name == "diabetes":
        x, y = datasets.load_diabetes(return_X_y=True)
    else:
        raise KeyError(f"unknown dataset {name!r}")
    return x.astype(np.float32), y


def sample_rows(name: str, rng: np.random.Generator, count: int = 64):
    """``count`` rows of dataset ``name`` drawn with ``rng`` (realistic inputs, seeded): an
    array, or a list of dicts for the ``-dict`` datasets."""
    x, _ = dataset(name)
    chosen = rng.choice(len(x), size=count, replace=False)
    if isinstance(x, list):
        return [x[i] for i in chosen]
    return x[chosen]


def is_map_dataset(name: str) -> bool:
    """Whether rows of dataset ``name`` are dicts (a model input ``map(K, V)``, one per run)."""
    return name.startswith("iris-dict")


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
    """``skl2onnx``, ``onnxmltools-lightgbm`` or ``onnxmltools-xgboost``."""

    @property
    def requires(self) -> tuple[str, ...]:
        if self.converter == "skl2onnx":
            return ("sklearn", "skl2onnx", "onnxruntime")
        library = self.converter.split("-")[1]
        return ("sklearn", library, "onnxmltools", "onnxruntime")


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


def _dict_logreg() -> object:
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression

    return _pipeline(DictVectorizer(sparse=False), LogisticRegression(max_iter=500))


def _strings_onehot_logreg() -> object:
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import OneHotEncoder

    return _pipeline(OneHotEncoder(handle_unknown="ignore"), LogisticRegression(max_iter=500))


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
        # maps and strings at the graph boundary (frontend/host_values.py)
        m("dictvectorizer-logreg-iris", "iris-dict", _dict_logreg, "DictVectorizer (string keys) + LogisticRegression; input map(string, float), one dict per run"),
        m("dictvectorizer-int-logreg-iris", "iris-dict-int", _dict_logreg, "DictVectorizer (int64 keys) + LogisticRegression; input map(int64, float)", zipmap=False),
        m("logreg-iris-string-labels", "iris-names", _est(_LINEAR, "LogisticRegression", max_iter=500), "LogisticRegression on string labels (string label output)"),
        m("logreg-iris-string-labels-nozipmap", "iris-names", _est(_LINEAR, "LogisticRegression", max_iter=500), "LogisticRegression on string labels (string label output)", zipmap=False),
        m("random-forest-iris-string-labels", "iris-names", _est(_ENSEMBLE, "RandomForestClassifier", n_estimators=30, random_state=SEED), "RandomForestClassifier, 30 trees, string labels"),
        m("random-forest-iris-string-labels-nozipmap", "iris-names", _est(_ENSEMBLE, "RandomForestClassifier", n_estimators=30, random_state=SEED), "RandomForestClassifier, 30 trees, string labels", zipmap=False),
        m("mlp-iris-string-labels", "iris-names", _scaled("sklearn.neural_network", "MLPClassifier", hidden_layer_sizes=(16,), max_iter=500, random_state=SEED), "StandardScaler + MLPClassifier, string labels (ArrayFeatureExtractor over a string initializer)"),
        m("svc-rbf-iris-string-labels-nozipmap", "iris-names", _est(_SVM, "SVC"), "SVC rbf, string labels, decision values", zipmap=False),
        m("onehot-strings-logreg-iris", "iris-strings", _strings_onehot_logreg, "OneHotEncoder on 3 string columns (cats_strings) + LogisticRegression, string labels; input string [N, 3]"),
        # HistGradientBoosting through skl2onnx's own converter (see _hgb_converters)
        m("hist-gradient-boosting-iris", "iris", _est(_ENSEMBLE, "HistGradientBoostingClassifier", max_iter=30, random_state=SEED), "HistGradientBoostingClassifier, 30 rounds x 3 classes"),
        m("hist-gradient-boosting-cancer-missing-nozipmap", "cancer-missing", _est(_ENSEMBLE, "HistGradientBoostingClassifier", max_iter=30, random_state=SEED), "HistGradientBoostingClassifier, binary, 5% NaN inputs (missing-value branches)", zipmap=False),
        m("hist-gradient-boosting-regressor-diabetes", "diabetes", _est(_ENSEMBLE, "HistGradientBoostingRegressor", max_iter=50, random_state=SEED), "HistGradientBoostingRegressor, 50 rounds"),
        m("xgboost-iris", "iris", _est("xgboost", "XGBClassifier", n_estimators=30, max_depth=4, random_state=SEED), "XGBClassifier, 30 rounds x 3 classes", converter="onnxmltools-xgboost"),
        m("xgboost-cancer", "cancer", _est("xgboost", "XGBClassifier", n_estimators=30, max_depth=4, random_state=SEED), "XGBClassifier, binary", converter="onnxmltools-xgboost"),
        m("xgboost-regressor-diabetes", "diabetes", _est("xgboost", "XGBRegressor", n_estimators=50, max_depth=4, random_state=SEED), "XGBRegressor, 50 rounds", converter="onnxmltools-xgboost"),
    ]
    return models


MODELS: dict[str, SklearnModel] = {model.name: model for model in _models()}


def _is_classifier(estimator: object) -> bool:
    from sklearn.base import is_classifier

    return bool(is_classifier(estimator))


def _initial_types(name: str, x) -> list:
    """skl2onnx's input type of dataset ``name``: a map, a string or a float tensor ``X``."""
    from skl2onnx.common.data_types import DictionaryType, FloatTensorType, Int64TensorType, StringTensorType

    if is_map_dataset(name):
        key = StringTensorType([1]) if isinstance(next(iter(x[0])), str) else Int64TensorType([1])
        return [("X", DictionaryType(key, FloatTensorType([1])))]
    if x.dtype.kind == "U":
        return [("X", StringTensorType([None, x.shape[1]]))]
    return [("X", FloatTensorType([None, x.shape[1]]))]


class _IntAttributes:
    """A skl2onnx container whose ``add_node`` writes bool and numpy-integer attribute values
    as Python ints (see the module docstring); everything else is the container's."""

    def __init__(self, container: object) -> None:
        self._container = container

    def __getattr__(self, name: str) -> object:
        return getattr(self._container, name)

    def add_node(self, op_type, inputs, outputs, *args, **attributes):
        return self._container.add_node(op_type, inputs, outputs, *args, **{k: _ints(v) for k, v in attributes.items()})


def _ints(value: object) -> object:
    if isinstance(value, (bool, np.bool_, np.integer)):
        return int(value)
    if isinstance(value, list):
        return [_ints(v) for v in value]
    return value


def _hgb_converters() -> None:
    """Re-registers skl2onnx's HistGradientBoosting converters around :class:`_IntAttributes`."""
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
    from skl2onnx import update_registered_converter
    from skl2onnx._supported_operators import sklearn_operator_name_map
    from skl2onnx.common._registration import get_converter, get_shape_calculator

    for cls in (HistGradientBoostingClassifier, HistGradientBoostingRegressor):
        alias = sklearn_operator_name_map[cls]
        converter = get_converter(alias)
        if getattr(converter, "onnx_stablehlo_int_attributes", False):
            continue
        update_registered_converter(
            cls, alias, get_shape_calculator(alias), _with_int_attributes(converter),
            options=converter.get_allowed_options(),
        )
        get_converter(alias).onnx_stablehlo_int_attributes = True


def _with_int_attributes(converter: Callable) -> Callable:
    def convert(scope, operator, container):  # skl2onnx checks for exactly these 3 parameters
        return converter(scope, operator, _IntAttributes(container))

    return convert


def convert(model: SklearnModel):
    """Trains ``model`` and returns its ``onnx.ModelProto``."""
    x, y = dataset(model.dataset)
    estimator = model.make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.fit(x, y)
        if model.converter == "skl2onnx":
            from skl2onnx import to_onnx

            if "HistGradientBoosting" in type(estimator).__name__:
                _hgb_converters()
            final = estimator.steps[-1][1] if hasattr(estimator, "steps") else estimator
            options = {id(final): {"zipmap": False}} if not model.zipmap else None
            return to_onnx(
                estimator, initial_types=_initial_types(model.dataset, x), options=options,
                target_opset={"": 17, "ai.onnx.ml": 3},
            )
        from onnxmltools.convert.common.data_types import FloatTensorType

        initial_types = [("X", FloatTensorType([None, x.shape[1]]))]
        if model.converter == "onnxmltools-xgboost":
            from onnxmltools import convert_xgboost

            return convert_xgboost(estimator, initial_types=initial_types, target_opset=15)
        from onnxmltools import convert_lightgbm

        kwargs = {"zipmap": model.zipmap} if _is_classifier(estimator) else {}
        return convert_lightgbm(estimator, initial_types=initial_types, target_opset=15, **kwargs)


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
