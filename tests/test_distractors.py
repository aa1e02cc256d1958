"Tests for dagger.distractors and dagger.offline: splitting, insertion, prompts, reply parsing, the LLM pipeline on recorded replies, the offline rules and generator, and the committed splits."
import json, random
from pathlib import Path

import pytest

from dagger.config import project_root
from dagger.files import read_jsonl
from dagger.llm import Completion, Sampling
from dagger import distractors as D

BN = ('জুলিয়া সোমবার ১৮ জন ছেলেমেয়ের সঙ্গে ট্যাগ খেলেন। মঙ্গলবার তিনি ১০ জন ছেলেমেয়ের সঙ্গে ট্যাগ খেলেন। '
      'সোমবার তিনি কতজন ছেলেমেয়ের সঙ্গে আরও খেলেন তার সংখ্যা কত?')
EN = "Janet's ducks lay 16 eggs per day. She eats three for breakfast. She sells the rest for $2 each. How much does she make?"
DM = project_root()/'generated'/'distractmath'


# --- sentences and insertion -------------------------------------------------------------------------------
@pytest.mark.parametrize('text,n,q', [
    (BN, 3, 3),
    (EN, 4, 4),
    ('Mr. Lee pays $2.50 for 3.5 lb. of rice. How much is 1 lb.? Answer in cents.', 3, 2),
    ('a b c . d e f . how many ?', 3, 3),
    ('একটি গাছে ১৫টি পাখি বসেছিল।৮টি পাখি উড়ে গেল। কতটি পাখি বাকি রইল?', 3, 3),
    ('How many apples are left if Sam has 3 and eats 1', 1, 1),
])
def test_split_and_question(text, n, q):
    s = D.split_sentences(text)
    assert len(s) == n and D.question_number(s) == q
    assert ''.join(s).replace(' ', '') == text.replace(' ', '')


def test_insert_keeps_original_and_never_after_question():
    new, used = D.insert_sentences(BN, [('ক।', 0), ('খ।', 1), ('গ।', 7), ('ঘ।', -3)])
    assert used == [0, 1, 2, 0]
    s = D.split_sentences(new)
    assert s[-1] == D.split_sentences(BN)[-1] and s[0] == 'ক।' and s[1] == 'ঘ।'
    rest = new
    for x in ['ক।', 'খ।', 'গ।', 'ঘ।']: rest = rest.replace(x, '', 1)
    assert rest.split() == BN.split()


def test_insert_errors():
    with pytest.raises(D.DistractorError): D.insert_sentences('', [('x.', 0)])
    with pytest.raises(D.DistractorError): D.insert_sentences(BN, [('  ', 1)])


# --- prompts ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize('t', D.AUG_TYPES)
def test_generation_prompt(t):
    m = D.generation_prompt(t, BN, 8, 'bn')
    assert [x['role'] for x in m] == ['system', 'user']
    u = m[1]['content']
    assert '1. জুলিয়া' in u and '3. সোমবার' in u and 'sentence 3' in u and '"insert_after"' in u and 'stay 8' in u
    assert D.generation_prompt(t, EN, 18, 'en')[1]['content'].count('Example problem') == 1
    with pytest.raises(D.DistractorError): D.generation_prompt('BAD', BN, 8)


def test_verifier_prompt():
    u = D.verifier_prompt(BN, BN + ' x', 8)[1]['content']
    assert 'answers_match' in u and 'Answer of the original: 8' in u and BN in u


# --- parsing recorded replies -----------------------------------------------------------------------------
RECORDED_OK = [
    ('{"sentences": [{"sentence": "পাশের মাঠে ১৫ জন ছেলেমেয়ে খেলছিল।", "insert_after": 2}]}', [2]),
    ('```json\n{"sentences": [{"sentence": "A", "insert_after": "১"}, {"sentence": "B", "insert_after": 2.0},]}\n```', [1, 2]),
    ('Here you go: {"sentences": [{"sentence": "x {y}", "insert_after": 0}]} hope it helps {', [0]),
]

@pytest.mark.parametrize('text,pos', RECORDED_OK)
def test_parse_sentences_ok(text, pos):
    assert [x['insert_after'] for x in D.parse_sentences(text)] == pos


@pytest.mark.parametrize('text,kind', [
    ('', 'no_json'), ('no braces at all', 'no_json'), ('{"sentences": [1, 2', 'no_json'),
    ('{"sentences": [}', 'bad_json'), ('{"other": []}', 'no_sentences'), ('{"sentences": []}', 'no_sentences'),
    ('{"sentences": "text"}', 'no_sentences'), ('[{"sentence": "a", "insert_after": 1}]', 'no_sentences'),
    ('{"sentences": [' + ','.join(['{"sentence": "a", "insert_after": 1}'] * 4) + ']}', 'too_many'),
    ('{"sentences": [{"sentence": "", "insert_after": 1}]}', 'bad_item'),
    ('{"sentences": [{"text": "a", "insert_after": 1}]}', 'bad_item'),
    ('{"sentences": [{"sentence": "a", "insert_after": "two"}]}', 'bad_position'),
    ('{"sentences": [{"sentence": "a", "insert_after": true}]}', 'bad_position'),
    ('{"sentences": [{"sentence": "a"}]}', 'bad_position'),
])
def test_parse_sentences_malformed(text, kind):
    with pytest.raises(D.ResponseError) as e: D.parse_sentences(text)
    assert e.value.kind == kind


@pytest.mark.parametrize('sentence,kind', [
    ('তিনি কতজনের সঙ্গে খেললেন?', 'question_sentence'),
    ('মঙ্গলবার তিনি ১০ জন ছেলেমেয়ের সঙ্গে ট্যাগ খেলেন।', 'restates'),
    ('তার বোন ৮টি বল পেল।', 'states_answer'),
    ('Her sister had 5 balls.', 'wrong_language'),
    ('এক। দুই।', 'not_one_sentence'),
])
def test_check_added_rejects(sentence, kind):
    with pytest.raises(D.ResponseError) as e: D.check_added([{'sentence': sentence, 'insert_after': 1}], BN, 8, 'bn')
    assert e.value.kind == kind


def test_check_added_duplicates_and_full_stop():
    items = [{'sentence': 'পাশের মাঠে ১৫ জন খেলছিল', 'insert_after': 1}]
    assert D.check_added(items, BN, 8)[0]['sentence'].endswith('।')
    assert D.check_added([{'sentence': 'Her sister had 5 balls', 'insert_after': 1}], EN, 18, 'en')[0]['sentence'].endswith('.')
    with pytest.raises(D.ResponseError) as e: D.check_added(items * 2, BN, 8)
    assert e.value.kind == 'duplicate'


@pytest.mark.parametrize('text,match', [('{"answers_match": true, "justification": "ok"}', True),
                                        ('```json\n{"answers_match": "false"}\n```', False),
                                        ('{"answers_match": "no", "justification": 3}', False)])
def test_parse_verdict(text, match):
    assert D.parse_verdict(text)['answers_match'] is match


@pytest.mark.parametrize('text,kind', [('{"justification": "x"}', 'no_verdict'), ('{"answers_match": "maybe"}', 'bad_verdict'),
                                       ('{"answers_match": 1}', 'bad_verdict'), ('yes', 'no_json')])
def test_parse_verdict_malformed(text, kind):
    with pytest.raises(D.ResponseError) as e: D.parse_verdict(text)
    assert e.value.kind == kind


# Real replies of the embedded model (SmolLM2-135M, greedy and sampled) recorded from the completion cache during the
# stage run, with the reason each one is rejected by the generator parser and by the verifier parser.
RECORDED_SMOLLM2 = [
    ("I've been tasked to assist you with a math-related question, specifically one involving the problem's main person or things that have no effect on the answer. I have the following JSON-style response:\n\n{\"sentences\": [{\"sentence\": \"সে ১২ জন ছেলেমেয়ের সঙ্গে ট্যাগ খেলেন।\", \"insert_after\": 1}]\n\nString: \nI've included JSON-style code with a PHP PHP snippet that solves the math problem.\n\nPlease provide the exact JSON-",
     ('no_sentences', 'no_verdict')),
    ("{\n\n\"sentences\": [{\"sentence\": \"খেলে একে বিয়াদিরে অনোন চানেন একে এলো মগ্রামৈ আরার ফিত্ত্ত স্রটার্বেলগুলো এক্র্",
     ('no_json', 'no_json')),
    ("{\n  \"answer_match\": true,\n  \"justification\": \"one short sentence\"\n}",
     ('no_sentences', 'no_verdict')),
    ("{\n  \"id\": \"292845732\",\n  \"name\": \"জুলিয়া সোমবার ১৮ জন ছেল�",
     ('no_json', 'no_json')),
    ("{\"answers_match\": true or false, \"justification\": \"one short sentence\"}",
     ('bad_json', 'bad_json')),
]

@pytest.mark.parametrize('text,kinds', RECORDED_SMOLLM2)
def test_recorded_smollm2_replies(text, kinds):
    for f, kind in zip((D.parse_sentences, D.parse_verdict), kinds):
        with pytest.raises(D.ResponseError) as e: f(text)
        assert e.value.kind == kind


# --- the pipeline on recorded replies -----------------------------------------------------------------------
class Recorded:
    "Replies chosen by the first key found in the prompt; each key's list is consumed in order (the last reply repeats)."
    def __init__(self, replies, errors=()):
        self.replies, self.prompts, self.samplings, self.errors = {k: list(v) for k, v in replies.items()}, [], [], set(errors)
    def generate(self, prompts, sampling=None):
        self.samplings.append(sampling)
        out = []
        for p in prompts:
            self.prompts.append(p)
            text = p[-1]['content']
            key = next(k for k in self.replies if k in text)
            if key in self.errors:
                self.errors.discard(key); out.append([Completion('', 0, 'error', error='boom')]); continue
            r = self.replies[key]
            out.append([Completion(r.pop(0) if len(r) > 1 else r[0], 5, 'stop', cached=False)])
        return out


PROB = dict(id='p0', question=BN, answer=8.0, lang='bn', source='msvamp')
RED_OK = '{"sentences": [{"sentence": "পাশের মাঠে ১৫ জন ছেলেমেয়ে খেলছিল।", "insert_after": 5}]}'
OAD_OK = '{"sentences": [{"sentence": "সোমবার খেলতে ৪০ মিনিট লেগেছিল।", "insert_after": 1}]}'
NEED_OK = '{"sentences": [{"sentence": "জুলিয়া আরও ৫ জনকে ডাকতে চেয়েছিলেন, কিন্তু ডাকেননি।", "insert_after": 1}]}'


def test_pipeline_counts_everything():
    b = Recorded({'different person': ['nonsense', 'still nonsense', RED_OK],
                  'another property': [OAD_OK], 'no effect': ['{"sentences": [{"sentence": "সে ৮টি বল পেল।", "insert_after": 1}]}'],
                  'পাশের মাঠে': ['{"answers_match": true, "justification": "other kids"}'],
                  '৪০ মিনিট': ['garbage']})
    kept, st = D.llm_augment([PROB], b, sampling=Sampling(max_new_tokens=32), max_tries=3, model='rec')
    assert [r['augmentation_type'] for r in kept] == ['RED']
    assert st['items'] == 3 and st['generated'] == 2 and st['kept'] == 1
    assert st['generate_malformed'] == 2 + 3 and st['generate_dropped_states_answer'] == 1
    assert st['verify_dropped_no_json'] == 1 and st['positions_clamped'] == 1
    r = kept[0]
    assert r['insert_after'] == [2] and r['distractor_values'] == [15.0] and r['generator'] == 'llm:rec'
    assert D.split_sentences(r['modified_question'])[-1] == D.split_sentences(BN)[-1]
    # first try greedy, retries sampled with new seeds
    temps = [(s.temperature, s.seed) for s in b.samplings]
    assert temps[0] == (0.0, 0) and temps[1] == (0.7, 1) and temps[2] == (0.7, 2)


def test_pipeline_verifier_rejects_and_backend_errors_are_retried():
    b = Recorded({'different person': [RED_OK], 'another property': [OAD_OK], 'no effect': [NEED_OK],
                  'পাশের মাঠে': ['{"answers_match": false, "justification": "changed"}'],
                  '৪০ মিনিট': ['{"answers_match": true}'], 'ডাকেননি': ['{"answers_match": true}']}, errors={'no effect'})
    kept, st = D.llm_augment([PROB], b, sampling=Sampling(max_new_tokens=32), max_tries=2)
    assert sorted(r['augmentation_type'] for r in kept) == ['NEED', 'OAD']
    assert st['rejected_by_verifier'] == 1 and st['generate_malformed'] == 1 and 'generate_dropped_backend_error' not in st


def test_pipeline_without_verify():
    b = Recorded({'different person': [RED_OK], 'another property': [OAD_OK], 'no effect': [NEED_OK]})
    kept, st = D.llm_augment([PROB], b, types=('RED',), sampling=Sampling(max_new_tokens=32), verify=False)
    assert len(kept) == 1 and kept[0]['answers_match'] is None and 'verify_calls' not in st


def test_pipeline_with_cached_backend(tmp_path):
    "Through a real dagger.llm Backend with its sqlite cache: the second run is served from the cache."
    from dagger.llm import Backend
    class Fake(Backend):
        kind = 'fake'
        def __init__(self, cache): super().__init__('fake-model', cache=cache); self.runs = 0
        def _run(self, jobs, sampling):
            for j in jobs:
                self.runs += 1
                text = j.messages[-1]['content']
                yield j, Completion(RED_OK if 'different person' in text else '{"answers_match": true}' if 'answers_match' in text else 'x', 3, 'stop')
    b = Fake(tmp_path/'c.sqlite')
    k1, s1 = D.llm_augment([PROB], b, sampling=Sampling(max_new_tokens=16), max_tries=2)
    runs = b.runs
    b2 = Fake(tmp_path/'c.sqlite')
    k2, s2 = D.llm_augment([PROB], b2, sampling=Sampling(max_new_tokens=16), max_tries=2)
    assert k1 == k2 and b2.runs == 0 and runs > 0
    assert s2['generate_cached'] == s2['generate_calls'] and s1['generate_cached'] == 0


# --- offline generator (dagger.offline; stage 1 re-exports what it uses) ------------------------------------------
from dagger import lexicon as L, offline as O


@pytest.mark.parametrize('word,stem', [
    ('ছেলেমেয়ের', 'ছেলেমেয়ে'),                 # য় precomposed (U+09DF)
    ('ছেলেমেয়ের', 'ছেলেমেয়ে'),                # য় decomposed (U+09AF U+09BC): the same noun after NFC
    ('ছাত্রদের', 'ছাত্র'), ('শিশুর', 'শিশু'), ('কুকুরের', 'কুকুর'), ('পাখির', 'পাখি'), ('ডিমগুলি', 'ডিম'),
    ('টি-শার্টগুলো', 'টি-শার্ট'),               # টি here is part of the noun, not a classifier
    ('দোকানে', 'দোকান'),
])
def test_bn_lookup_finds_the_stem(word, stem):
    assert L.bn_lookup(word).word == stem


@pytest.mark.parametrize('word', ['পান', 'ছিলেন', '৪টে', 'গ্রাম', 'ঘণ্টা', 'টে', 'ছেলেমেয়', 'বন্ধুদ'])
def test_bn_lookup_rejects_non_nouns(word):
    assert L.bn_lookup(word) is None        # verbs, clock times, units and truncated stems are never items


def test_lexicon_classes_and_inflection():
    lex = L.lexicon('bn')
    assert lex['ছেলেমেয়ে'].cls == 'person' and lex['দোকান'].cls == 'place' and lex['ডিম'].cls == 'food'
    assert L.bn_genitive(lex['ডিম']) == 'ডিমের' and L.bn_genitive(lex['পাখি']) == 'পাখির'
    assert L.bn_plural(lex['ছাত্র']) == 'ছাত্ররা' and L.bn_locative(lex['দোকান']) == 'দোকানে'
    with pytest.raises(D.DistractorError): L.lexicon('xx')


def test_rules_files_are_checked(tmp_path):
    (tmp_path/'bad.tsv').write_text('a\tb\n# a comment\nx\n1\t2\t3\n', encoding='utf-8')
    with pytest.raises(L.RulesError, match='bad.tsv:4'): L.read_rules('bad.tsv', tmp_path)     # the line is named
    with pytest.raises(L.RulesError, match='no such rules file'): L.read_rules('none.tsv', tmp_path)
    (tmp_path/'ok.tsv').write_text('a\tb\nx\n', encoding='utf-8')
    assert L.read_rules('ok.tsv', tmp_path) == [(2, dict(a='x', b=''))]


def test_read_problem():
    r = O.read_problem(BN, 'bn')
    assert r.target.noun.word == 'ছেলেমেয়ে' and r.q == 3
    assert [(m.noun.word, m.value) for m in r.mentions if m.value] == [('ছেলেমেয়ে', 18.0), ('ছেলেমেয়ে', 10.0)]
    e = O.read_problem(EN, 'en')
    assert e.target.unit.dim == 'money' and ('egg', 16.0) in [(m.noun.word, m.value) for m in e.mentions]
    with pytest.raises(D.DistractorError): O.read_problem(BN, 'xx')


def test_pronoun_rule():
    assert O.has_pronoun('তার কক্ষ বড়।', 'bn') and not O.has_pronoun('এটি তার চেয়ে বড়।', 'bn')
    assert O.has_pronoun('She runs.', 'en') and O.has_pronoun('He runs.', 'en') and not O.has_pronoun('Omar runs.', 'en')
    for w in ('তিনি', 'এর', 'তিনার', 'সে', 'তার', 'তাঁর', 'উনি'): assert O.has_pronoun(f'{w} কাছে ৫টি বই আছে।', 'bn'), w
    assert not O.pronoun_safe(['রিয়ার কাছে ৭টি বই ছিল।', 'মিনা পড়ে।', 'তার কক্ষ বড়।'], ['f', '', ''], 'bn')   # any later one
    assert O.pronoun_safe(['তার কক্ষ বড়।', 'রিয়ার কাছে ৭টি বই ছিল।'], ['', 'f'], 'bn')


# The records the independent reader failed on offline-templates v2 (issue 47), and a held-back set written for the rule:
# a new person may only open a problem that has no pronoun, so none of these may get one.
PRONOUN_CASES = [
    ('bn', 'আদম এবং জ্যাকির কাছে একসঙ্গে ৬টি আপেল আছে। এর কাছে আদম এবং জ্যাকির থেকে ৪টি আপেল বেশি আছে। এর কাছে কতগুলি আপেল আছে?'),
    ('bn', 'রিয়া ৮টি গেম খেলেছে। যদি তিনি আরও ৫টি গেম খেলেন, তবে তিনি মোট কতগুলি গেম খেলবেন?'),
    ('en', 'Jose had 27 blocks. He goes on four vacations and buys 3 blocks on each. How many blocks does he have?'),
    ('bn', 'করিম ১২টি কলম কিনল। পরে সে ৪টি কলম হারাল। তার কাছে কতগুলো কলম আছে?'),
    ('bn', 'সুমনার ১৫টি বেলুন আছে। তিনার বোন ৬টি বেলুন নিল। কতগুলো বেলুন বাকি?'),
    ('bn', 'লিনা ২০টি আম কিনলেন। তাঁর ছেলে ৫টি আম খেল। কতগুলো আম বাকি আছে?'),
    ('en', 'Priya has 14 pencils. They are all new. She gives 5 pencils to Ben. How many pencils does Priya have left?'),
    ('en', 'The farmers grew 40 apples. Then they sold 12 apples. How many apples are left?'),
]


@pytest.mark.parametrize('lang,q', PRONOUN_CASES)
def test_no_new_person_where_a_pronoun_could_take_them(lang, q):
    p = dict(id='x', question=q, answer=1.0, lang=lang, source='s')
    for seed in range(20):
        for t in D.AUG_TYPES:
            try: r = D.offline_augment(p, [t] * 3, seed=seed)
            except D.DistractorError: continue
            assert not any(s.get('name') for s in r['slots']), r['added_sentences']
            assert D.check_record(r) == []


def test_a_new_person_opens_a_problem_without_pronouns():
    q = 'মিনার কাছে ১২টি আপেল আছে। মিনা ৫টি আপেল খেল। মিনার কাছে কতগুলো আপেল বাকি আছে?'
    named = [r for seed in range(30) for r in [D.offline_augment(dict(id='x', question=q, answer=7.0, lang='bn', source='s'), ['RED'] * 3, seed=seed)]
             if any(s.get('name') for s in r['slots'])]
    assert named and all(k == 0 for r in named for s, k in zip(r['slots'], r['insert_after']) if s.get('name'))


def test_committed_records_keep_the_story_rules():
    "Every committed Bangla and English record: a new person only first and only without pronouns; no compound head."
    for name in ('mgsm_bn', 'msvamp_bn', 'mgsm_en', 'msvamp_en'):
        for r in read_jsonl(DM/f'{name}.jsonl'):
            rd = O.read_problem(r['original_question'], r['lang'], r.get('english_query', ''))
            for s, k in zip(r['slots'], r['insert_after']):
                if s.get('name'): assert k == 0 and not rd.pronoun, r['id']
            assert 'গিফট কার্ড' not in r['original_question'] or all(s.get('item') != 'কার্ড' for s in r['slots'])


def test_compound_and_container_heads_are_not_items():
    for q in ('রিয়ার কাছে ১৭টি গিফট কার্ড আছে। রিয়া আরও ৫টি গিফট কার্ড চাইল। মোট কতগুলো গিফট কার্ড?',
              'নাফিসা ২২ বাক্স পিৎজা কিনল। প্রতিটি বাক্সে ৮ টুকরো আছে। মোট কত টুকরো?'):
        rd = O.read_problem(q, 'bn')
        items = {s['item'] for t in D.AUG_TYPES for _, s in O.candidates(rd, t)}
        assert not items & {'কার্ড', 'বাক্স', 'পিৎজা'}, items


def test_frames_follow_how_items_enter_the_story():
    won = 'রিয়া আর্কেডে খেলে ১৮টি টিকিট জিতেছিল। সে ৫টি টিকিট দিয়ে একটি খেলনা নিল। তার কাছে কতগুলো টিকিট বাকি?'
    rd = O.read_problem(won, 'bn')
    assert 'won' in rd.story and not [t for t, _ in O.candidates(rd, 'OAD') if t.measure in ('price', 'far', 'bought_years')]
    assert not any(t.id.startswith('NEED') and 'watch' in t.gloss for t in L.templates())   # no filler about a watch


PLAIN_BN = 'মিনার কাছে ১২টি আপেল আছে। মিনা বাজার থেকে ৫টি আপেল কিনল। মিনার কাছে কতগুলো আপেল আছে?'


@pytest.mark.parametrize('lang,q', [('bn', PLAIN_BN), ('en', EN)])
@pytest.mark.parametrize('t', D.AUG_TYPES)
def test_offline_record_is_valid(lang, q, t):
    try: r = D.offline_augment(dict(id='x', question=q, answer=17.0 if lang == 'bn' else 18.0, lang=lang, source='s'), [t] * 3, seed=3)
    except D.DistractorError as e:   # refused with its reason: a RED would need a new person (both have pronouns), and
        assert t in ('RED', 'NEED') and any(v in str(e) for v in O.SHORTFALL.values())   # neither story fits a NEED frame
        return
    assert D.check_record(r) == []
    assert r['augmentation_type'] == t and r['n_distractors'] == len(r['added_sentences']) == len(r['distractor_values']) == len(r['slots'])
    assert 1 <= r['n_distractors'] <= r['n_requested'] == 3 and sum(r['shortfall'].values()) == 3 - r['n_distractors']
    assert len(set(r['templates'])) == len(r['templates']) and r['generator'].startswith(O.GENERATOR_VERSION)
    assert len(D.record_glosses(r)) == r['n_distractors']


def test_offline_numbers_avoid_gold_intermediates():
    gold = {'nodes': [dict(id='a', op='const', val=12.0), dict(id='b', op='const', val=5.0),
                      dict(id='c', op='add', args=['a', 'b']), dict(id='d', op='mul', args=['c', 'b']),
                      dict(id='final_result', op='identity', args=['c'])]}
    assert D.graph_values(gold) == {12.0, 5.0, 17.0, 85.0}
    for seed in range(30):
        r = D.offline_augment(dict(id='x', question=PLAIN_BN, answer=17.0, lang='bn', source='s', gold_graph=gold), ['RED', 'NEED', 'OAD'], seed=seed)
        assert not set(r['distractor_values']) & {12.0, 5.0, 17.0, 85.0}


def test_pick_value_and_ranges():
    rng = random.Random(0)
    assert all(L.pick_value(rng, 2, 40, 1, forbidden={2, 3, 4}) not in {2, 3, 4} for _ in range(100))
    assert L.pick_value(rng, 2, 3, 1, forbidden={2, 3}) is None
    egg = L.find_range('weight', 'food', 'small', 'bn', word=('ডিম', 'egg'))
    apple = L.find_range('weight', 'food', 'small', 'bn', word=('আপেল', 'apple'))
    assert egg.hi <= 70 < apple.hi and L.find_range('weight', 'food', 'small', 'bn') is None


def test_no_fitting_frame_means_no_sentence():
    "A problem that names nothing the lexicon knows gets no sentence, and the error says why (no generic fallback)."
    p = dict(id='z', question='ক খ গ ৩। ঘ ঙ কত?', answer=3.0, lang='bn', source='s')
    with pytest.raises(D.DistractorError, match='no unused template fits'): D.offline_augment(p, ['OAD'])


def test_offline_bad_type():
    with pytest.raises(D.DistractorError): D.offline_augment(PROB, ['XYZ'])


PLAIN = dict(id='p1', question='মিনার কাছে ১২টি আপেল আছে। মিনা ৫টি আপেল খেল। মিনার কাছে কতগুলো আপেল বাকি আছে?', answer=7.0,
             lang='bn', source='s')


def test_check_record_catches_problems():
    r = D.offline_augment(PLAIN, ['RED', 'RED'], seed=0)
    assert D.check_record(r) == []
    bad = dict(r, modified_question=r['modified_question'] + ' ' + r['added_sentences'][0])
    assert any('after the question' in e or 'last sentence' in e for e in D.check_record(bad))
    bad = dict(r, distractor_values=[18.0] + r['distractor_values'][1:])
    assert D.check_record(bad)
    bad = dict(r, modified_question=r['modified_question'].replace('১২টি', '১৩টি'))
    assert any('original text' in e for e in D.check_record(bad))
    s0 = r['slots'][0]
    assert D.check_record(dict(r, slots=[dict(s0, value=s0['value'] + 1000)] + r['slots'][1:]))   # out of range, text differs
    assert D.check_record(dict(r, slots=[dict(s0, item='দোকান')] + r['slots'][1:]))               # a place in an item frame
    assert D.check_record(dict(r, slots=[dict(s0, item='বই')] + r['slots'][1:]))                  # not named in the problem


# --- the committed splits -----------------------------------------------------------------------------------
FILES = [f'{p}{s}.jsonl' for s in D.SOURCES for p in ('', 'dose_')]

@pytest.mark.parametrize('name', FILES)
def test_committed_split_checks(name):
    recs = read_jsonl(DM/name)
    assert recs and all(D.check_record(r) == [] for r in recs)
    assert all(r['generator'].startswith(O.GENERATOR_VERSION) and 1 <= r['n_distractors'] <= r['n_requested'] for r in recs)
    per_problem = {}
    for r in recs: per_problem[r['id']] = per_problem.get(r['id'], 0) + 1
    if not name.startswith('dose_'):
        assert {r['augmentation_type'] for r in recs} == set(D.AUG_TYPES) and max(per_problem.values()) <= 3
        assert all(set(r['added_types']) == {r['augmentation_type']} for r in recs)
    else:
        assert sorted({r['n_requested'] for r in recs}) == [1, 2, 3, 4, 5] and max(per_problem.values()) == 1


@pytest.mark.parametrize('src', D.SOURCES)
def test_committed_splits_rebuild_identically(src):
    "The committed data is exactly what the generator writes with seed 0, and every left-out pair is listed with its reason."
    from dagger.data import load_split
    import csv
    probs = D.with_english(load_split(src, cfg=D.spans_profile()), src)
    listed = {(f['id'], f['type']) for f in csv.DictReader((DM/'failures.csv').open(encoding='utf-8')) if f['split'].removeprefix('dose_') == src}
    for name, fn in [(f'{src}.jsonl', D.build_typed), (f'dose_{src}.jsonl', D.build_dose)]:
        recs, fails = fn(probs, seed=0)
        assert all(f['reasons'] for f in fails) and {(f['id'], f['type']) for f in fails} <= listed
        assert len(recs) + len(fails) == len(probs) * (1 if name.startswith('dose_') else 3)
        text = ''.join(json.dumps(r, ensure_ascii=False) + '\n' for r in recs)
        assert text == (DM/name).read_text(encoding='utf-8'), name


def test_loader_reads_committed_split():
    from dagger.data import load_split
    recs = load_split('mgsm_bn_distract', source='local')
    assert len(recs) == len(read_jsonl(DM/'mgsm_bn.jsonl')) and {r.aug_type for r in recs} == set(D.AUG_TYPES)
    r = recs[0]
    assert r.original_question and r.added_sentences and r.question != r.original_question


def test_the_distractor_pipeline_has_its_own_model():
    from dagger.config import load_profile
    from dagger.distractors import distractor_model
    assert distractor_model(load_profile('paper')) == ('openai', 'gpt-4.1')        # the paper's generator, not the evaluated model
    assert distractor_model(load_profile('cpu')) == ('transformers', 'embedded:gemma3-270m')
    assert distractor_model(load_profile('cpu', **{'distractors.model': 'x/y', 'distractors.backend': 'vllm'})) == ('vllm', 'x/y')


def test_review_matches_the_committed_build():
    "The independent read is of these files: its sample is the one the files' sha256 draws, and every sentence is judged."
    import csv
    for lang, least in (('bn', 100), ('en', 80)):
        seed, sample = D.review_sample(DM, lang, least + 10)
        assert sample == read_jsonl(DM/'review'/f'sample_{lang}.jsonl')
        rows = list(csv.DictReader((DM/'review'/f'verdicts_{lang}.csv').open(encoding='utf-8')))
        want = [(r['id'], a['sentence']) for r in sample for a in r['added']]
        assert [(r['id'], r['sentence']) for r in rows] == want and len(rows) >= least
        assert all(r[c] in ('0', '1') for r in rows for c in D.REVIEW_COLS)
        assert all(r['note'] for r in rows if '0' in (r[c] for c in D.REVIEW_COLS)) and all(r['gloss'] for r in rows)
        assert {(r['source'], r['type']) for r in sample} == {(s, t) for s in ('mgsm', 'msvamp') for t in D.AUG_TYPES}

def test_distract_records_carry_their_originals_flags():
    "A +D record built on a problem the benchmark audit flags carries the flag; clean loading drops it."
    from dagger.data import load_distractmath, benchmark_flags
    flags = benchmark_flags()
    recs = load_distractmath('msvamp', 'bn', source='local', gold=False)
    flagged = [p for p in recs if p.meta['source_flags']]
    assert flagged and all(tuple(p.meta['source_flags']) == flags[p.meta['original_id']] for p in flagged)
    assert all(p.meta['original_id'] not in flags for p in recs if not p.meta['source_flags'])
    clean = load_distractmath('msvamp', 'bn', source='local', gold=False, clean=True)
    assert len(clean) == len(recs) - len(flagged) and not any(p.meta['source_flags'] for p in clean)
