"""dagger.llm's llama.cpp path: the GGUF conversion of a local Llama folder (checked against transformers' own GGUF
reader, no llama.cpp needed) and, when `llama-cpp-python` is installed (the optional `cpu-fast` extra), the
`llamacpp` backend on the embedded model."""
import importlib.util

import numpy as np
import pytest

from dagger.llm import (BackendError, Sampling, TransformersBackend, _rope_rows, embedded_model_path, get_backend,
                        gguf_name, to_gguf)

HAVE_LLAMA = importlib.util.find_spec('llama_cpp') is not None


def test_gguf_names_and_rope_layout():
    assert gguf_name('model.layers.12.mlp.gate_proj.weight') == 'blk.12.ffn_gate.weight'
    assert gguf_name('model.layers.0.post_attention_layernorm.weight') == 'blk.0.ffn_norm.weight'
    assert gguf_name('model.norm.weight') == 'output_norm.weight'
    with pytest.raises(BackendError, match='no llama.cpp name'): gguf_name('model.layers.0.self_attn.q_norm.weight')
    w = np.arange(2 * 8 * 3).reshape(16, 3)                     # 2 heads, 8 rows each: [first half | second half] -> pairs
    assert _rope_rows(w, 2)[:8, 0].tolist() == [0, 12, 3, 15, 6, 18, 9, 21]


def test_to_gguf_reads_back_as_the_same_model(tmp_path):
    "A tiny random Llama (bfloat16, as merged students are saved) converted to GGUF gives the same logits through transformers' GGUF reader."
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=49152, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=True, rms_norm_eps=1e-5)
    folder = tmp_path/'student'
    LlamaForCausalLM(cfg).to(torch.bfloat16).save_pretrained(folder)
    path = to_gguf(folder, root=tmp_path)
    assert path.parent == tmp_path/'gguf' and not list(folder.glob('*.gguf'))     # the folder (and its fingerprint) is untouched
    assert to_gguf(folder, root=tmp_path) == path                                  # made once
    ref = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    back = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32).eval()
    x = torch.tensor([[1, 500, 2000, 31, 7, 9000]])
    with torch.no_grad(): assert torch.allclose(ref(x).logits, back(x).logits, atol=1e-5)
    cfg.model_type, bad = 'qwen2', tmp_path/'other'
    LlamaForCausalLM(cfg).save_pretrained(bad)
    (bad/'config.json').write_text((bad/'config.json').read_text().replace('"llama"', '"qwen2"'))
    with pytest.raises(BackendError, match='only Llama'): to_gguf(bad, root=tmp_path)


@pytest.mark.skipif(not HAVE_LLAMA, reason='llama-cpp-python is not installed (pip install "dagger[cpu-fast]")')
def test_llamacpp_backend_on_the_embedded_model(tmp_path):
    be = get_backend('llamacpp', cache=tmp_path/'c.sqlite')
    tb = TransformersBackend(device='cpu')
    qs = ['What is 7 + 5?', 'A box holds 12 pens. How many pens are in 3 boxes?']
    assert [be.encode([dict(role='user', content=q)]) for q in qs] == [tb.encode([dict(role='user', content=q)]) for q in qs]
    out = be.generate(qs, Sampling(max_new_tokens=16))
    for [c] in out: assert c.text and 1 <= c.tokens <= 16 and c.finish_reason in ('stop', 'length') and not c.cached
    assert all(c.cached for [c] in be.generate(qs, Sampling(max_new_tokens=16)))
    [[cut]] = be.generate(['Count from 1 to 5, one number per line.'], Sampling(max_new_tokens=12, stop='\n'))
    assert '\n' not in cut.text and cut.finish_reason == 'stop'
    s = Sampling(n=2, max_new_tokens=8, temperature=1.0, seed=3)
    alone, batched = be.generate(['Name a fruit.'], s), be.generate(['Write a story.', 'Name a fruit.'], s)
    assert [c.text for c in alone[0]] == [c.text for c in batched[1]]                # per-sample seeds
    # the float32 GGUF of the embedded model's safetensors copy: the same greedy tokens as transformers here
    f32 = get_backend('llamacpp', str(embedded_model_path()), cache=None)
    assert f32.gguf.name.endswith('-f32.gguf') and f32.signature()['gguf'] != be.signature()['gguf']
    assert [[(c.text, c.tokens)] for [c] in f32.generate(qs, Sampling(max_new_tokens=24))] == \
           [[(c.text, c.tokens)] for [c] in tb.generate(qs, Sampling(max_new_tokens=24))]
