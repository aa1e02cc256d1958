"Reading the files stages hand over: a malformed line names the file and the line."
import pickle
import pytest
from dagger.files import DataFileError, read_json, read_jsonl, write_jsonl

def test_truncated_jsonl_names_file_and_line(tmp_path):
    p = tmp_path/'records.jsonl'
    p.write_text('{"id": 1}\n{"id": 2}\n{"id": 3, "answer": "4')
    with pytest.raises(DataFileError) as e: read_jsonl(p)
    assert (e.value.path, e.value.line) == (str(p), 3)
    assert str(e.value).startswith(f'{p}, line 3: not valid JSON') and 'truncated' in str(e.value)

def test_malformed_middle_line_is_not_called_truncated(tmp_path):
    p = tmp_path/'records.jsonl'
    p.write_text('{"id": 1}\n{"id": 2,,}\n{"id": 3}\n')
    with pytest.raises(DataFileError, match=r'records.jsonl, line 2: not valid JSON') as e: read_jsonl(p)
    assert 'truncated' not in str(e.value)
    assert isinstance(e.value, ValueError)
    assert pickle.loads(pickle.dumps(e.value)).line == 2       # survives a worker process

def test_blank_lines_are_skipped_and_counted(tmp_path):
    p = tmp_path/'records.jsonl'
    p.write_text('\n{"id": 1}\n   \n{"id": 2}\nnope\n')
    with pytest.raises(DataFileError, match='line 5'): read_jsonl(p)
    p.write_text('\n{"id": 1}\n   \n{"id": 2}\n\n')
    assert read_jsonl(p) == [{'id': 1}, {'id': 2}]

def test_round_trip_and_bad_json(tmp_path):
    rows = [{'q': 'মিনার ৫টি কলম'}, {'q': 'x'}]
    assert read_jsonl(write_jsonl(tmp_path/'a.jsonl', rows)) == rows
    (tmp_path/'s.json').write_text('{\n  "a": 1,\n  "b": \n')
    with pytest.raises(DataFileError, match=r's.json, line 4'): read_json(tmp_path/'s.json')


def test_results_are_foldered_per_profile_and_model_and_profiles_extend(tmp_path):
    from dagger.config import load_profile, model_slug, ConfigError
    paper = load_profile('paper')
    assert paper.results.parts[-2:] == ('paper', 'gemma-3-12b-it')
    assert paper.replace(model='google/gemma-3-4b-it').results.parts[-2:] == ('paper', 'gemma-3-4b-it')
    assert load_profile('cpu').results.parts[-1] == 'cpu' and model_slug('embedded:smollm2-135m') == 'smollm2-135m'
    ini = tmp_path / 'settings.ini'
    ini.write_text('[DEFAULT]\nseed = 1\n[a]\nmodel = x/m1\nbatch_size = 3\n[b]\nextends = a\nbatch_size = 5\n[c]\nextends = c\n')
    b = load_profile('b', ini)
    assert (b.model, b.batch_size, b.seed) == ('x/m1', 5, 1)
    import pytest
    with pytest.raises(ConfigError, match='loop'): load_profile('c', ini)


def test_a_setting_has_one_name_and_flat_names_say_the_dotted_one():
    from dagger.config import load_profile, ConfigError, suggest, _types
    with pytest.raises(ConfigError, match=r"'sft_recipe': did you mean 'sft\.recipe'\?"): load_profile('cpu', sft_recipe='paper')
    with pytest.raises(ConfigError, match=r"'teacher\.n_sft'"): load_profile('cpu').replace(teacher_n_sft=3)
    assert load_profile('cpu', eval__sample_n=4).eval.sample_n == 4
    assert load_profile('cpu', **{'eval.sample_n': 4}).eval.sample_n == 4
    names = _types()
    for key in names:   # every dotted setting, written flat, is suggested back
        if '.' in key: assert suggest(key.replace('.', '_'), names) == [key], key
    assert suggest('no_such_setting_at_all', names) == []

def test_the_cpu_study_profile_is_bangla_on_gemma_and_trains_by_the_method():
    "cpu-study: Gemma-3-270M on Table 2's four Bangla splits (not smoke-sized), verified graphs in a seeded order, GRPO on MSVAMP-bn's training half, vLLM."
    from dagger.config import load_profile, EMBEDDED_DEFAULT
    from dagger.data import EVAL_SPLITS
    from dagger.stats import SMOKE_N
    c = load_profile('cpu-study')
    assert c.model == EMBEDDED_DEFAULT == 'embedded:gemma3-270m'
    assert set(c.eval.splits) == set(EVAL_SPLITS) and c.msvamp_holdout and c.eval.n == 0 and c.eval.sample_n >= SMOKE_N
    assert (c.sft.select, c.sft.student_prompt, c.sft.eval_split) == ('shuffled', 'brief', 'msvamp_bn') and c.sft.eval_sample_n >= c.eval.sample_n
    assert c.teacher.grpo_msvamp and c.teacher.msvamp_split == 'msvamp_bn' and c.grpo.recipe == 'cpu-study'
    assert c.backend == 'vllm' and c.distractors.backend == 'transformers'
    assert c.eval.max_new_tokens == c.sft.eval_max_new_tokens == c.ablation.max_new_tokens   # the same budget, so outputs are reused


def test_git_commit_ignores_the_pipeline_outputs(tmp_path):
    import subprocess
    from dagger.provenance import git_commit
    git = lambda *a: subprocess.run(['git', '-c', 'user.name=t', '-c', 'user.email=t@t', *a], cwd=tmp_path, check=True, capture_output=True)
    (tmp_path/'runs').mkdir(); (tmp_path/'figures').mkdir()
    for f in ('code.py', 'runs/stage.ipynb', 'figures/fig.json'): (tmp_path/f).write_text('0')
    git('init', '-q'); git('add', '-A'); git('commit', '-qm', 'x')
    sha = subprocess.run(['git', 'rev-parse', 'HEAD'], cwd=tmp_path, capture_output=True, text=True).stdout.strip()
    assert git_commit(tmp_path) == sha
    (tmp_path/'runs/stage.ipynb').write_text('1'); (tmp_path/'figures/fig.json').write_text('1')
    assert git_commit(tmp_path) == sha                       # a run rewriting its own outputs is not a code change
    (tmp_path/'code.py').write_text('1')
    assert git_commit(tmp_path) == sha + '+dirty'
