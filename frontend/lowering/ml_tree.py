"""Lowering rules: ``ai.onnx.ml`` tree ensembles.

    TreeEnsemble*(x)         -> the leaf each row reaches in each tree, [N, T], by one of:
                                QuickScorer bitvectors (trees of depth >= 6 with few branch
                                nodes: every test at once, masks ANDed per tree, the first set
                                bit); or every tree walked at once, a [N, T] tensor of node
                                indices advanced depth times by gathers of the node tables.
                                Then leaf weights gathered [N, T, K] and reduced over the trees

Spec: the ai.onnx.ml operators (onnx.ai/onnx/operators/onnx_aionnxml_*.html). Where the spec
leaves a result open, these rules follow onnxruntime's CPU kernels (the oracle of the tests),
and say so under Deviations; docs/coverage.md lists the ops. String class labels are interned
by the loader (``frontend/host_values.py``): a rule sees ``classlabels_ints``/``_int64s`` of
ids and the runtime returns the labels as strings. An onnx-ir model that reaches a rule with
``classlabels_strings`` (built without the loader) raises :class:`UnsupportedDtypeError`
naming the attribute (``builders/ml.py``).
"""

from __future__ import annotations

import dataclasses

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from onnx_stablehlo.errors import ShapeError, UnsupportedAttributeError
from onnx_stablehlo.frontend import builders, dtypes
from onnx_stablehlo.frontend.builders import ml
from onnx_stablehlo.frontend.context import LoweringContext, OnnxNode
from onnx_stablehlo.frontend.dtypes import DataType
from onnx_stablehlo.frontend.registry import lowering


_BRANCH_MODES = {
    "BRANCH_LEQ": 0,
    "BRANCH_LT": 1,
    "BRANCH_GTE": 2,
    "BRANCH_GT": 3,
    "BRANCH_EQ": 4,
    "BRANCH_NEQ": 5,
    "BRANCH_MEMBER": 6,
}

_LEAF = -1

_COMPARISONS = {0: "LE", 1: "LT", 2: "GE", 3: "GT", 4: "EQ", 5: "NE"}

_AGGREGATES = ("AVERAGE", "SUM", "MIN", "MAX")  # TreeEnsemble-5's integer codes, in order


@dataclasses.dataclass
class _Forest:
    """Every tree's nodes in flat tables indexed by a global node index.

    A leaf's two children are itself, so walking ``depth`` steps from the roots ends on each
    tree's leaf whatever the tree's own depth.
    """

    feature: np.ndarray  # int32 [M]
    threshold: np.ndarray  # float [M]
    mode: np.ndarray  # int8 [M], _LEAF for leaves
    true_next: np.ndarray  # int32 [M]
    false_next: np.ndarray  # int32 [M]
    missing_true: np.ndarray  # bool [M]
    roots: np.ndarray  # int32 [T]
    weights: np.ndarray  # [M, K] leaf values per target
    has_weight: np.ndarray  # bool [M, K]
    members: list[np.ndarray | None]  # per node: the set of BRANCH_MEMBER, else None

    @property
    def depth(self) -> int:
        """The number of branch steps from a root to its deepest leaf."""
        depth = 0
        frontier = set(int(r) for r in self.roots)
        while frontier:
            frontier = {
                int(n)
                for node in frontier
                if self.mode[node] != _LEAF
                for n in (self.true_next[node], self.false_next[node])
            }
            if frontier:
                depth += 1
            if depth > len(self.mode):
                raise ValueError("the trees have a cycle")
        return depth


def _tensor_or_list(node: OnnxNode, name: str, dtype: type) -> np.ndarray | None:
    """``name_as_tensor`` (float64) when set, else the float list ``name``; None if neither."""
    tensor = node.attr(f"{name}_as_tensor")
    if tensor is not None:
        return np.asarray(tensor, np.float64).reshape(-1)
    values = node.attr_floats(name)
    return None if values is None else np.asarray(values, dtype)


def _forest_from_node_lists(ctx: LoweringContext, node: OnnxNode, prefix: str, n_targets: int) -> _Forest:
    """Reads TreeEnsembleRegressor/Classifier-1/3/5's ``nodes_*`` and ``<prefix>_*`` lists."""
    tree_ids = node.attr_ints("nodes_treeids") or []
    node_ids = node.attr_ints("nodes_nodeids") or []
    count = len(tree_ids)
    index = {(t, n): i for i, (t, n) in enumerate(zip(tree_ids, node_ids))}
    if len(index) != count or len(node_ids) != count:
        raise ctx.error("nodes_treeids and nodes_nodeids must pair up uniquely", ShapeError)
    modes_text = node.attr("nodes_modes") or []
    mode = np.empty(count, np.int8)
    for i, text in enumerate(modes_text):
        text = text.decode() if isinstance(text, bytes) else text
        if text == "LEAF":
            mode[i] = _LEAF
        elif text in _BRANCH_MODES and text != "BRANCH_MEMBER":
            mode[i] = _BRANCH_MODES[text]
        else:
            raise ctx.unsupported_attribute("nodes_modes", text, ", ".join([*list(_BRANCH_MODES)[:6], "LEAF"]))
    values = _tensor_or_list(node, "nodes_values", np.float32)
    threshold = np.zeros(count) if values is None else values
    feature = np.asarray(node.attr_ints("nodes_featureids") or [0] * count, np.int32)
    true_ids = node.attr_ints("nodes_truenodeids") or [0] * count
    false_ids = node.attr_ints("nodes_falsenodeids") or [0] * count
    missing = np.asarray(node.attr_ints("nodes_missing_value_tracks_true") or [0] * count, bool)
    if not (len(mode) == len(threshold) == len(feature) == len(true_ids) == len(false_ids) == count):
        raise ctx.error("the nodes_* attributes must have one entry per node", ShapeError)
    positions = np.arange(count, dtype=np.int32)
    true_next, false_next = positions.copy(), positions.copy()
    for i in range(count):
        if mode[i] == _LEAF:
            continue
        try:
            true_next[i] = index[tree_ids[i], true_ids[i]]
            false_next[i] = index[tree_ids[i], false_ids[i]]
        except KeyError as exc:
            raise ctx.error(f"node {node_ids[i]} of tree {tree_ids[i]} points to missing node {exc.args[0][1]}", ShapeError) from None
    children = set(true_next[mode != _LEAF].tolist()) | set(false_next[mode != _LEAF].tolist())
    roots = np.asarray([i for i in range(count) if i not in children], np.int32)
    weights = np.zeros((count, n_targets), np.float64)
    has_weight = np.zeros((count, n_targets), bool)
    leaf_trees = node.attr_ints(f"{prefix}_treeids") or []
    leaf_nodes = node.attr_ints(f"{prefix}_nodeids") or []
    leaf_ids = node.attr_ints(f"{prefix}_ids") or []
    leaf_values = _tensor_or_list(node, f"{prefix}_weights", np.float32)
    leaf_values = np.zeros(len(leaf_ids)) if leaf_values is None else leaf_values
    for t, n, k, w in zip(leaf_trees, leaf_nodes, leaf_ids, leaf_values):
        if (t, n) not in index or not 0 <= k < n_targets:
            raise ctx.error(f"leaf weight for node {n} of tree {t}, target {k} points nowhere", ShapeError)
        weights[index[t, n], k] += w
        has_weight[index[t, n], k] = True
    return _Forest(feature, threshold, mode, true_next, false_next, missing, roots, weights, has_weight, [None] * count)


def _forest_from_tree_ensemble(ctx: LoweringContext, node: OnnxNode, n_targets: int) -> _Forest:
    """Reads TreeEnsemble-5: interior nodes first, then one global node per leaf."""
    feature = np.asarray(node.attr_ints("nodes_featureids") or [], np.int32)
    count = len(feature)
    splits = np.asarray(node.attr("nodes_splits"), np.float64).reshape(-1)
    modes = np.asarray(node.attr("nodes_modes"), np.int64).reshape(-1)
    true_ids = np.asarray(node.attr_ints("nodes_truenodeids") or [], np.int64)
    false_ids = np.asarray(node.attr_ints("nodes_falsenodeids") or [], np.int64)
    true_leaf = np.asarray(node.attr_ints("nodes_trueleafs") or [0] * count, bool)
    false_leaf = np.asarray(node.attr_ints("nodes_falseleafs") or [0] * count, bool)
    missing = np.asarray(node.attr_ints("nodes_missing_value_tracks_true") or [0] * count, bool)
    leaf_targets = np.asarray(node.attr_ints("leaf_targetids") or [], np.int64)
    leaf_values = np.asarray(node.attr("leaf_weights"), np.float64).reshape(-1)
    roots = np.asarray(node.attr_ints("tree_roots") or [], np.int32)
    if not (len(splits) == len(modes) == len(true_ids) == len(false_ids) == count):
        raise ctx.error("the nodes_* attributes must have one entry per node", ShapeError)
    if len(leaf_targets) != len(leaf_values):
        raise ctx.error("leaf_targetids and leaf_weights differ in length", ShapeError)
    if modes.size and (modes.min() < 0 or modes.max() > 6):
        raise ctx.unsupported_attribute("nodes_modes", sorted(set(modes.tolist())), "0 to 6 (LEQ, LT, GTE, GT, EQ, NEQ, MEMBER)")
    leaves = len(leaf_values)
    total = count + leaves
    positions = np.arange(total, dtype=np.int32)
    true_next = positions.copy()
    false_next = positions.copy()
    true_next[:count] = np.where(true_leaf, count + true_ids, true_ids)
    false_next[:count] = np.where(false_leaf, count + false_ids, false_ids)
    if ((true_next < 0) | (true_next >= total) | (false_next < 0) | (false_next >= total)).any():
        raise ctx.error("a node points outside the nodes or leaves", ShapeError)
    mode = np.concatenate([modes.astype(np.int8), np.full(leaves, _LEAF, np.int8)])
    weights = np.zeros((total, n_targets), np.float64)
    has_weight = np.zeros((total, n_targets), bool)
    if leaves and (leaf_targets.min() < 0 or leaf_targets.max() >= n_targets):
        raise ctx.error(f"leaf_targetids must be in [0, {n_targets})", ShapeError)
    weights[count + np.arange(leaves), leaf_targets] = leaf_values
    has_weight[count + np.arange(leaves), leaf_targets] = True
    members: list[np.ndarray | None] = [None] * total
    member_nodes = np.nonzero(modes == 6)[0]
    if len(member_nodes):
        values = np.asarray(node.attr("membership_values"), np.float64).reshape(-1)
        sets, current = [], []
        for v in values:
            if np.isnan(v):
                sets.append(np.asarray(current))
                current = []
            else:
                current.append(v)
        if current:
            sets.append(np.asarray(current))
        if len(sets) < len(member_nodes):
            raise ctx.error(f"membership_values holds {len(sets)} sets for {len(member_nodes)} BRANCH_MEMBER nodes", ShapeError)
        for position, node_index in enumerate(member_nodes):
            members[node_index] = sets[position]
    return _Forest(
        np.concatenate([feature, np.zeros(leaves, np.int32)]),
        np.concatenate([splits, np.zeros(leaves)]),
        mode,
        true_next,
        false_next,
        np.concatenate([missing, np.zeros(leaves, bool)]),
        roots,
        weights,
        has_weight,
        members,
    )


def _gather_table(table: ir.Value, state: ir.Value) -> ir.Value:
    """``table[state]`` for a ``[M]`` or ``[M, k]`` table and ``[N, T]`` int32 indices."""
    shape = builders.dims_of(state)
    table_shape = builders.static_shape_of(table)
    extra = list(table_shape[1:])
    numbers = stablehlo.GatherDimensionNumbers.get(
        offset_dims=list(range(2, 2 + len(extra))),
        collapsed_slice_dims=[0],
        operand_batching_dims=[],
        start_indices_batching_dims=[],
        start_index_map=[0],
        index_vector_dim=2,
    )
    indices = builders.reshape(state, (*shape, 1))
    out_shape = (*shape, *extra)
    result_type = builders.tensor_type(out_shape, builders.dtype_of(table))
    result = stablehlo.gather(table, indices, numbers, builders.i64_array([1, *extra]), results=[result_type])
    return builders.record(result, out_shape)


def _gather_features(x: ir.Value, feature: ir.Value) -> ir.Value:
    """``x[n, feature[n, t]]`` for ``x [N, F]`` and ``feature [N, T]``: ``[N, T]``."""
    shape = builders.dims_of(feature)
    numbers = stablehlo.GatherDimensionNumbers.get(
        offset_dims=[],
        collapsed_slice_dims=[1],
        operand_batching_dims=[0],
        start_indices_batching_dims=[0],
        start_index_map=[1],
        index_vector_dim=2,
    )
    indices = builders.reshape(feature, (*shape, 1))
    result_type = builders.tensor_type(shape, builders.dtype_of(x))
    result = stablehlo.gather(x, indices, numbers, builders.i64_array([1, 1]), results=[result_type])
    return builders.record(result, shape)


def _branch(x_value: ir.Value, threshold: ir.Value, mode: int) -> ir.Value:
    return builders.compare(x_value, threshold, _COMPARISONS[mode])


def _goes_true(
    value: ir.Value, outcomes: dict[int, ir.Value], node_mode: ir.Value | None, tracks: ir.Value | None
) -> ir.Value:
    """Whether each test takes its node's true branch: the outcome of the node's mode
    (``node_mode``, the mode of each test's node; None when ``outcomes`` has one mode), or true
    for a NaN ``value`` where ``tracks`` (the node's ``missing_value_tracks_true``) is set."""
    shape = builders.dims_of(value)
    modes = list(outcomes)
    if not modes:  # leaves only
        return builders.splat(True, DataType.BOOL, shape)
    take_true = outcomes[modes[0]]
    if node_mode is not None:
        for mode in modes[1:]:
            is_mode = builders.compare(node_mode, builders.splat(mode, DataType.INT32, shape), "EQ")
            take_true = stablehlo.select(is_mode, outcomes[mode], take_true)
    if tracks is not None:
        nan = builders.compare(value, value, "NE")
        take_true = stablehlo.or_(take_true, stablehlo.and_(nan, tracks))
    return take_true


@dataclasses.dataclass
class _Bitvectors:
    """The trees as QuickScorer lays them out: every tree's branch nodes in slots, one bitvector
    of the tree's leaves per slot.

    Leaves are numbered in depth-first order, true child first; leaf ``j`` is bit ``63 - j % 64``
    of word ``j // 64``. A slot's mask has zeros for the leaves of its node's true subtree: the
    leaves a row cannot reach when the node's test fails. ANDing the masks of the failed tests
    leaves the reached leaf as the first set bit (Lucchese et al., "QuickScorer", SIGIR 2015).
    """

    node: np.ndarray  # int32 [I, T]: the branch node in slot i of tree t, -1 for padding
    masks: np.ndarray  # uint64 [I, T, W]
    leaves: np.ndarray  # int32 [T, 64 W]: the global index of each tree's j-th leaf

    @property
    def words(self) -> int:
        return self.masks.shape[2]


# A bitvector pass costs about one vector op per (row, tree, slot, word) plus a fixed part (the
# feature values materialized, the first set bit, the leaf lookup); a walk step a few dependent
# gathers per (row, tree). Measured on the scikit-learn/LightGBM/XGBoost zoo models (64 rows, in
# one process, interleaved): bitvectors win for depth 8-17 and slots x words up to 2.5x the
# depth (LightGBM and HistGradientBoosting regressors 2.2-2.4x faster, extra trees 1.4x, random
# forests 1.1x), the walk for depth 3-4 (gradient boosting on iris 1.5x, XGBoost 1.3x).
_BITVECTOR_MIN_DEPTH = 6
_BITVECTOR_SLOTS_PER_STEP = 2.5


def _bitvectors(forest: _Forest, depth: int) -> _Bitvectors | None:
    """QuickScorer's layout of ``forest``, or None when the walk is cheaper or it does not apply
    (set membership tests, trees with shared or too many nodes)."""
    branch = forest.mode != _LEAF
    if depth < max(_BITVECTOR_MIN_DEPTH, 1) or (forest.mode == 6).any():
        return None
    budget = 2 * len(forest.mode)  # a node reached twice (a DAG) is laid out twice; stop early
    trees: list[tuple[list[tuple[int, int, int]], list[int]]] = []
    for root in forest.roots.tolist():
        slots: list[list[int]] = []  # [node, first leaf of the true subtree, end of it]
        leaves: list[int] = []
        stack: list[tuple[bool, int]] = [(True, root)]
        while stack:
            visit, item = stack.pop()
            if not visit:  # the true subtree of slot `item` is done
                slots[item][2] = len(leaves)
                continue
            budget -= 1
            if budget < 0:
                return None
            if not branch[item]:
                leaves.append(item)
                continue
            slots.append([item, len(leaves), -1])
            stack += [(True, int(forest.false_next[item])), (False, len(slots) - 1), (True, int(forest.true_next[item]))]
        trees.append(([tuple(slot) for slot in slots], leaves))
    width = max(len(slots) for slots, _ in trees)
    words = -(-max(len(leaves) for _, leaves in trees) // 64)
    if width * words > _BITVECTOR_SLOTS_PER_STEP * depth:
        return None
    node = np.full((width, len(trees)), -1, np.int32)
    masks = np.full((width, len(trees), words), np.iinfo(np.uint64).max, np.uint64)
    leaf_table = np.zeros((len(trees), 64 * words), np.int32)
    bit = np.uint64(1) << (np.uint64(63) - np.arange(64, dtype=np.uint64))  # leaf j -> bit 63 - j
    for t, (slots, leaves) in enumerate(trees):
        leaf_table[t, : len(leaves)] = leaves
        for i, (index, first, end) in enumerate(slots):
            node[i, t] = index
            for j in range(first, end):
                masks[i, t, j // 64] &= ~bit[j % 64]
    return _Bitvectors(node, masks, leaf_table)


def _walk_bitvectors(forest: _Forest, layout: _Bitvectors, x: ir.Value, modes: list[int]) -> ir.Value:
    """:func:`_walk` by bitvectors: every branch test at once, ANDed masks, the first set bit."""
    n_rows = builders.dims_of(x)[0]
    width, n_trees = layout.node.shape
    words = layout.words
    dtype = builders.dtype_of(x)
    slot_node = np.maximum(layout.node, 0)  # padding slots test node 0; their masks are all ones
    value = builders.reshape(builders.take(x, forest.feature[slot_node].reshape(-1).astype(np.int64), 1), (n_rows, width, n_trees))
    # materialized apart: fused into the reduction below, XLA CPU gathers x per (row, slot, tree)
    # in a scalar loop (lightgbm-regressor-diabetes: 360 -> 230 us per call)
    value = stablehlo.optimization_barrier([value])
    shape = (n_rows, width, n_trees)

    def per_slot(table: np.ndarray) -> ir.Value:  # [I, T] -> [N, I, T]
        return builders.broadcast_to(builders.constant(table), shape, dims=[1, 2])

    threshold = per_slot(forest.threshold[slot_node].astype(dtypes.numpy_dtype(dtype)))
    outcomes = {mode: _branch(value, threshold, mode) for mode in modes}
    node_mode = per_slot(forest.mode[slot_node].astype(np.int32)) if len(modes) > 1 else None
    tracks = forest.missing_true[slot_node] & (layout.node >= 0)
    take_true = _goes_true(value, outcomes, node_mode, per_slot(tracks) if tracks.any() else None)
    wide = (*shape, words)
    masks = builders.broadcast_to(builders.constant(layout.masks), wide, dims=[1, 2, 3])
    kept = stablehlo.select(
        builders.broadcast_to(take_true, wide, dims=[0, 1, 2]), builders.splat(np.iinfo(np.uint64).max, DataType.UINT64, wide), masks
    )
    bits = builders.reduce(kept, [1], stablehlo.and_, int(np.iinfo(np.uint64).max))  # [N, T, W]
    first = builders.convert(stablehlo.count_leading_zeros(bits), DataType.INT32)  # 64 for a zero word
    if words > 1:
        offsets = builders.broadcast_to(builders.constant(np.arange(words, dtype=np.int32) * 64), (n_rows, n_trees, words), dims=[2])
        none = builders.splat(64 * words - 1, DataType.INT32, (n_rows, n_trees, words))
        candidates = stablehlo.select(
            builders.compare(first, builders.splat(64, DataType.INT32, (n_rows, n_trees, words)), "LT"),
            stablehlo.add(first, offsets), none,
        )
        first = builders.reduce(candidates, [2], stablehlo.minimum, 64 * words - 1)
    position = builders.reshape(first, (n_rows, n_trees))
    base = builders.broadcast_to(builders.constant(np.arange(n_trees, dtype=np.int32) * (64 * words)), (n_rows, n_trees), dims=[1])
    return builders.take(builders.constant(layout.leaves.reshape(-1)), stablehlo.add(position, base), 0)


def _walk(ctx: LoweringContext, forest: _Forest, x: ir.Value) -> ir.Value:
    """The global index of the leaf each row reaches in each tree: int32 ``[N, T]``.

    Trees of depth 6 or more with few branch nodes per tree use QuickScorer's bitvectors
    (:class:`_Bitvectors`, :func:`_bitvectors` says when), others a walk of ``depth`` steps,
    each gathering every (row, tree)'s next node.
    """
    n_rows = builders.dims_of(x)[0]
    features = builders.dims_of(x)[1]
    branch = forest.mode != _LEAF
    if branch.any() and isinstance(features, int) and forest.feature[branch].max() >= features:
        raise ctx.error(f"a node tests feature {int(forest.feature[branch].max())} of {features}", ShapeError)
    depth = forest.depth
    modes = sorted(set(forest.mode[branch].tolist()))
    layout = _bitvectors(forest, depth)
    if layout is not None:
        return _walk_bitvectors(forest, layout, x, modes)
    dtype = builders.dtype_of(x)
    shape = (n_rows, len(forest.roots))
    state = builders.broadcast_to(builders.constant(forest.roots.astype(np.int32)), shape, dims=[1])
    links = builders.constant(np.stack([forest.feature, forest.true_next, forest.false_next], axis=1).astype(np.int32))
    thresholds = builders.constant(forest.threshold.astype(dtypes.numpy_dtype(dtype)))
    mode_table = builders.constant(forest.mode.astype(np.int32)) if len(modes) > 1 else None
    missing_table = builders.constant(forest.missing_true) if forest.missing_true[branch].any() else None
    member_table = member_rows = None
    if 6 in modes:
        sets = [m for m in forest.members if m is not None]
        width = max(len(m) for m in sets)
        rows = np.full((len(sets) + 1, max(width, 1)), np.nan)
        row_of = np.zeros(len(forest.mode), np.int32)
        position = 1
        for index, members in enumerate(forest.members):
            if members is not None:
                rows[position, : len(members)] = members
                row_of[index] = position
                position += 1
        member_table = builders.constant(rows.astype(dtypes.numpy_dtype(dtype)))
        member_rows = builders.constant(row_of)
    for _ in range(depth):
        link = _gather_table(links, state)
        feature = builders.reshape(builders.slice_axis(link, 2, 0, 1), shape)
        on_true = builders.reshape(builders.slice_axis(link, 2, 1, 2), shape)
        on_false = builders.reshape(builders.slice_axis(link, 2, 2, 3), shape)
        value = _gather_features(x, feature)
        threshold = _gather_table(thresholds, state)
        outcomes = {}
        for mode in modes:
            if mode == 6:
                candidates = _gather_table(member_table, _gather_table(member_rows, state))
                wide_shape = builders.dims_of(candidates)
                hits = builders.compare(builders.broadcast_to(value, wide_shape, dims=[0, 1]), candidates, "EQ")
                outcomes[mode] = builders.reduce(hits, [2], stablehlo.OrOp, False)
            else:
                outcomes[mode] = _branch(value, threshold, mode)
        node_mode = None if mode_table is None else _gather_table(mode_table, state)
        tracks = None if missing_table is None else _gather_table(missing_table, state)
        take_true = _goes_true(value, outcomes, node_mode, tracks)
        state = stablehlo.select(take_true, on_true, on_false)
    return state


def _aggregate(ctx: LoweringContext, forest: _Forest, leaves: ir.Value, aggregate: str, dtype: DataType) -> ir.Value:
    """Reduces the reached leaves' weights over the trees: ``[N, K]``."""
    n_trees = len(forest.roots)
    n_rows = builders.dims_of(leaves)[0]
    weights = builders.constant(forest.weights.astype(dtypes.numpy_dtype(dtype)))
    values = _gather_table(weights, leaves)  # [N, T, K]
    if aggregate in ("SUM", "AVERAGE"):
        total = builders.reduce(values, [1], stablehlo.AddOp, 0.0)
        if aggregate == "AVERAGE":
            total = builders.divide(total, builders.splat(float(n_trees), dtype, builders.dims_of(total)))
        return total
    if aggregate not in ("MIN", "MAX"):
        raise ctx.unsupported_attribute("aggregate_function", aggregate, ", ".join(_AGGREGATES))
    has = _gather_table(builders.constant(forest.has_weight), leaves)
    extreme = np.inf if aggregate == "MIN" else -np.inf
    masked = stablehlo.select(has, values, builders.full_like(values, extreme))
    op = stablehlo.MinOp if aggregate == "MIN" else stablehlo.MaxOp
    result = builders.reduce(masked, [1], op, extreme)
    any_score = builders.reduce(has, [1], stablehlo.OrOp, False)
    del n_rows
    return stablehlo.select(any_score, result, builders.full_like(result, 0.0))


def _tree_input(ctx: LoweringContext, double_thresholds: bool) -> ir.Value:
    """X as the threshold type: float64 for float64 X or ``*_as_tensor`` thresholds, else float32."""
    x = ml.as_matrix(ctx, ml.float_input(ctx))
    if double_thresholds:
        return builders.convert(x, DataType.DOUBLE)
    return x


def _base_values(node: OnnxNode) -> np.ndarray | None:
    return _tensor_or_list(node, "base_values", np.float32)


@lowering("TreeEnsembleRegressor", since=1, domain=ml.ML)
@lowering("TreeEnsembleRegressor", since=3, domain=ml.ML)  # 3 added the *_as_tensor (float64) attributes
@lowering("TreeEnsembleRegressor", since=5, domain=ml.ML)  # 5 deprecated the op for TreeEnsemble (same semantics)
def lower_tree_ensemble_regressor(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers TreeEnsembleRegressor to every tree evaluated at once (see :func:`_walk`).

    Spec: ai.onnx.ml TreeEnsembleRegressor-1, 3, 5.
    Shapes: X [N, F] or [F]; Y [N, n_targets] float32.
    Dtypes: X float32, float64, int64, int32; compared in float32 (float64 for float64 X or
        float64 thresholds), summed in that type; Y float32.
    Deviations: ``nodes_hitrates`` are ignored (they only guide evaluation order).
    Raises:
        UnsupportedAttributeError: an unknown mode, aggregate_function or post_transform.
        ShapeError: inconsistent node or target lists.
    """
    n_targets = node.attr_int("n_targets", 1)
    forest = _forest_from_node_lists(ctx, node, "target", n_targets)
    double = node.attr("nodes_values_as_tensor") is not None
    x = _tree_input(ctx, double)
    dtype = builders.dtype_of(x)
    scores = _aggregate(ctx, forest, _walk(ctx, forest, x), node.attr_str("aggregate_function"), dtype)
    base = _base_values(node)
    if base is not None and len(base):
        scores = ml.add_row(scores, np.resize(base, n_targets))
    scores = ml.post_transform(ctx, node.attr_str("post_transform"), scores)
    return [builders.convert(scores, DataType.FLOAT)]


@lowering("TreeEnsemble", since=5, domain=ml.ML)
def lower_tree_ensemble(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers TreeEnsemble-5 (leaves apart from nodes, set membership) like the regressor.

    Spec: ai.onnx.ml TreeEnsemble-5.
    Shapes: X [N, F] or [F]; Y [N, n_targets] in X's dtype.
    Dtypes: X float32, float64 (float16 is computed in float32).
    Raises:
        UnsupportedAttributeError: an unknown mode, aggregate_function or post_transform.
    """
    n_targets = node.attr_int("n_targets")
    forest = _forest_from_tree_ensemble(ctx, node, n_targets)
    source = ctx.input_dtype(0)
    if source not in (DataType.FLOAT, DataType.DOUBLE, DataType.FLOAT16):
        raise ctx.unsupported_dtype(source, "float32, float64, float16")
    x = ml.as_matrix(ctx, builders.convert(ctx.input(0), DataType.DOUBLE if source == DataType.DOUBLE else DataType.FLOAT))
    dtype = builders.dtype_of(x)
    aggregate = node.attr_int("aggregate_function")
    post = node.attr_int("post_transform")
    if not 0 <= aggregate < len(_AGGREGATES):
        raise ctx.unsupported_attribute("aggregate_function", aggregate, "0 (AVERAGE), 1 (SUM), 2 (MIN), 3 (MAX)")
    if not 0 <= post < len(ml.POST_TRANSFORMS):
        raise ctx.unsupported_attribute("post_transform", post, "0 to 4")
    scores = _aggregate(ctx, forest, _walk(ctx, forest, x), _AGGREGATES[aggregate], dtype)
    scores = ml.post_transform(ctx, ml.POST_TRANSFORMS[post], scores)
    return [builders.convert(scores, source)]


@lowering("TreeEnsembleClassifier", since=1, domain=ml.ML)
@lowering("TreeEnsembleClassifier", since=3, domain=ml.ML)  # 3 added the *_as_tensor (float64) attributes
@lowering("TreeEnsembleClassifier", since=5, domain=ml.ML)  # 5 deprecated the op for TreeEnsemble (same semantics)
def lower_tree_ensemble_classifier(ctx: LoweringContext, node: OnnxNode) -> list[ir.Value]:
    """Lowers TreeEnsembleClassifier: the regressor's walk and sum, then labels and scores.

    With two labels and weights for one class only (gradient boosting's binary case) the score
    ``s`` of that class becomes two columns as onnxruntime writes them: ``[1 - s, s]`` for NONE
    with weights all >= 0 and for PROBIT, else ``[-s, s]``, before the post_transform; the label is the positive one when
    ``s`` passes 0.5 (all weights >= 0) or 0 (some weights negative).

    Spec: ai.onnx.ml TreeEnsembleClassifier-1, 3, 5.
    Shapes: X [N, F] or [F]; Y [N] int64; Z [N, C] float32.
    Dtypes: X float32, float64, int64, int32 (compared as in the regressor).
    Deviations: with two labels and weights for both classes, onnxruntime's label is a literal
        1 where class 1's score is > 0, else 0 (the labels and class 0's score do not count);
        ours is the label of the larger score, as the spec says (and onnx.reference does).
    Raises:
        UnsupportedDtypeError: string class labels the loader did not intern.
        UnsupportedAttributeError: an unknown mode or post_transform.
    """
    labels = ml.labels(ctx, node, "classlabels_int64s", "classlabels_strings")
    if labels is None or not len(labels):
        raise ctx.error("classlabels_int64s is required", UnsupportedAttributeError)
    n_classes = len(labels)
    forest = _forest_from_node_lists(ctx, node, "class", n_classes)
    double = node.attr("nodes_values_as_tensor") is not None
    x = _tree_input(ctx, double)
    dtype = builders.dtype_of(x)
    scores = _aggregate(ctx, forest, _walk(ctx, forest, x), "SUM", dtype)
    base = _base_values(node)
    post = node.attr_str("post_transform")
    used = sorted(set(node.attr_ints("class_ids") or []))
    if n_classes == 2 and len(used) == 1:
        column = builders.slice_axis(scores, 1, used[0], used[0] + 1)
        if base is not None and len(base):
            column = stablehlo.add(column, builders.splat(float(base[used[0]] if len(base) > used[0] else base[0]), dtype, builders.dims_of(column)))
        weights = np.asarray(_tensor_or_list(node, "class_weights", np.float32))
        all_positive = bool((weights >= 0).all())
        threshold = 0.5 if all_positive else 0.0
        if (post == "NONE" and all_positive) or post == "PROBIT":
            other = stablehlo.subtract(builders.full_like(column, 1.0), column)
        else:
            other = stablehlo.negate(column)
        scores = stablehlo.concatenate([other, column], ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1))
        flat = builders.reshape(column, builders.dims_of(column)[:1])
        positive = builders.compare(flat, builders.full_like(flat, threshold), "GT")
        shape = builders.dims_of(flat)
        label = stablehlo.select(
            positive, builders.splat(int(labels[1]), DataType.INT64, shape), builders.splat(int(labels[0]), DataType.INT64, shape)
        )
        scores = ml.post_transform(ctx, post, scores)
        return [label, builders.convert(scores, DataType.FLOAT)]
    if base is not None and len(base):
        scores = ml.add_row(scores, np.resize(base, n_classes))
    label = ml.take_labels(labels, ml.argmax_rows(scores))
    scores = ml.post_transform(ctx, post, scores)
    return [label, builders.convert(scores, DataType.FLOAT)]
