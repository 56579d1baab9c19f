"""A transformer's layer GEMMs from its Hugging Face-style config.json: the shapes `gemmprof sweep --model` runs.

A decoder layer's linear layers at T tokens are GEMMs of M = T rows (the tokens), N = the layer's output features
and K = its input features (y = x @ W, W of K x N):

    qkv_proj      N = (heads + 2 * kv_heads) * head_dim   K = hidden_size        q, k and v fused, as served
    o_proj        N = hidden_size                         K = heads * head_dim
    gate_up_proj  N = 2 * intermediate_size               K = hidden_size        gate and up fused, as served
    down_proj     N = hidden_size                         K = intermediate_size
    lm_head       N = vocab_size                          K = hidden_size        once per forward, not per layer

Serving stacks (vLLM's QKVParallelLinear and MergedColumnParallelLinear, TensorRT-LLM) run q, k, v as one GEMM and
gate, up as one: those are the shapes here. `head_dim` may be given (Gemma's is not hidden_size / heads); without
it, hidden_size must divide by num_attention_heads. `num_key_value_heads` left out means multi-head attention (as
in transformers: as many as the query heads). The other keys of a config.json (rope, norms, dtypes) change no
GEMM shape and are not read; a config that nests its text model under `text_config` is read from there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from gemmprof.errors import InputError
from gemmprof.results.shape import MAX_DIMENSION, GemmShape

NEEDED = ("hidden_size", "intermediate_size", "num_attention_heads", "vocab_size")
OPTIONAL = ("num_key_value_heads", "head_dim")
LAYERS = ("qkv_proj", "o_proj", "gate_up_proj", "down_proj", "lm_head")
DEFAULT_TOKENS = (1, 16, 128, 1024, 8192)
MAX_TOKENS = 1 << 20  # M of one GEMM: past a million rows a layer's A and C alone outgrow any GPU's memory


@dataclass(frozen=True)
class ModelConfig:
    name: str  # the file's stem (a config.json: its folder's name)
    hidden_size: int
    intermediate_size: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab_size: int
    notes: tuple[str, ...] = ()  # what was taken by default (kv heads, head_dim)

    def layer_dims(self) -> tuple[tuple[str, int, int], ...]:
        """(layer, N, K) of each GEMM of one layer and the LM head."""
        h, d = self.hidden_size, self.head_dim
        return (("qkv_proj", (self.heads + 2 * self.kv_heads) * d, h), ("o_proj", h, self.heads * d),
                ("gate_up_proj", 2 * self.intermediate_size, h), ("down_proj", h, self.intermediate_size),
                ("lm_head", self.vocab_size, h))


@dataclass(frozen=True)
class LayerShape:
    """One GEMM of the sweep: its shape and the layers (and token count) it stands for."""

    shape: GemmShape
    layer: str  # "qkv_proj", or "o_proj/down_proj" where two layers have one shape
    tokens: int


def _positive_int(value, key: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{where}: {key}: {str(value)[:40]!r} is not a whole number (expected a positive integer)")
    if not 1 <= value <= MAX_DIMENSION:
        raise InputError(f"{where}: {key}: {value} is out of range (expected 1 to {MAX_DIMENSION})")
    return value


def config_from_dict(doc, where: str, name: str = "") -> ModelConfig:
    """The dimensions of a config.json's text model, checked: each a positive integer, the heads consistent."""
    if not isinstance(doc, dict):
        raise InputError(f"{where}: expected a JSON object (a Hugging Face config.json), got {type(doc).__name__}")
    text = doc.get("text_config")
    if isinstance(text, dict) and not any(k in doc for k in NEEDED):
        doc, where = text, f"{where}: text_config"
    missing = [k for k in NEEDED if doc.get(k) is None]
    if missing:
        raise InputError(f"{where}: no {', '.join(missing)} (a model config needs {', '.join(NEEDED)}; "
                         f"{' and '.join(OPTIONAL)} are optional)")
    dims = {k: _positive_int(doc[k], k, where) for k in NEEDED}
    heads = dims["num_attention_heads"]
    notes = []
    if doc.get("num_key_value_heads") is None:
        kv = heads
        notes.append(f"num_key_value_heads not given: {heads}, one per query head (multi-head attention)")
    else:
        kv = _positive_int(doc["num_key_value_heads"], "num_key_value_heads", where)
    if kv > heads or heads % kv:
        raise InputError(f"{where}: num_key_value_heads {kv} does not divide num_attention_heads {heads} (each key "
                         "and value head serves a whole group of query heads)")
    hidden = dims["hidden_size"]
    if doc.get("head_dim") is None:
        if hidden % heads:
            raise InputError(f"{where}: hidden_size {hidden} is not a multiple of num_attention_heads {heads}: give "
                             "head_dim")
        head_dim = hidden // heads
        notes.append(f"head_dim not given: hidden_size / num_attention_heads = {head_dim}")
    else:
        head_dim = _positive_int(doc["head_dim"], "head_dim", where)
    config = ModelConfig(name or "model", hidden, dims["intermediate_size"], heads,
                         kv, head_dim, dims["vocab_size"], tuple(notes))
    for layer, n, k in config.layer_dims():
        if n > MAX_DIMENSION or k > MAX_DIMENSION:
            raise InputError(f"{where}: the {layer} GEMM would be {n} x {k}, beyond {MAX_DIMENSION}")
    return config


def load_model_config(path) -> ModelConfig:
    """--model FILE.json: a Hugging Face-style config.json (or one written by hand with the needed keys)."""
    p = Path(path)
    where = f"--model {path}"
    if p.is_dir():
        if not (p / "config.json").exists():
            raise InputError(f"{where}: a directory without a config.json (give the model's folder or its config)")
        p = p / "config.json"  # a model's folder, as transformers takes it
        where = f"--model {p}"
    from gemmprof.results.files import read_text

    try:  # a regular file (never a FIFO or a device), bounded
        text = read_text(p, "model config.json", limit=16 << 20, strict=True)
    except InputError as exc:
        raise InputError(f"--model {exc}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    return config_from_dict(doc, where, name=p.stem if p.name != "config.json" else p.parent.name)


def parse_tokens(text: str, where: str = "--tokens") -> tuple[int, ...]:
    """Token counts (M of each GEMM), comma- or space-separated positive integers, each at most MAX_TOKENS."""
    items = [t for t in str(text).replace(",", " ").split()]
    if not items:
        raise InputError(f"{where}: no token counts given (e.g. {','.join(map(str, DEFAULT_TOKENS))})")
    out: list[int] = []
    for item in items:
        if not item.isascii() or not item.lstrip("+-").isdigit():
            raise InputError(f"{where}: {item[:40]!r} is not a whole number of tokens")
        if len(item) > 12 or not 1 <= int(item) <= MAX_TOKENS:
            raise InputError(f"{where}: {item[:40]} tokens: expected 1 to {MAX_TOKENS}")
        if int(item) not in out:
            out.append(int(item))
    return tuple(out)


def model_shapes(config: ModelConfig, tokens) -> tuple[LayerShape, ...]:
    """Each layer's GEMM at each token count, by token count then layer; layers that share a shape share a run."""
    found: dict[GemmShape, LayerShape] = {}
    for t in tokens:
        for layer, n, k in config.layer_dims():
            shape = GemmShape(t, n, k)
            if shape in found:
                found[shape] = LayerShape(shape, f"{found[shape].layer}/{layer}", t)
            else:
                found[shape] = LayerShape(shape, layer, t)
    return tuple(found.values())
