"""The Parameter accounting page's custom size through Streamlit's AppTest: every field from the
URL, the same tables as a preset, and one clear message for a link that describes no GPT-2."""

from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[1] / "app.py")
SHAKESPEARE = {"params_size": "custom", "vocab_size": 65, "n_positions": 256, "n_embd": 384, "n_layer": 6,
               "n_head": 6, "bias": "false"}


def params_page(**params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    for key, value in {"model": "tiny", **params}.items():
        at.query_params[key] = str(value)
    at.run()
    at.switch_page("views/params.py")
    return at.run()


def subheaders(at) -> list[str]:
    return [s.value for s in at.subheader]


def test_a_custom_config_from_the_url_is_counted_like_a_preset():
    at = params_page(**SHAKESPEARE)
    assert not at.exception
    assert "custom: 10,745,088 parameters · no biases" in subheaders(at)
    assert "Shapes, memory and FLOPs per mode" in subheaders(at)
    text = " ".join(m.value for m in at.markdown)
    assert "nanoGPT's get_num_params()" in text and "10,646,784" in text  # the 10.65M nanoGPT prints
    rows = at.dataframe[1].value  # the accounting table
    assert "ln_1.bias" not in " ".join(rows["checkpoint tensors"])
    assert dict(at.query_params)["n_embd"] == "384"


def test_untied_and_a_custom_mlp_width():
    at = params_page(**(SHAKESPEARE | {"tied": "false", "n_inner": 1000, "bias": "true"}))
    assert not at.exception
    # 24,960 + 98,304 + 6 × (589,824 + 768,000 + 3,456 + 1,000) + 768 + lm_head 24,960 = 8,322,672
    assert "custom: 8,322,672 parameters · d_mlp=1,000 · untied head" in subheaders(at)


def test_d_not_divisible_by_heads_is_one_error_and_no_tables():
    at = params_page(**(SHAKESPEARE | {"n_embd": 385}))
    assert not at.exception
    message = "No GPT-2 has this shape: n_embd 385 is not divisible by n_head 6: each head gets d / nh dimensions."
    assert [e.value for e in at.error] == [message]
    assert "Shapes, memory and FLOPs per mode" not in subheaders(at)


def test_out_of_range_link_values_are_named_and_replaced():
    at = params_page(**(SHAKESPEARE | {"n_layer": 0, "n_head": "many", "vocab_size": 10**12}))
    assert not at.exception
    notes = " ".join(w.value for w in at.warning)
    assert "n_layer='0'" in notes and "showing n_layer=12" in notes
    assert "n_head='many'" in notes and "vocab_size='1000000000000'" in notes
    # GPT-2 small's 12 blocks, 12 heads and vocabulary stand in: 50,257·384 + 256·384 + 12·(12·384² + 2·384) + 384
    assert "custom: 40,640,256 parameters · no biases" in subheaders(at)


def test_shapes_and_costs_follow_the_link():
    at = params_page(**(SHAKESPEARE | {"params_mode": "decode", "params_tokens": 20}))
    assert not at.exception
    assert "B=1 T=1 P=19 L=20; block 0 shown, every block is the same." in [c.value for c in at.caption]
    costs_text = at.code[0].value
    # KV cache after the step, fp32: 2 · n_layer · B · nh · L · dh · 4 = 2 × 6 × 1 × 6 × 20 × 64 × 4
    assert "2 × 6 × 1 × 6 × 20 × 64 × 4 = 368,640 bytes" in costs_text
