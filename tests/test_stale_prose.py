"""Notebook prose names only the models and layer counts the profiles use.

The CPU default moved from SmolLM2-135M (30 decoder layers) to Gemma-3-270M (18); prose that still argued from the
old model misled readers. A notebook that names a model no profile, roster line or stand-in uses, or a layer count
none of those models has, fails here. SmolLM2-135M is still an optional embedded model: only the notebooks that
document the embedded registry and the command line that accepts it may name it."""
import json, re
from pathlib import Path
import pandas as pd
from dagger.config import load_profile, profile_names

ROOT = Path(__file__).resolve().parents[1]
MODEL = re.compile(r'\b(SmolLM2?[-\w.]*|Gemma-?3[-\w.]*?\d+[bm]\b|Qwen[\d.]+-\d+b|LLaMA-?3[-\w.]*?\d+b|'
                   r'Llama-3[-\w.]*?\d+b|Phi-[\d.]+|Mistral-\d+b|TinyLlama)', re.I)
LAYERS = re.compile(r'(?:of (?:the |its )?(\d+)(?: decoder)? layers|(\d+) decoder layers|all (\d+) layers|has (\d+) layers)')
REGISTRY = {'smollm2': ('lib_14_models', 'lib_16_llm', 'lib_30_any_model')}   # optional embedded models, by family


def key(name: str) -> str:
    "A model name reduced to family and size: 'google/gemma-3-12b-it' and 'Gemma-3-12B' are both 'gemma3-12b'."
    s = name.lower().split('/')[-1].split(':')[-1].replace('meta-', '').replace('-instruct', '')
    s = re.sub(r'-it$', '', s)
    m = re.match(r'(smollm2|gemma-?3|qwen[\d.]+|llama-?3|phi|mistral|tinyllama)[-\w.]*?(\d+(?:\.\d+)?[bm])?$', s)
    return (m[1].replace('-', '') + ('-' + m[2] if m[2] else '')) if m else s


def used_models() -> set:
    names = set()
    for p in profile_names():
        c = load_profile(p)
        names |= {c.model, c.teacher.model, c.distractors.model, *c.models, *(s.model for s in c.roster)}
        names |= {s.name for s in c.roster}
    return {key(n) for n in names if n}


def layer_counts() -> set:
    import json as _json
    from dagger.llm import resolve_model
    counts = set(pd.read_csv(ROOT/'data'/'plan'/'models.csv')['layers'])
    counts.add(_json.loads((Path(resolve_model('embedded:gemma3-270m'))/'config.json').read_text())['num_hidden_layers'])
    return counts | {4}   # the dry run's stand-ins (dagger.standins)


def prose(nb: Path) -> str:
    return '\n'.join(''.join(c['source']) for c in json.loads(nb.read_text())['cells'] if c['cell_type'] == 'markdown')


def test_the_key_of_a_model_name():
    assert key('google/gemma-3-12b-it') == key('Gemma-3-12B') == 'gemma3-12b'
    assert key('embedded:gemma3-270m') == key('Gemma-3-270M') == 'gemma3-270m'
    assert key('SmolLM2-135M-Instruct') == 'smollm2-135m' and key('Qwen/Qwen3-8B') == 'qwen3-8b'


def test_notebooks_name_only_models_the_profiles_use():
    used, stale = used_models(), []
    assert 'gemma3-270m' in used and 'gemma3-12b' in used
    for nb in sorted((ROOT/'nbs').glob('*.ipynb')):
        for m in MODEL.findall(prose(nb)):
            k = key(m)
            if k not in used and nb.stem not in REGISTRY.get(k.split('-')[0], ()): stale.append(f'{nb.name}: {m}')
    assert not stale, f'models no profile uses: {stale}'


def test_notebooks_state_only_layer_counts_of_those_models():
    counts, stale = layer_counts(), []
    assert 18 in counts and 30 not in counts
    for nb in sorted((ROOT/'nbs').glob('*.ipynb')):
        for groups in LAYERS.findall(prose(nb)):
            n = int(next(g for g in groups if g))
            if n not in counts: stale.append(f'{nb.name}: {n} layers')
    assert not stale, f'layer counts of no model the profiles use: {stale}'
