"""A nanoGPT checkpoint, converted and opened: built here with nanoGPT's parameter names and saved as
its train.py saves one, then compared tensor by tensor with this module's own forward pass
(nanoGPT's equations: pre-LN blocks, LayerNorm without bias, causal attention, exact GELU, tied
head), in every mode. Nothing is trained and nothing is faked: the weights are random, the
comparison is of two independent implementations."""

import json
import pickle
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F
from nanogpt_ref import ARGS, TEXT, NanoGPT, save_like_train_py, save_meta, vocab
from torch import nn

import gpt2viz
from gpt2viz.cli import main
from gpt2viz.model.convert import ConvertError, convert_nanogpt, read_plain_pickle
from gpt2viz.model.folder import load_weights
from gpt2viz.model.tokenizer import TextError
from gpt2viz.model.weights import WeightsError


@pytest.fixture(scope="module")
def nano():
    torch.manual_seed(0)
    return NanoGPT(ARGS, mask_buffer=True).eval()


@pytest.fixture(scope="module", params=[False, True], ids=["plain", "compiled"])
def converted(request, nano, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nano")
    save_like_train_py(nano, tmp / "ckpt.pt", compiled=request.param)
    save_meta(tmp / "meta.pkl")
    assert main(["convert", "nanogpt", str(tmp / "ckpt.pt"), "--meta", str(tmp / "meta.pkl"),
                 "--out", str(tmp / "out")]) == 0
    return tmp / "out"


# ---------------------------------------------------------------------------- the folder
def test_the_folder_is_hugging_face_s_layout(converted, nano):
    from safetensors import safe_open
    from tokenizers import Tokenizer

    cfg = json.loads((converted / "config.json").read_text())
    assert {k: cfg[k] for k in ("n_layer", "n_head", "n_embd", "n_positions", "vocab_size", "activation_function",
                                "tie_word_embeddings", "bias")} == \
        {"n_layer": 2, "n_head": 4, "n_embd": 64, "n_positions": 128, "vocab_size": 65,
         "activation_function": "gelu", "tie_word_embeddings": True, "bias": False}
    with safe_open(str(converted / "model.safetensors"), "pt") as f:
        keys, meta = set(f.keys()), f.metadata()
        # nanoGPT's Linear [out, in] is Conv1D's [in, out]
        assert torch.equal(f.get_tensor("h.1.mlp.c_fc.weight"), nano.transformer.h[1].mlp.c_fc.weight.detach().t())
    assert "lm_head.weight" not in keys and not any(k.endswith("bias") for k in keys)  # tied; no biases, no mask
    assert meta["step"] == "5000" and "ckpt.pt" in meta["source"] and meta["best_val_loss"] == "1.4697"
    # safetensors writes 0600; the folder's files share one mode, so a server's user reads them all
    assert (converted / "model.safetensors").stat().st_mode == (converted / "config.json").stat().st_mode
    tok = Tokenizer.from_file(str(converted / "tokenizer.json"))
    assert tok.encode(TEXT).ids == [vocab()[c] for c in TEXT]
    assert tok.decode(tok.encode(TEXT).ids) == TEXT


def test_tokens_are_the_text_s_characters_and_logits_match(converted, nano):
    model = gpt2viz.load(str(converted))
    run = model.run(TEXT)
    assert run.tokens == tuple(TEXT) and run.tokens == list(TEXT)  # space and newline as themselves
    assert run.trace.tokens[5] == "␣" and run.trace.tokens[14] == "↵"  # the pages' readable forms
    ids = torch.tensor([[vocab()[c] for c in TEXT]])
    with torch.no_grad():
        want = nano(ids)["logits"]
    assert (run["logits"] - want).abs().max() < 1e-4
    assert model.config.vocab_size == 65 and not model.config.bias and model.config.exact_gelu


def _reference_for(name, ref, P):
    """The reference tensor a recorded name corresponds to, cut to the positions the mode recorded."""
    if name.endswith(("attn.k_cache", "attn.v_cache")):
        return ref[name.replace("_cache", "")]
    return ref[name]


def _positions_axis(name, t):
    if name == "embed.pos":
        return 0
    return 2 if t.dim() == 4 else 1


SKIP = ("mean", "var", "normalized")  # LayerNorm's own parts: nanoGPT's F.layer_norm does not expose them


@pytest.mark.parametrize("mode", ["full", "prefill", "decode", "training"])
def test_every_recorded_tensor_matches_nanogpt_s_forward(converted, nano, mode):
    ids = [vocab()[c] for c in TEXT]
    run = gpt2viz.load(str(converted)).run(TEXT, mode=mode)  # trained with dropout 0: training drops nothing
    x = torch.tensor([ids])
    if mode == "training":
        for p in nano.parameters():
            p.grad = None
        ref = nano(x)
        loss = F.cross_entropy(ref["logits"][0, :-1], x[0, 1:])
        loss.backward()
    else:
        with torch.no_grad():
            ref = nano(x)
    compared = 0
    for name in run.names:
        if name.rsplit(".", 1)[-1] in SKIP:
            continue
        got = run[name]
        if name == "loss":
            want = loss
        elif name == "loss.per_token":
            want = F.cross_entropy(ref["logits"][0, :-1], x[0, 1:], reduction="none")[None]
        elif name.startswith("grad.blocks."):
            want = ref[name.removeprefix("grad.")].grad
        elif name.startswith("grad."):
            theirs = dict(nano.named_parameters())
            key = "transformer." + name.removeprefix("grad.")
            want = theirs[key].grad
            if key.endswith(("c_attn.weight", "c_proj.weight", "c_fc.weight")):
                want = want.t()
        else:
            want = _reference_for(name, ref, run.trace.P)
            if "cache" not in name and got.shape != want.shape:  # prefill's logits, decode's last position
                axis = _positions_axis(name, want)
                want = want.narrow(axis, want.shape[axis] - got.shape[axis], got.shape[axis])
        assert got.shape == want.shape, name
        assert (got - want.detach()).abs().max() < 1e-4, name
        compared += 1
    assert compared >= (len(run.names) - 3 * (2 * ARGS["n_layer"] + 1)), compared
    if mode == "training":
        assert any(n.startswith("grad.h.") for n in run.names)


# ---------------------------------------------------------------------------- refusals
def test_a_hostile_meta_pkl_is_refused_without_running(tmp_path, nano):
    marker = tmp_path / "ran"

    class Hostile:
        def __reduce__(self):
            import os
            return os.system, (f"touch {marker}",)

    with open(tmp_path / "meta.pkl", "wb") as f:
        pickle.dump({"vocab_size": 65, "itos": Hostile()}, f)
    save_like_train_py(nano, tmp_path / "ckpt.pt")
    with pytest.raises(ConvertError, match="refused without running it: it holds a STACK_GLOBAL opcode"):
        convert_nanogpt(tmp_path / "ckpt.pt", tmp_path / "out", tmp_path / "meta.pkl")
    # the command line says it in one line and exits 2
    r = subprocess.run([sys.executable, "-m", "gpt2viz", "convert", "nanogpt", str(tmp_path / "ckpt.pt"),
                        "--meta", str(tmp_path / "meta.pkl"), "--out", str(tmp_path / "out")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "STACK_GLOBAL" in r.stderr
    assert not marker.exists() and not (tmp_path / "out").exists()


@pytest.mark.parametrize("payload, found", [
    ((1.5, "x"), "BINFLOAT"),  # a tuple holding a float: not a vocabulary's plain data
    (b"not a pickle at all", "not a pickle"),
])
def test_a_meta_pkl_of_other_data_is_refused(tmp_path, payload, found):
    path = tmp_path / "meta.pkl"
    path.write_bytes(payload if isinstance(payload, bytes) else pickle.dumps(payload))
    with pytest.raises(ConvertError, match=found):
        read_plain_pickle(path)


def test_not_a_nanogpt_checkpoint_says_what_was_found(tmp_path, nano):
    torch.save({"state_dict": {"w": torch.zeros(2)}, "epoch": 3}, tmp_path / "a.pt")
    with pytest.raises(ConvertError, match=r"found a dict with keys \['epoch', 'state_dict'\]"):
        convert_nanogpt(tmp_path / "a.pt", tmp_path / "out")
    torch.save(nano.state_dict(), tmp_path / "b.pt")
    with pytest.raises(ConvertError, match="found a state dict of .* tensors without model_args"):
        convert_nanogpt(tmp_path / "b.pt", tmp_path / "out")


def test_without_meta_a_char_model_is_refused_and_gpt2_bpe_is_kept(tmp_path, nano):
    save_like_train_py(nano, tmp_path / "ckpt.pt")
    with pytest.raises(ConvertError, match="65 token rows, fewer than the 50,257 ids.*--meta"):
        convert_nanogpt(tmp_path / "ckpt.pt", tmp_path / "out")


def test_a_gpt2_bpe_nanogpt_model_keeps_gpt2_s_tokenizer(tmp_path):
    """nanoGPT pads GPT-2's 50,257 ids to 50,304 rows; without meta.pkl the folder reads GPT-2's BPE."""
    args = {**ARGS, "vocab_size": 50304, "n_layer": 1, "n_embd": 32, "n_head": 2, "bias": True}
    torch.manual_seed(1)
    nano = NanoGPT(args).eval()
    state = nano.state_dict()
    torch.save({"model": state, "model_args": args, "iter_num": 7, "best_val_loss": torch.tensor(3.0),
                "config": {}, "optimizer": {}}, tmp_path / "ckpt.pt")
    convert_nanogpt(tmp_path / "ckpt.pt", tmp_path / "out")
    assert not (tmp_path / "out" / "tokenizer.json").exists()
    model = gpt2viz.load(str(tmp_path / "out"))
    run = model.run(" hello world")
    assert run.tokens == (" hello", " world") and model.config.vocab_size == 50304 and model.config.bias
    from gpt2viz.model.tokenizer import readable_tokens

    labels = readable_tokens(range(50255, 50304), model.vocabulary)  # the 47 padding rows are never a token
    assert labels[:3] == ["␣gazed", "<|endoftext|>", "<unused 50257>"] and labels[-1] == "<unused 50303>"
    assert model.vocabulary.decode([50300, 31373]) == "hello"
    with torch.no_grad():
        want = nano(torch.tensor([list(run.trace.token_ids)]))["logits"]
    assert (run["logits"] - want).abs().max() < 1e-4


def test_untied_head_and_biases_convert(tmp_path):
    args = {**ARGS, "bias": True}
    torch.manual_seed(2)
    nano = NanoGPT(args).eval()
    nano.lm_head.weight = nn.Parameter(torch.randn(65, 64) * 0.2)  # untied: a matrix of its own
    save_like_train_py(nano, tmp_path / "ckpt.pt")
    torch.save({**torch.load(tmp_path / "ckpt.pt", weights_only=True), "model_args": args}, tmp_path / "ckpt.pt")
    save_meta(tmp_path / "meta.pkl")
    convert_nanogpt(tmp_path / "ckpt.pt", tmp_path / "out", tmp_path / "meta.pkl")
    assert json.loads((tmp_path / "out" / "config.json").read_text())["tie_word_embeddings"] is False
    model = gpt2viz.load(str(tmp_path / "out"))
    assert not model.config.tied and model.config.bias
    with torch.no_grad():
        want = nano(torch.tensor([[vocab()[c] for c in TEXT]]))["logits"]
    assert (model.run(TEXT)["logits"] - want).abs().max() < 1e-4


def test_a_symbol_outside_the_vocabulary_is_named(converted):
    with pytest.raises(TextError, match=r"'é' \(U\+00E9\) is not in this model's vocabulary of 65 symbols"):
        gpt2viz.load(str(converted)).run("café")


def test_a_vocabulary_larger_than_the_model_is_refused(converted, tmp_path):
    import shutil

    folder = tmp_path / "small"
    shutil.copytree(converted, folder)
    (folder / "tokenizer.json").unlink()  # GPT-2's 50,257 ids for a model of 65 rows
    with pytest.raises(WeightsError, match="65 token rows but its vocabulary .* has ids up to 50,256"):
        load_weights(folder)


def test_another_tokenizer_kind_is_refused_in_one_line(converted, tmp_path):
    import shutil

    from gpt2viz.model.vocab import VocabularyError

    folder = tmp_path / "wp"
    shutil.copytree(converted, folder)
    d = json.loads((folder / "tokenizer.json").read_text())
    d["model"]["type"] = "WordPiece"
    (folder / "tokenizer.json").write_text(json.dumps(d))
    with pytest.raises(VocabularyError, match="holds a WordPiece tokenizer") as e:
        load_weights(folder)
    assert "\n" not in str(e.value)


def test_a_pt_given_as_weights_names_the_converter(tmp_path, capsys):
    (tmp_path / "ckpt.pt").write_bytes(b"\x80\x02junk")
    assert main(["trace", "--text", "hi", "--weights", str(tmp_path / "ckpt.pt")]) == 2
    err = capsys.readouterr().err
    assert "python -m gpt2viz convert nanogpt" in err and len(err.strip().splitlines()) == 1


# ---------------------------------------------------------------------------- the CLI and the accounting
def test_cli_commands_read_the_folder_s_vocabulary(converted, capsys):
    assert main(["trace", "--weights", str(converted), "--text", "To be", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["token_ids"] == [vocab()[c] for c in "To be"] and out["tensors"]["logits"] == [1, 5, 65]
    assert main(["heads", "--weights", str(converted), "--text", "abcabcabc"]) == 0
    assert "induction" in capsys.readouterr().out
    assert main(["trace", "--weights", str(converted), "--text", "naïve"]) == 2
    assert "'ï'" in capsys.readouterr().err


def test_the_shakespeare_config_counts_10_745_088():
    from gpt2viz.spec.config import custom_config

    cfg = custom_config(vocab_size=65, n_positions=256, n_embd=384, n_layer=6, n_head=6, bias=False)
    total = gpt2viz.parameters(cfg).total
    assert total == 10_745_088
    assert total - 256 * 384 == 10_646_784  # nanoGPT's "10.65M" leaves the position table out


def test_a_hugging_face_folder_opens_with_gpt2_s_bpe(hf_dir):
    hf, path = hf_dir
    model = gpt2viz.load(str(path))
    run = model.run(" the cat")
    assert run.tokens == (" the", " cat")
    with torch.no_grad():
        want = hf(torch.tensor([list(run.trace.token_ids)])).logits
    assert (run["logits"] - want).abs().max() < 1e-4


def test_params_counts_the_folder_from_its_header(converted, capsys):
    """The checkpoint's tensors, counted from the header alone, reconcile with the converted config."""
    assert main(["params", "--checkpoint", str(converted), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    d, V, n = 64, 65, 128
    per_block = 2 * d + (d * 3 * d + d * d) + 2 * d * 4 * d  # two gains, attention, MLP: no biases
    want = V * d + n * d + 2 * per_block + d
    assert r["total"] == r["checkpoint"]["total"] == want and r["checkpoint"]["matches"]
    assert r["checkpoint"]["compared_with"] == "the folder's config.json" and r["config"]["bias"] is False


@pytest.mark.parametrize("kind", ["gpt2viz", "transformers"])
@pytest.mark.parametrize("mode", ["full", "decode"])
def test_code_panel_snippets_run_on_the_folder(converted, kind, mode):
    """The snippets tokenize with the folder's vocabulary, and transformers runs its exact GELU."""
    from gpt2viz.teaching.snippets import View, snippet

    text = "ROMEO:\nBut soft"
    model = gpt2viz.load(str(converted))
    v = View(text, str(converted), mode, 1, 2, config=model.config, ids=tuple(model.vocabulary.encode(text)),
             folder=True)
    namespace = {}
    exec(compile(snippet("mlp", v, kind), f"<mlp {kind}>", "exec"), namespace)
    want = model.run(text, mode=mode).trace.get("mlp.post", 1)[0]
    torch.testing.assert_close(namespace["result"], want, rtol=0, atol=1e-4)


def test_a_bias_free_exact_gelu_file_reads_back_alone(tmp_path):
    """A single model.safetensors without biases is a bias-free model, and save_safetensors records the
    activation, so the file alone (no config.json) reads back exactly."""
    from dataclasses import replace

    from gpt2viz.model.weights import load_safetensors, random_model, save_safetensors
    from gpt2viz.spec.config import get_config

    cfg = replace(get_config("tiny"), bias=False, activation="gelu", name="nano")
    model = random_model(cfg, 3)
    save_safetensors(model, tmp_path / "model.safetensors")
    back = load_safetensors(tmp_path / "model.safetensors").model
    assert not back.config.bias and back.config.exact_gelu
    assert all(torch.equal(a, b) for a, b in zip(back.state_dict().values(), model.state_dict().values(), strict=True))
    ids = torch.tensor([[1, 2, 3, 4]])
    with torch.no_grad():
        theirs, ours = back(ids)[0], model(ids)[0]
    # What makes the file alone the same model, its config and its weights, is compared exactly above. The
    # outputs are two code paths all the same: the loaded weights are views at the file's offsets (48 bytes
    # past a 64-byte boundary here), the random ones where torch's allocator puts them, and MKL's matrix
    # products may round otherwise on another alignment. So they agree within float32's rounding: a
    # product of K terms errs by about eps·√K of the logits' scale (K = d_mlp, the longest reduction),
    # compounded over the two blocks' dozen products in a row.
    eps, K = torch.finfo(torch.float32).eps, cfg.d_mlp
    tolerance = 16 * eps * K ** 0.5 * float(ours.abs().max())
    assert float((theirs - ours).abs().max()) <= tolerance


def test_a_byte_level_bpe_tokenizer_json_is_read_as_tokenizers_reads_it(hf_dir, tmp_path):
    """A Hugging Face folder with GPT-2's tokenizer.json (written here by the tokenizers package, the
    oracle) tokenizes as tokenizers does, on tiktoken."""
    import shutil

    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    from gpt2viz.model.tokenizer import GPT2_VOCABULARY, data_dir

    hf, path = hf_dir
    folder = tmp_path / "hf"
    shutil.copytree(path, folder)
    tok = Tokenizer(models.BPE.from_file(str(data_dir() / "encoder.json"), str(data_dir() / "vocab.bpe")))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken("<|endoftext|>", special=True)])
    tok.save(str(folder / "tokenizer.json"))
    model = gpt2viz.load(str(folder))
    assert model.vocabulary.kind == "bpe"
    text = "Héllo world, it's   spaced\n\nout 🙂<|endoftext|> 12345"
    ids = model.vocabulary.encode(text)
    assert ids == tok.encode(text).ids == GPT2_VOCABULARY.encode(text)
    assert model.vocabulary.decode(ids) == text
    run = model.run(" the cat sat")
    assert run.tokens == (" the", " cat", " sat")


def test_a_hostile_ckpt_pt_is_refused_by_weights_only(tmp_path):
    marker = tmp_path / "ran"

    class Hostile:
        def __reduce__(self):
            import os
            return os.system, (f"touch {marker}",)

    torch.save({"model": Hostile(), "model_args": dict(ARGS)}, tmp_path / "ckpt.pt")
    with pytest.raises(ConvertError, match=r"torch.load\(weights_only=True\) could not read it") as e:
        convert_nanogpt(tmp_path / "ckpt.pt", tmp_path / "out")
    assert "\n" not in str(e.value) and not marker.exists()


def test_the_current_vocabulary_is_a_thread_s_own(converted):
    """The app sets the vocabulary per script run (one thread each); the CLI per command: neither leaks."""
    import threading

    from gpt2viz.model import tokenizer

    vocabulary = gpt2viz.load(str(converted)).vocabulary
    seen = {}

    def session():
        tokenizer.use(vocabulary)
        seen["set"] = tokenizer.encode("hi")
        other = threading.Thread(target=lambda: seen.update(other=tokenizer.encode("hi")))
        other.start()
        other.join()

    thread = threading.Thread(target=session)
    thread.start()
    thread.join()
    assert seen == {"set": [vocab()["h"], vocab()["i"]], "other": [5303]}  # GPT-2's "hi" elsewhere
    assert main(["trace", "--weights", str(converted), "--text", "hi", "--json"]) == 0
    assert tokenizer.encode("hi") == [5303] and tokenizer.current() is tokenizer.GPT2_VOCABULARY


def test_the_diagrams_draw_the_model_s_own_parts():
    """A bias-free exact-GELU model's diagrams name no bias and the erf GELU; GPT-2's keep theirs."""
    from dataclasses import replace

    from gpt2viz.anatomy import diagram
    from gpt2viz.anatomy.components import component_tree
    from gpt2viz.spec.config import custom_config
    from gpt2viz.spec.schema import text_dims

    nano = replace(custom_config(65, 256, 384, 6, 6, bias=False, name="shakespeare-char"), activation="gelu")

    def draw(kind, cfg):
        from collections import defaultdict

        links = diagram.Links(defaultdict(lambda: "block"), {"mode": "full"}, current="block")
        cat = component_tree(cfg)
        return getattr(diagram, kind)(cat, "full", text_dims(cat.config, 8, "full"), links)

    assert "exact (erf) form" in draw("mlp", nano) and "tanh form" in draw("mlp", "gpt2")
    assert "bias" not in draw("block", nano) + draw("merge", nano) and "bias b_O" in draw("merge", "gpt2")
    # and the equations: no bias term anywhere, where GPT-2's have ten
    assert not any("b_" in c.equation for c in component_tree(nano))
    assert sum(c.equation.count(" + b_") for c in component_tree("gpt2")) == 10
