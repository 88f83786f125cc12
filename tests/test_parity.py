"""Parity with transformers.GPT2LMHeadModel (eager attention) on the same weights, loaded from the
model.safetensors that transformers itself wrote."""

import dataclasses

import torch

from gpt2viz.model.modes import Mode, generate, prefill, run

TOL = dict(rtol=1e-4, atol=1e-4)


def test_loaded_config_is_the_checkpoints(hf_pair):
    hf, ours = hf_pair
    c = ours.config
    assert (c.n_layer, c.n_head, c.n_embd, c.n_positions, c.vocab_size) == (3, 4, 128, 256, 50257)


def test_logits_hidden_states_and_patterns(hf_pair, text_ids):
    hf, ours = hf_pair
    t = run(ours, text_ids, Mode.FULL)
    with torch.no_grad():
        ref = hf(torch.tensor([text_ids]), output_hidden_states=True, output_attentions=True)
    torch.testing.assert_close(t["logits"], ref.logits, **TOL)
    for i in range(3):
        torch.testing.assert_close(t.get("resid_pre", i), ref.hidden_states[i], **TOL)
        torch.testing.assert_close(t.get("attn.pattern", i), ref.attentions[i], **TOL)
    torch.testing.assert_close(t["ln_f.out"], ref.hidden_states[3], **TOL)  # HF's last entry is after ln_f


def test_kv_cache_matches_past_key_values(hf_pair, text_ids):
    hf, ours = hf_pair
    t = run(ours, text_ids, Mode.PREFILL)
    with torch.no_grad():
        ref = hf(torch.tensor([text_ids]), use_cache=True).past_key_values
    for i in range(3):
        layer = ref.layers[i]
        torch.testing.assert_close(t.get("attn.k_cache", i), layer.keys, **TOL)
        torch.testing.assert_close(t.get("attn.v_cache", i), layer.values, **TOL)


def test_training_loss_with_dropout_off(hf_pair, text_ids):
    hf, ours = hf_pair
    no_dropout = type(ours)(dataclasses.replace(ours.config, dropout=0.0))
    no_dropout.load_state_dict(ours.state_dict())
    t = run(no_dropout, text_ids, Mode.TRAINING, grads=False)
    ids = torch.tensor([text_ids])
    with torch.no_grad():
        ref = hf(ids, labels=ids)
    torch.testing.assert_close(t["loss"], ref.loss, **TOL)
    assert t["loss.per_token"].shape == (1, len(text_ids) - 1)


def test_greedy_generation_matches_generate(hf_pair, text_ids):
    hf, ours = hf_pair
    ids = torch.tensor([text_ids[:6]])
    with torch.no_grad():
        ref = hf.generate(ids, max_new_tokens=10, do_sample=False, attention_mask=torch.ones_like(ids),
                          pad_token_id=50256)
    gen = generate(ours, ids, 10, names=["logits"])
    ours_ids = gen.ids
    assert [t.P for t in gen.traces] == list(range(5, 15))  # the cache grows by one each step
    assert ours_ids == ref[0, 6:].tolist()


def test_decode_equals_full_last_position(hf_pair, text_ids):
    _, ours = hf_pair
    full = run(ours, text_ids, Mode.FULL)["logits"]
    decode = run(ours, text_ids, Mode.DECODE)["logits"]
    assert decode.shape == (1, 1, 50257)
    torch.testing.assert_close(decode[:, -1], full[:, -1], **TOL)


def test_prefill_then_decode_chain_equals_full(hf_pair, text_ids):
    """Prefill 5 tokens, then decode the rest one at a time: every step's logits are FULL's."""
    _, ours = hf_pair
    ids = torch.tensor([text_ids])
    full = run(ours, ids, Mode.FULL)["logits"]  # [1, T, V]
    pre = run(ours, ids[:, :5], Mode.PREFILL)
    torch.testing.assert_close(pre["logits"][:, -1], full[:, 4], **TOL)
    with torch.no_grad():
        _, past = prefill(ours, ids[:, :5])
        for p in range(5, ids.shape[1]):
            logits, past = ours(ids[:, p:p + 1], past=past, use_cache=True)
            torch.testing.assert_close(logits[:, 0], full[:, p], **TOL)
            assert past[0][0].shape[2] == p + 1  # the cache grew by one position
