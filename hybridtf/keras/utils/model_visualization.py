"""``keras.utils.plot_model`` and ``keras.utils.model_to_dot``: a model's layer graph drawn
with Graphviz.

As in Keras, drawing needs the optional packages ``pydot`` and Graphviz (the ``dot`` program);
without them both functions raise ImportError saying what to install.  The graph itself -- one
box per layer, an arrow per connection -- is written here as DOT text (``dot_source``), which
needs neither.
"""
import importlib
import os

from hybridtf.keras.models import Sequential

_PYDOT_MESSAGE = "You must install pydot (`pip install pydot`) for `{}` to work."
_GRAPHVIZ_MESSAGE = ("You must install graphviz (see instructions at "
                     "https://graphviz.gitlab.io/download/) for `{}` to work.")
_RANKDIRS = ("TB", "LR")


def _pydot(who):
    try:
        return importlib.import_module("pydot")
    except ImportError:
        raise ImportError(_PYDOT_MESSAGE.format(who)) from None


def _quote(text):
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _shape_text(shape):
    return "?" if shape is None else str(shape)


def _layer_label(layer, show_shapes, show_dtype, show_layer_names, show_layer_activations,
                 show_trainable):
    title = f"{layer.name} ({type(layer).__name__})" if show_layer_names \
        else type(layer).__name__
    lines = [title]
    activation = getattr(layer, "activation", None)
    if show_layer_activations and activation is not None:
        lines.append(f"activation: {getattr(activation, '__name__', activation)}")
    if show_dtype:
        lines.append(f"dtype: {layer.dtype}")
    if show_shapes:
        try:
            input_shape = layer.input_shape
        except AttributeError:
            input_shape = None
        try:
            output_shape = layer.output_shape
        except AttributeError:
            output_shape = None
        lines.append(f"input: {_shape_text(input_shape)} | output: "
                     f"{_shape_text(output_shape)}")
    if show_trainable:
        lines.append(f"trainable: {'Y' if layer.trainable else 'N'}")
    return "\\n".join(line.replace("\\", "\\\\").replace('"', '\\"') for line in lines)


def _edges(model):
    """(from layer, to layer) pairs of a Sequential or functional model; [] otherwise."""
    if isinstance(model, Sequential):
        layers = list(model._self_tracked_layers)
        return list(zip(layers[:-1], layers[1:]))
    if not model.__dict__.get("_is_graph_network"):
        return []
    edges = []
    for node in model._functional_nodes:
        for tensor in node.input_tensors:
            edges.append((tensor._keras_history[0], node.layer))
    return edges


def _layers(model):
    if isinstance(model, Sequential):
        return list(model._self_tracked_layers)
    if model.__dict__.get("_is_graph_network"):
        return list(model.layers)
    return [model]      # a subclassed model: its graph is its Python code


def dot_source(model, show_shapes=False, show_dtype=False, show_layer_names=True, rankdir="TB",
               dpi=200, show_layer_activations=False, show_trainable=False, splines="ortho"):
    """The DOT text of ``model``'s layer graph: one box per layer (an ``InputLayer`` first
    where the model has one), one arrow per connection."""
    if rankdir not in _RANKDIRS:
        raise ValueError(f"model_to_dot: rankdir must be 'TB' (vertical) or 'LR' (horizontal), "
                         f"got {rankdir!r}.")
    if not model.built:
        raise ValueError("This model has not yet been built. Build the model first by calling "
                         "`build()` or by calling the model on a batch of data.")
    lines = [f"digraph {_quote(model.name)} {{",
             f"  graph [rankdir={rankdir}, concentrate=true, dpi={int(dpi)}, "
             f"splines={splines}];",
             "  node [shape=box];"]
    ids = {}
    for layer in _layers(model):
        ids[id(layer)] = f"n{len(ids)}"
        label = _layer_label(layer, show_shapes, show_dtype, show_layer_names,
                             show_layer_activations, show_trainable)
        lines.append(f'  {ids[id(layer)]} [label="{label}"];')
    for source, target in _edges(model):
        if id(source) in ids and id(target) in ids:
            lines.append(f"  {ids[id(source)]} -> {ids[id(target)]};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def model_to_dot(model, show_shapes=False, show_dtype=False, show_layer_names=True,
                 rankdir="TB", expand_nested=False, dpi=200, subgraph=False,
                 show_layer_activations=False, show_trainable=False, splines="ortho",
                 **kwargs):
    """``model``'s layer graph as a ``pydot.Dot`` (needs the ``pydot`` package)."""
    pydot = _pydot("model_to_dot")
    source = dot_source(model, show_shapes, show_dtype, show_layer_names, rankdir, dpi,
                        show_layer_activations, show_trainable, splines)
    graphs = pydot.graph_from_dot_data(source)
    return graphs[0]


def plot_model(model, to_file="model.png", show_shapes=False, show_dtype=False,
               show_layer_names=False, rankdir="TB", expand_nested=False, dpi=200,
               show_layer_activations=False, show_trainable=False, splines="ortho", **kwargs):
    """Draws ``model``'s layer graph to ``to_file`` (its extension picks the format: png, svg,
    pdf, dot, ...) with ``pydot`` and Graphviz, which must be installed."""
    if kwargs.pop("layer_range", None) is not None:
        raise ValueError("Argument `layer_range` is no longer supported.")
    if kwargs:
        raise TypeError(f"plot_model: unexpected keyword arguments {sorted(kwargs)}.")
    pydot = _pydot("plot_model")
    dot = model_to_dot(model, show_shapes=show_shapes, show_dtype=show_dtype,
                       show_layer_names=show_layer_names, rankdir=rankdir, dpi=dpi,
                       show_layer_activations=show_layer_activations,
                       show_trainable=show_trainable, splines=splines)
    to_file = os.fspath(to_file)
    extension = os.path.splitext(to_file)[1][1:].lower() or "png"
    if extension != "dot":
        _check_graphviz(pydot)
    dot.write(to_file, format="raw" if extension == "dot" else extension)
    return to_file


def _check_graphviz(pydot):
    """Raises ImportError when Graphviz's ``dot`` program cannot be run."""
    try:
        pydot.Dot.create(pydot.Dot())
    except OSError as err:
        raise ImportError(_GRAPHVIZ_MESSAGE.format("plot_model") + f" ({err})") from None
