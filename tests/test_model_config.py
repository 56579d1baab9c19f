"""A model's layer GEMMs from its config.json (gemmprof.catalog.model_config): the shapes of the example configs,
head_dim and kv heads taken by default, and each class of bad config and token list refused with one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gemmprof.catalog.model_config import (
    DEFAULT_TOKENS,
    LAYERS,
    MAX_TOKENS,
    NEEDED,
    config_from_dict,
    load_model_config,
    model_shapes,
    parse_tokens,
)
from gemmprof.errors import InputError
from gemmprof.results.shape import MAX_DIMENSION, GemmShape

MODELS = Path(__file__).resolve().parents[1] / "examples" / "models"
LLAMA3_8B = {"hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8,
             "head_dim": 128, "vocab_size": 128256}


def test_llama3_8b_gives_the_five_gemms_at_each_token_count():
    config = load_model_config(MODELS / "llama3_8b.json")
    assert config.name == "llama3_8b" and config.notes == ()
    found = model_shapes(config, (1, 16))
    assert [(x.layer, x.tokens, x.shape) for x in found] == [
        ("qkv_proj", 1, GemmShape(1, (32 + 2 * 8) * 128, 4096)),  # q, k and v fused: 6144
        ("o_proj", 1, GemmShape(1, 4096, 32 * 128)),
        ("gate_up_proj", 1, GemmShape(1, 2 * 14336, 4096)),  # gate and up fused: 28672
        ("down_proj", 1, GemmShape(1, 4096, 14336)),
        ("lm_head", 1, GemmShape(1, 128256, 4096)),
        *[(layer, 16, GemmShape(16, s.N, s.K)) for layer, s in
          zip(LAYERS, [x.shape for x in model_shapes(config, (1,))], strict=True)]]


@pytest.mark.parametrize("name,dims", [
    ("llama3_8b", (4096, 14336, 32, 8, 128, 128256)), ("llama3_70b", (8192, 28672, 64, 8, 128, 128256)),
    ("qwen2_5_7b", (3584, 18944, 28, 4, 128, 152064)), ("mistral_7b", (4096, 14336, 32, 8, 128, 32000))])
def test_every_example_config_holds_the_public_dimensions(name, dims):
    c = load_model_config(MODELS / f"{name}.json")
    assert (c.hidden_size, c.intermediate_size, c.heads, c.kv_heads, c.head_dim, c.vocab_size) == dims
    assert f"{name}.json" in (MODELS / "README.md").read_text()


def test_defaults_are_said_and_a_real_config_json_is_read_from_its_folder_or_its_text_config(tmp_path):
    # Qwen2.5-7B's config.json has no head_dim: 3584 / 28 = 128
    qwen = load_model_config(MODELS / "qwen2_5_7b.json")
    assert qwen.head_dim == 128 and any("head_dim not given" in n for n in qwen.notes)
    mha = config_from_dict({k: v for k, v in LLAMA3_8B.items() if k != "num_key_value_heads"}, "x")
    assert mha.kv_heads == 32 and mha.layer_dims()[0] == ("qkv_proj", 3 * 4096, 4096)
    # head_dim given and not hidden / heads (as Gemma's): the attention GEMMs follow head_dim
    gemma_like = config_from_dict({**LLAMA3_8B, "hidden_size": 3072, "num_attention_heads": 16,
                                   "num_key_value_heads": 16, "head_dim": 256}, "x")
    assert dict((n, (nn, k)) for n, nn, k in gemma_like.layer_dims())["o_proj"] == (3072, 16 * 256)
    folder = tmp_path / "Some-Model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"architectures": ["X"], "rope_theta": 5e5,
                                                    "text_config": LLAMA3_8B}))
    c = load_model_config(folder)
    assert c.name == "Some-Model" and c.vocab_size == 128256


def test_layers_that_share_a_shape_share_one_run():
    # intermediate == hidden: down_proj is o_proj's shape
    c = config_from_dict({**LLAMA3_8B, "intermediate_size": 4096}, "x")
    found = model_shapes(c, (8,))
    assert [x.layer for x in found] == ["qkv_proj", "o_proj/down_proj", "gate_up_proj", "lm_head"]


def _bad_configs():
    """Every class of bad config: each needed key left out, and each dimension non-positive, not a whole number,
    text, a bool, or beyond a GEMM dimension; heads that do not group; head_dim that cannot be derived."""
    for key in NEEDED:
        yield {k: v for k, v in LLAMA3_8B.items() if k != key}, f"no {key}"
    for key in (*NEEDED, "num_key_value_heads", "head_dim"):
        for value, why in ((0, "out of range"), (-8, "out of range"), (4096.5, "not a whole number"),
                           (4096.0, "not a whole number"), ("4096", "not a whole number"), (True, "not a whole number"),
                           (MAX_DIMENSION + 1, "out of range")):
            yield {**LLAMA3_8B, key: value}, f"{key}: .*{why}"
    yield {**LLAMA3_8B, "num_key_value_heads": 5}, "num_key_value_heads 5 does not divide num_attention_heads 32"
    yield {**LLAMA3_8B, "num_key_value_heads": 64}, "num_key_value_heads 64 does not divide"
    no_head_dim = {k: v for k, v in LLAMA3_8B.items() if k != "head_dim"}
    yield {**no_head_dim, "num_attention_heads": 24, "num_key_value_heads": 8}, "not a multiple of num_attention_heads"
    yield {**LLAMA3_8B, "vocab_size": MAX_DIMENSION, "hidden_size": 8}, None  # fine: every GEMM within the limit
    yield {**LLAMA3_8B, "intermediate_size": MAX_DIMENSION}, "gate_up_proj GEMM would be"
    yield [1, 2], "expected a JSON object"


def test_each_class_of_bad_config_is_one_line():
    cases = list(_bad_configs())
    assert sum(1 for doc, _ in cases if isinstance(doc, dict) and set(NEEDED) - set(doc)) == len(NEEDED)
    for doc, match in cases:
        if match is None:
            config_from_dict(doc, "cfg.json")
            continue
        with pytest.raises(InputError, match=match) as err:
            config_from_dict(doc, "cfg.json")
        assert str(err.value).startswith("cfg.json") and "\n" not in str(err.value)


def test_unreadable_and_malformed_files_name_the_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"hidden_size": 4096,')
    for path, match in ((tmp_path / "none.json", "does not exist"), (bad, "not JSON .line 1"),
                        (tmp_path, "a directory without a config.json")):
        with pytest.raises(InputError, match=match):
            load_model_config(path)


def _bad_token_lists():
    """Each class of bad token list: a word, nothing, zero, negative, beyond MAX_TOKENS, a fraction, digits
    that are not ASCII, a number too long to be one."""
    yield "1,x", "'x' is not a whole number"
    yield "", "no token counts given"
    yield " , ", "no token counts given"
    yield "0", "0 tokens: expected 1 to"
    yield "16,-4", "-4 tokens: expected 1 to"
    yield str(MAX_TOKENS + 1), f"{MAX_TOKENS + 1} tokens"
    yield "1.5", "'1.5' is not a whole number"
    yield "\uff11\uff16", "is not a whole number"  # fullwidth 16
    yield "9" * 400, "tokens: expected 1 to"


def test_each_class_of_bad_token_list_is_one_line():
    cases = list(_bad_token_lists())
    assert len(cases) >= 8
    for text, match in cases:
        with pytest.raises(InputError, match=match) as err:
            parse_tokens(text)
        assert str(err.value).startswith("--tokens: ")
    assert parse_tokens("1, 16 128,16") == (1, 16, 128) and parse_tokens(str(MAX_TOKENS)) == (MAX_TOKENS,)
    assert parse_tokens(",".join(map(str, DEFAULT_TOKENS))) == DEFAULT_TOKENS
