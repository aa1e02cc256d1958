"Ablation stage (dagger.ablations): answer extraction per language, exemplar sets, worked graphs, annotation stripping, tables (fast; no model)."
import json
import pandas as pd
import pytest
from dagger import prompts as P
from dagger import graph as G
from dagger import ablations as A
from dagger.config import load_profile
from dagger.data import Problem
from dagger.answers import extract_answer
from dagger.prompts import exemplars, labels, cot_messages, dagger_prompt
from dagger import gold as GOLD

LANGS = ['en', 'es', 'te', 'th']


# --- answer extraction per language ---------------------------------------------------------------------
@pytest.mark.parametrize('lang', LANGS)
def test_exemplar_answers_read_back(lang):
    for e in exemplars(lang):
        assert A.extract_answer_lang(e.answer, lang) == e.number


@pytest.mark.parametrize('text,lang,value', [
    ('The answer is 18.', 'en', 18),
    ('So 10 - 3 = 7. The answer is 7.', 'en', 7),
    ('La respuesta es 7,5.', 'es', 7.5),                  # Spanish decimal comma
    ('Cuesta $1,5 cada uno: 3 x 1,5 = 4,5', 'es', 4.5),
    ('La respuesta es 2,125.', 'es', 2125),               # three digits: a thousands separator (as in MGSM-es)
    ('Tiene 5 + 2 = 7 juguetes. La respuesta es 7.', 'es', 7),
    ('సమాధానం 11.', 'te', 11),
    ('సమాధానం ౧౧.', 'te', 11),                           # Telugu digits
    ('దశలవారీగా సమాధానం: రోజర్ 5 బంతులతో. 5+6=11. సమాధానం 11.', 'te', 11),   # the label's సమాధానం is not the answer
    ('దశలవారీగా సమాధానం: 4 రోజులు, 4*5=20', 'te', 20),   # no answer phrase: last number
    ('คำตอบคือ 33', 'th', 33),
    ('คำตอบคือ ๓๓', 'th', 33),                              # Thai digits
    ('ดังนั้น ๕ + ๖ = ๑๑ ลูก', 'th', 11),
    ('คำตอบทีละขั้นตอน: มี 3 คัน ... คำตอบคือ 5', 'th', 5),
    ('The answer is 9.', 'th', 9),                          # English phrase in a Thai run
    ('no number', 'te', None),
])
def test_extract_answer_lang(text, lang, value):
    assert A.extract_answer_lang(text, lang) == value


def test_native_digits_and_harness_gap():
    assert A.native_to_ascii('๐๑๒๓๔๕๖๗๘๙ ౦౧౨౩౪౫౬౭౮౯') == '0123456789 0123456789'
    # the harness alone misses these; the wrapper exists for them
    assert extract_answer('คำตอบคือ ๑๒', 'th') is None
    assert extract_answer('దశలవారీగా సమాధానం: రోజర్ 5 బంతులతో. 5+6=11. సమాధానం 11.', 'te') == 5


def test_rescore_only_cot():
    r = dict(method='cot', lang='te', output='సమాధానం ౪౨.', answer=42.0, prediction=None, correct=False, error='no_answer')
    out = A.rescore([r, r | dict(method='dagger', correct=False)])
    assert out[0]['prediction'] == 42 and out[0]['correct'] and out[0]['error'] is None and out[0]['prediction_harness'] is None
    assert out[1]['correct'] is False and 'prediction_harness' not in out[1]
    wrong = A.rescore([r | dict(output='సమాధానం 41.')])[0]
    assert wrong['prediction'] == 41 and wrong['correct'] is False


# --- exemplar sets (Table 7) -------------------------------------------------------------------------------
def test_exemplar_sets_rule():
    assert P.EXEMPLAR_SETS == {'original': (1, 2, 3, 4, 5), 'alternate': (4, 5, 6, 7, 8)}
    ex = exemplars('en')
    assert P.exemplar_set('original') == ex[:5]
    assert P.exemplar_set('alternate') == ex[3:]
    assert P.exemplar_set('alternate', shots=3) == ex[5:]
    assert not set(P.exemplar_set('alternate', shots=3)) & set(P.exemplar_set('original'))
    with pytest.raises(KeyError): P.exemplar_set('seeded')


@pytest.mark.parametrize('lang', LANGS)
def test_exemplars_are_not_test_problems(lang):
    assert A.check_exemplars(lang) == 250


def test_overlap_is_detected():
    e = exemplars('te')[6]
    p = Problem(id='mgsm_te-x', question=P.exemplar_question(e, 'te'), answer=8.0, lang='te', source='mgsm', split='mgsm_te')
    with pytest.raises(A.ExemplarOverlapError): A.check_exemplars('te', [p])
    assert P.exemplar_question(e, 'te').endswith('?')          # the stray text after '?' is cut


def test_cot_config_prompts():
    q = 'Ana has 4 pens and buys 3 more. How many pens does she have?'
    p = {k: P.cot_config_prompt(k)(q, 'en')[0]['content'] for k in P.COT_CONFIGS}
    assert p['cot5_original'] == cot_messages(q, 'en')[0]['content']
    assert [p[k].count('The answer is') for k in P.COT_CONFIGS] == [5, 5, 3, 1]
    assert 'Roger' in p['cot5_original'] and 'Roger' not in p['cot5_alternate'] and 'Olivia' in p['cot3_alternate']
    assert 'Shawn' in p['cot5_alternate'] and 'Shawn' not in p['cot3_alternate']
    assert p['instruction'].endswith(f'Question: {q}\nStep-by-Step Answer:') and '"The answer is N."' in p['instruction']
    with pytest.raises(KeyError): P.cot_config_prompt('cot8')


@pytest.mark.parametrize('lang,sentence', [('en', 'The answer is N.'), ('es', 'La respuesta es N.'), ('te', 'సమాధానం N.'), ('th', 'คำตอบคือ N')])
def test_answer_sentence_is_read_back(lang, sentence):
    assert P.answer_sentence(lang) == sentence
    assert A.extract_answer_lang('... ' + sentence.replace('N', '27'), lang) == 27


# --- worked graphs (Table 5) ------------------------------------------------------------------------------
@pytest.mark.parametrize('lang', LANGS)
def test_graph_examples_execute_to_exemplar_numbers(lang):
    from dagger.gold import label_text
    ex = GOLD.graph_examples(lang)
    assert len(ex) == 3
    for (q, g), i in zip(ex, (3, 5, 7)):
        e = exemplars(lang)[i - 1]
        assert q == P.exemplar_question(e, lang) and q in e.question
        graph = G.from_obj(g, strict=True)
        assert G.is_correct(G.execute(graph), e.number)
        assert G.is_correct(G.execute(G.parse(G.format_graph(g), strict=True)), e.number)
        consts = [n for n in g['nodes'] if n['op'] == 'const']
        assert all(str(n['val']) in q for n in consts)                         # constants are the exemplar's numbers
        assert all(n['label'] and label_text(n['label']) in label_text(q) for n in consts)   # labels are spans of its question
        assert GOLD.graph_examples(lang, form='spans')[[3, 5, 7].index(i)][1]['nodes'][0]['id'] == 'n1'   # the old form stays
        assert G.declared_distractors(graph) == []
        assert g['nodes'][-1]['id'] == 'final_result'


def test_exemplar_graph_rejects_implicit_numbers():
    for i in (2, 4, 6):     # "four days", "five toys", "five bagels": not written as digits
        with pytest.raises(P.ExemplarGraphError): P.exemplar_graph(i, 'en')
    assert P.exemplar_equations(3) == [(32.0, 'add', 42.0, 74.0), (74.0, 'sub', 35.0, 39.0)]


def test_labels_follow_language():
    g = GOLD.graph_examples('th')[0][1]
    assert all(any('\u0e00' <= ch <= '\u0e7f' for ch in n['label']) for n in g['nodes'])
    g = GOLD.graph_examples('te')[0][1]
    assert all(any('\u0c00' <= ch <= '\u0c7f' for ch in n['label']) for n in g['nodes'])


def test_graph_prompt_shape():
    p = GOLD.graph_prompt('Pedro tiene 3 manzanas y compra 2 más.', 'es')[0]['content']
    assert 'problems written in Spanish' in p and p.count('Example ') == 3 and 'Leah tenía 32 chocolates' in p
    assert p.endswith('Question: Pedro tiene 3 manzanas y compra 2 más.\nOutput:')
    assert p.count('"final_result"') == dagger_prompt('x', 'es', examples=[])[0]['content'].count('"final_result"') + 3
    bare = GOLD.graph_prompt('Pedro tiene 3 manzanas.', 'es', distractor=False)[0]['content']
    assert 'distractor' not in bare


# --- annotation stripping (Table 3) ----------------------------------------------------------------------
def test_without_annotations_strips_target_and_prompt():
    from dagger.config import load_profile
    from dagger.teacher import without_annotations
    from dagger.prompts import student_prompt
    cfg = load_profile('cpu')
    q, g = GOLD.graph_examples('en', form='spans')[1]
    g = json.loads(json.dumps(g)); g['nodes'][1]['distractor'] = True; g['nodes'][4]['args'] = ['s1', 'n3']
    row = dict(id='r', question=q, lang='en', prompt=student_prompt(cfg)(q, 'en'),
               completion=[dict(role='assistant', content=G.format_graph(g))])
    bare = without_annotations(row, student_prompt(A.noannot_profile(cfg)))
    text = bare['completion'][0]['content']
    assert '"distractor"' in row['completion'][0]['content'] and 'distractor' not in text
    assert 'distractor' not in bare['prompt'][0]['content'] and 'distractor' in row['prompt'][0]['content']
    assert [{k: v for k, v in n.items() if k != 'distractor'} for n in g['nodes']] == json.loads(text.split('```json')[1].split('```')[0])['nodes']
    assert G.execute(G.parse(text, strict=True)) == G.execute(G.parse(row['completion'][0]['content'], strict=True))
    assert (bare['id'], bare['question']) == (row['id'], row['question'])


def test_noannot_profile_paths():
    from dagger.config import load_profile
    from dagger.sft import sft_dir
    cfg = load_profile('cpu')
    c = A.noannot_profile(cfg)
    assert c.sft.annotations is False and cfg.sft.annotations is True
    assert sft_dir(c) != sft_dir(cfg) and sft_dir(c).name == 'sft_noannot'
    assert A.ablation_dir(cfg, 'table3') == cfg.results/'ablations'/'table3'


# --- tables ---------------------------------------------------------------------------------------------
def _rec(method, lang, correct, tokens, executed=None, **kw):
    return dict(method=method, lang=lang, split=f'mgsm_{lang}', correct=correct, tokens=tokens, executed=executed) | kw


def test_tables():
    t5 = A.table5([_rec('cot', 'th', True, 10), _rec('cot', 'th', True, 30), _rec('dagger', 'th', False, 5, False),
                   _rec('dagger', 'th', True, 7, True), _rec('cot', 'es', False, 1)])
    d = t5.set_index(['lang', 'method'])
    assert d.loc[('th', 'cot'), 'accuracy'] == 100 and d.loc[('th', 'cot'), 'mean_tokens'] == 20
    assert d.loc[('th', 'dagger'), 'exec_rate'] == 50 and pd.isna(d.loc[('th', 'cot'), 'exec_rate'])
    assert d.loc[('th', 'dagger'), 'language'] == 'Thai' and d.loc[('es', 'cot'), 'setting'] == 'CoT (5-shot)'
    t7 = A.table7([_rec('cot', 'en', c, 10, config=k) for k, c in zip(P.COT_CONFIGS, [True, False, True, True])])
    assert t7['config'].tolist() == list(P.COT_CONFIGS) and t7['accuracy'].tolist() == [100, 0, 100, 100]
    assert t7['exemplars'].tolist() == ['1 2 3 4 5', '4 5 6 7 8', '6 7 8', '']
    t3 = A.table3([_rec('dagger', 'en', True, 1, True, annotations='with', split='s'),
                   _rec('dagger', 'en', False, 1, False, annotations='without', split='s_distract')])
    assert t3[['annotations', 'split', 'accuracy', 'exec_rate']].values.tolist() == [['with', 's', 100, 100], ['without', 's_distract', 0, 0]]


def test_write_table(tmp_path):
    t = pd.DataFrame([dict(a=1)])
    out = A.write_table(tmp_path/'x', [dict(id='p', correct=True)], t, dict(n=1))
    assert (out/'records.jsonl').read_text().strip() == '{"id": "p", "correct": true}'
    assert pd.read_csv(out/'table.csv').to_dict('records') == [dict(a=1)]
    assert json.loads((out/'run.json').read_text()) == dict(n=1)


def test_profile_fields():
    from dagger.config import load_profile
    cpu, paper = load_profile('cpu'), load_profile('paper')
    assert set(cpu.ablation.tables) <= set(A.TABLES) and set(paper.ablation.tables) == set(A.TABLES)
    assert (paper.ablation.n, paper.ablation.n_table7, paper.ablation.max_new_tokens) == (0, 0, 0)
    assert 0 < cpu.ablation.n <= 8 and 0 < cpu.ablation.max_new_tokens <= cpu.ablation.graph_max_new_tokens
    assert paper.ablation.graph_max_new_tokens == 0
    assert tuple(paper.ablation.languages) == ('en', 'es', 'te', 'th')
    assert paper.ablation.table3_splits == ('msvamp_bn', 'msvamp_bn_distract')


def test_sft_mismatch(tmp_path):
    from dagger.config import load_profile
    from dagger.files import write_json
    from dagger.provenance import run_info
    cfg = load_profile('cpu')
    write_json(tmp_path/'run.json', dict(run_info=run_info(cfg)))
    assert A.sft_mismatch(cfg, tmp_path) == {}
    assert A.sft_mismatch(A.noannot_profile(cfg), tmp_path) == {}          # annotations are the ablated factor, not a mismatch
    old = cfg.as_dict(); del old['sft']['student_shots']
    write_json(tmp_path/'run.json', dict(run_info=run_info(cfg) | dict(profile=old)))
    assert A.sft_mismatch(cfg, tmp_path) == ({} if cfg.sft.student_shots == 1 else {'sft.student_shots': (1, cfg.sft.student_shots)})  # a setting not recorded: its default
    assert A.sft_mismatch(A.noannot_profile(cfg, sft__n_train=cfg.sft.n_train + 1), tmp_path).get('sft.n_train') == (cfg.sft.n_train, cfg.sft.n_train + 1)


def test_table_sizes_follow_the_profile():
    # Table 5 once ignored ablation.n and ran every MGSM problem of each language on cpu
    cpu = load_profile('cpu')
    assert A.table_sizes(cpu) == dict(table3=cpu.eval.n, table5=cpu.ablation.n, table7=cpu.ablation.n_table7)
    assert A.table_sizes(cpu)['table5'] == 1 and A.table_sizes(cpu, 5) == dict(table3=5, table5=5, table7=5)
    assert A.table_sizes(load_profile('paper')) == dict(table3=0, table5=0, table7=0)


def test_tables_5_and_7_run_on_the_roster_api_system_in_the_profile_folder():
    from dagger.config import load_profile
    paper, cpu = load_profile('paper'), load_profile('cpu')
    t5 = A.table_profile(paper, 'table5')
    assert (t5.model, t5.backend, t5.results) == ('gpt-4.1', 'openai', paper.results)
    assert A.table_profile(paper, 'table3') is paper and A.table_profile(cpu, 'table5') is cpu
