"The GPU path's model code on tiny stand-ins of the real classes (Gemma-3 with its vision tower, Qwen3, Llama), on the CPU, bf16 off."
import dataclasses, hashlib
from pathlib import Path
import pytest
from dagger.standins import KINDS, build_standin
from dagger import sft as S, grpo as R
from dagger.graph import format_graph

VISION = ('vision_tower', 'multi_modal_projector')


@pytest.fixture(scope='module')
def standins(tmp_path_factory):
    root = tmp_path_factory.mktemp('standins')
    return {k: build_standin(k, root/k) for k in KINDS}


def _lora_names(lm):
    return [n for n, m in lm.named_modules() if hasattr(m, 'lora_A')]


def test_standins_are_the_real_classes_in_the_hub_layout(standins, tmp_path):
    from transformers import AutoModelForCausalLM, AutoProcessor
    want = dict(gemma3='Gemma3ForConditionalGeneration', qwen3='Qwen3ForCausalLM', llama='LlamaForCausalLM')
    for kind, path in standins.items():
        assert type(AutoModelForCausalLM.from_pretrained(path)).__name__ == want[kind]
    assert {'preprocessor_config.json', 'processor_config.json', 'tokenizer.json'} <= {p.name for p in standins['gemma3'].iterdir()}
    assert type(AutoProcessor.from_pretrained(standins['gemma3'])).__name__ == 'Gemma3Processor'
    again = build_standin('gemma3', tmp_path/'again')
    digest = lambda p: hashlib.sha256((p/'model.safetensors').read_bytes()).hexdigest()
    assert digest(again) == digest(standins['gemma3'])                       # deterministic


@pytest.mark.parametrize('kind', KINDS)
def test_sft_loader_adapts_language_layers_only(standins, kind):
    from peft import get_peft_model
    recipe = S.get_sft_recipe('cpu', lora_layers=2)
    lm, tok, peft_config, path = S.load_for_training(str(standins[kind]), recipe)
    names = _lora_names(get_peft_model(lm, peft_config))
    assert names and not [n for n in names if any(v in n for v in VISION)]
    assert {n.split('.layers.')[1].split('.')[0] for n in names} == {'2', '3'}   # the top 2 of 4 decoder layers


def test_grpo_loads_the_gemma3_policy(standins):
    from peft import get_peft_model
    lm, tok, peft_config, path = R.load_policy(str(standins['gemma3']), R.get_grpo_recipe('cpu', lora_layers=0))
    assert path == 'peft' and type(lm).__name__ == 'Gemma3ForConditionalGeneration'
    names = _lora_names(get_peft_model(lm, peft_config))
    assert len(names) == 4*7 and not [n for n in names if any(v in n for v in VISION)]


def _rows(n):
    g = format_graph({'nodes': [{'id': 'a', 'op': 'const', 'val': 3}, {'id': 'b', 'op': 'const', 'val': 4},
                                {'id': 's', 'op': 'add', 'args': ['a', 'b']}, {'id': 'final_result', 'op': 'identity', 'args': ['s']}]})
    return [dict(id=f'r{i}', prompt=[dict(role='user', content=f'Tom has 3 apples and buys {i} more.')],
                 completion=[dict(role='assistant', content=g)], answer=7.0) for i in range(n)]


def test_sft_step_merge_and_reload_gemma3(standins, tmp_path):
    from transformers import AutoModelForCausalLM, AutoProcessor
    recipe = S.get_sft_recipe('cpu', lora_layers=0, max_length=256, eval_steps=1, eval_before=False, val_examples=1)
    facts = S.train_sft(str(standins['gemma3']), _rows(2), _rows(1), recipe, tmp_path/'sft')
    assert facts['steps'] == 1 and facts['precision'] == 'fp32'
    merged = Path(facts['merged'])
    assert {'preprocessor_config.json', 'processor_config.json'} <= {p.name for p in merged.iterdir()}
    assert type(AutoModelForCausalLM.from_pretrained(merged)).__name__ == 'Gemma3ForConditionalGeneration'
    assert type(AutoProcessor.from_pretrained(merged)).__name__ == 'Gemma3Processor'


def test_grpo_merge_keeps_the_processor(standins, tmp_path):
    from peft import get_peft_model
    lm, tok, peft_config, _ = R.load_policy(str(standins['gemma3']), R.get_grpo_recipe('cpu', lora_layers=0))
    get_peft_model(lm, peft_config).save_pretrained(tmp_path/'checkpoint-1')
    out = R.merge_checkpoint(str(standins['gemma3']), tmp_path/'checkpoint-1', tmp_path/'merged')
    assert {'preprocessor_config.json', 'processor_config.json'} <= {p.name for p in out.iterdir()}


def test_text_only_merge_writes_no_processor(standins, tmp_path):
    from peft import get_peft_model
    lm, tok, peft_config, _ = S.load_for_training(str(standins['llama']), S.get_sft_recipe('cpu', lora_layers=0))
    out = S.merge_adapter(get_peft_model(lm, peft_config), tok, tmp_path/'m', 'float32', base=str(standins['llama']))
    assert not {'preprocessor_config.json', 'processor_config.json'} & {p.name for p in out.iterdir()}
