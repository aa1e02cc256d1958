"Tests for dagger.written: the frames, the committed written problems, their gold graphs, their distance from the evaluation splits."
import json, random, re
from collections import Counter

import pytest

from dagger import graph as G
from dagger import written as W
from dagger.files import read_jsonl
from dagger.gold import label_text, LABEL_WORDS
from dagger.lexicon import templates
from dagger.numbers import to_bangla_digits, to_ascii_digits
from dagger.lexicon import split_sentences
from dagger.teacher import norm_question


@pytest.fixture(scope='module')
def ws():
    return W.load_written()


def test_rebuild_is_byte_identical():
    path = W.written_path()
    rebuilt = ''.join(json.dumps(p.to_dict(), ensure_ascii=False) + '\n' for p in W.make_problems(W.N_WRITTEN, W.SEED))
    assert rebuilt.encode('utf-8') == path.read_bytes()


def test_every_graph_executes_to_the_answer(ws):
    assert len(ws) == W.N_WRITTEN
    for p in ws:
        g = G.parse(W.written_graph(p), strict=True)
        assert G.is_correct(G.execute(g), p.answer), p.id
        assert p.answer >= 0 and p.answer == int(p.answer), p.id
        assert G.parse(W.written_graph(p, label_first=True), strict=True).to_obj() == g.to_obj()


def test_graphs_are_in_the_paper_form(ws):
    ops = {v for k, v in LABEL_WORDS['bn'].items() if k != 'final'}
    for p in ws:
        nodes = p.gold_graph['nodes']
        assert nodes[-1] == dict(id='final_result', op='identity', args=nodes[-1]['args'], distractor=False, label='চূড়ান্ত উত্তর')
        for n in nodes[:-1]:
            if n['op'] == 'const':
                assert list(n) == ['id', 'op', 'val', 'distractor', 'label'] and isinstance(n['val'], int)
            else:
                assert list(n) == ['id', 'op', 'args', 'distractor', 'label'] and n['label'] in ops
        assert len({n['id'] for n in nodes}) == len(nodes)


def test_constant_labels_are_the_problems_words(ws):
    for p in ws:
        q = label_text(p.question)
        for n in p.gold_graph['nodes']:
            if n['op'] == 'const':
                assert n['label'] in q, (p.id, n['label'])
                assert to_bangla_digits(str(n['val'])) in n['label'] or 'দ্বিগুণ' in n['label'], (p.id, n['label'])


def test_distractors_are_flagged_and_unused(ws):
    for p in ws:
        nodes = p.gold_graph['nodes']
        used = {a for n in nodes for a in n.get('args', [])}
        flagged = [n for n in nodes if n['distractor']]
        assert sorted(n['val'] for n in flagged) == sorted(p.meta['distractor_values']), p.id
        assert not any(n['id'] in used for n in flagged), p.id
        assert len(p.added_sentences) == len(p.meta['distractor_frames'])
        assert all(s in p.question and not s.endswith('?') for s in p.added_sentences)
        assert p.meta['steps'] == len(p.meta['ops']) == sum(n['op'] in W.OPS for n in nodes)


def test_counts(ws):
    s = W.summary(ws)
    assert 0.3 <= s['distractor_share'] <= 0.4
    assert set(s['ops']) == set(W.OPS) and set(s['steps']) == {1, 2}
    assert set(s['frames']) == {f.id for f in W.frames('problem')}
    assert set(s['distractor_frames']) == {f.id for f in W.frames('distractor')}


def test_frames_are_not_the_evaluation_templates():
    bn = [t for t in templates() if t.lang == 'bn']
    mine = {W.bare(s) for f in W.frames() for s in f.text.split('|')}
    assert not mine & {W.bare(t.text) for t in bn}
    assert not {f.text for f in W.frames()} & {t.text for t in bn}
    top = W.template_similarity()[0]
    print('closest template:', top)
    assert top[0] < W.NEAR


def test_near_copy_of_a_template_would_be_caught():
    t = next(t for t in templates() if t.id == 'RED-bn-01')
    assert W.bare(t.text.replace('{count}', '{n}').replace('{name_gen}', '{name2_gen}')) == W.bare(t.text)


def test_distractor_sentences_are_not_in_the_plus_d_files(ws):
    plusd = W.plusd_sentences()
    assert len(plusd) > 100
    mine = {norm_question(s) for p in ws for s in p.added_sentences}
    assert mine and not mine & plusd


def test_no_written_problem_copies_an_evaluation_problem(ws):
    ov = W.eval_overlap(ws)
    print('overlap with the evaluation splits:', ov)
    assert ov['eval_questions'] > 1500 and ov['exact'] == 0 and ov['max_overlap'] < W.MAX_OVERLAP


def test_overlap_would_catch_a_copy(ws):
    from dagger.data import load_split
    q = load_split('msvamp_bn', gold=False)[0]
    ov = W.eval_overlap([q])
    assert ov['exact'] == 1 and ov['max_overlap'] == 1.0


def test_review_sample_is_seeded_by_the_file(ws):
    sample = read_jsonl(W.written_path().parent/'review'/'sample_bn.jsonl')
    pick = sorted(random.Random(W.review_seed()).sample(range(len(ws)), 60))
    assert [r['id'] for r in sample] == [ws[i].id for i in pick]
    for r in sample:
        assert r['question'] == ' '.join(s['text'] for s in r['sentences']) and r['gloss']
        assert sum(s['distractor'] for s in r['sentences']) == len(r['distractor_frames'])


def test_errors_name_the_file_and_field(tmp_path):
    row = dict(id='X', kind='problem', classes='food', needs='', topic='count', values='a=count@nowhere', make='',
               graph='add(a,a)', ids='a=x', text='{a}', gloss='{a}')
    with pytest.raises(W.WrittenError, match='written_frames.tsv:9: values'):
        W._frame(row, 'written_frames.tsv:9')
    with pytest.raises(W.WrittenError, match='graph'):
        W._frame(row | dict(values='a=count@item', graph='add(a,b)'), 'f:1')
    with pytest.raises(W.WrittenError, match='no written problems'):
        W.load_written(tmp_path/'none.jsonl')
    (tmp_path/'bad.jsonl').write_text('{"id": "x", "question": "q"}\n', encoding='utf-8')
    with pytest.raises(W.WrittenError, match='bad.jsonl:1'):
        W.load_written(tmp_path/'bad.jsonl')


# What the first blind read failed (data/written/review/v1/report_bn.md), one test per pattern.

PLACES = ('বাস', 'ক্লাস', 'উঠোন', 'স্কুল', 'পাড়া', 'মাঠ', 'বাজার', 'দোকান', 'হাট', 'গাছ', 'দেয়াল', 'বৃষ্টি', 'সাঁতার',
          'খেলা', 'হাতখরচ', 'জন্মদিন', 'দাদু', 'বয়স', 'ঘুমানো')


BOXES = ('বাক্স', 'ব্যাগ', 'ঝুড়ি', 'প্লেট')   # a container the problem itself sets out


def _rest(p, s):
    return p.question.replace(s, ' ')


def test_distractors_are_about_the_problems_own_item_or_place(ws):
    for p in ws:
        for s in p.added_sentences:
            rest = _rest(p, s)
            assert all(w in rest for w in PLACES if w in s), (p.id, s)            # nothing the story never introduced
            assert p.meta['item'] in s or any(w in s and w in rest for w in PLACES + BOXES), (p.id, s)


def test_no_distractor_before_a_sentence_that_points_back(ws):
    newperson = {f.id for f in W.frames('distractor') if 'newperson' in f.needs}
    assert newperson
    for p in ws:
        sents = [s for s in p.question.replace('। ', '।\n').replace('? ', '?\n').split('\n')]
        for fid, pos in zip(p.meta['distractor_frames'], p.meta['distractor_positions']):
            assert sents[pos] in p.added_sentences
            after = [s for s in sents[pos + 1:] if s not in p.added_sentences]
            assert not W.points_back(after[0]), (p.id, after[0])
            if fid in newperson:
                assert not any(W.points_back(s) for s in after), (p.id, sents)
        assert sum(f in newperson for f in p.meta['distractor_frames']) <= 1, p.id


def test_points_back_reads_pronouns_and_there():
    for s in ('দোকানদার তাকে কত টাকা ফেরত দেবে?', 'মিনা সেখান থেকে ৩৫টি পেয়ারা কিনল।', 'এর মধ্যে ১৭টি নষ্ট ছিল।',
              'এতে মিনার মোট কত টাকা খরচ হল?', 'নতুন বছরে আরও ৪ জন সেই ক্লাসে ভর্তি হল।'):
        assert W.points_back(s), s
    for s in ('রাজুর ১২টি আপেল আছে।', 'প্রতিটি দলে কতজন ছাত্র থাকল?', 'সেলিমের কাছে মিনার চেয়ে দ্বিগুণ পিজা আছে।'):
        assert not W.points_back(s), s


def test_spellings_and_wordings(ws):
    import re
    bad = re.compile(r'পাস্ত্রি|(?<!\S)পেচ(?!\S)|গ্রাম ভারী|রিল(?!\S)|ভ্যাকিউম')
    for p in ws:
        assert not bad.search(p.question), p.id
        if 'দ্বিগুণ' in p.question:        # a doubled count, not a doubled pizza
            assert re.search(r'কাছে \S+ চেয়ে দ্বিগুণ \S+', p.question), p.id
        if 'প্রত্যেককে' in p.question:       # four to each, not four painted for each
            assert re.search(r'প্রত্যেককে [০-৯]+টি করে ', p.question), p.id
    assert any('পেস্ট্রি' in p.question for p in ws)


def test_counts_are_plausible_for_the_noun(ws):
    import re
    from dagger.lexicon import lexicon
    from dagger.numbers import to_ascii_digits
    lex = {n.word: n for n in W.nouns()}
    durable = 0
    for p in ws:
        n = lex[p.meta['item']]
        if n.cls not in ('object', 'food'): continue
        cap = W.slot_range('count', n, None).hi
        own = [s for s in re.split(r'(?<=[।?])\s', p.question) if s not in p.added_sentences and 'প্রতিটি' not in s]
        for s in own:
            for v in re.findall(rf'([০-৯]+)টি (?:করে )?{re.escape(n.word)}', s):
                assert int(to_ascii_digits(v)) <= cap, (p.id, s)
        if n.size == 'large' and n.cls == 'object':
            durable += 1
            assert cap <= 8 and p.meta['frame'] not in ('P-addsub-01', 'P-sub-01', 'P-div-01', 'P-subdiv-01', 'P-submul-01', 'P-mul-05', 'P-twiceadd-01')
        for v in re.findall(r'([০-৯]+)টি \S+(?: \S+)? সে খেয়ে|([০-৯]+)টি \S+ খেল', p.question):
            assert int(to_ascii_digits(''.join(v))) <= 8, p.id
        assert 'container' not in n.tags and n.word not in W.SKIP_NOUNS
    assert durable > 0
    assert all(lex[w].size == 'large' for w in ('সাইকেল', 'চেয়ার')) and W.slot_range('count', lex['সাইকেল'], None).hi <= 4
    assert W.slot_range('count', lex['ঘড়ি'], None).hi <= 6


def test_change_is_a_round_note_just_above_the_bill(ws):
    import re
    from dagger.numbers import to_ascii_digits
    n = 0
    for p in ws:
        if p.meta['frame'] != 'P-change-01': continue
        paid = int(to_ascii_digits(re.search(r'দোকানদারকে ([০-৯]+) টাকা দিল', p.question)[1]))
        bill = paid - int(p.answer)
        assert paid == W.note_above(bill), (p.id, bill, paid)
        assert paid in (100, 200, 500, 1000) or (paid > 1000 and paid % 500 == 0 and paid - bill < 500), p.id
        n += 1
    assert n > 50


# What the second blind read failed or flagged (data/written/review/v2/report_bn.md), one test per pattern.

HOLDERS = ('বড় বোনের কাছে', 'মামাতো বোনের কাছে', 'সহপাঠী')


def _last(p):
    return split_sentences(p.question)[-1]


def test_another_holder_only_where_the_question_says_whose(ws):
    from dagger.lexicon import names
    people = {w for n in names('bn') for w in n[:2]}
    holder = {f.id for f in W.frames('distractor') if 'holder' in f.needs}
    assert {'W-D-06', 'W-D-07', 'W-D-17'} <= holder
    unscoped = {f.id for f in W.frames('problem') if not W.asks_owner(f)}
    assert {'P-muladd-01', 'P-subsub-01', 'P-mulsub-01'} <= unscoped
    n = 0
    for p in ws:
        held = [s for s in p.added_sentences if any(h in s for h in HOLDERS)]
        assert len(held) == sum(f in holder for f in p.meta['distractor_frames']), p.id
        if not held: continue
        n += 1
        q = _last(p)
        assert p.meta['frame'] not in unscoped, (p.id, q)
        assert not q.startswith('সব মিলিয়ে মোট') and not re.match(r'^[০-৯]+টি|^কতটি', q), (p.id, q)
        assert any(w in q for w in people) or any(w in q for w in ('বাক্স', 'ব্যাগ', 'ঝুড়ি', 'প্লেট', 'বন্ধু')), (p.id, q)
    assert n > 50


def test_the_unscoped_question_of_the_first_report_gets_no_holder():
    f = next(f for f in W.frames('problem') if f.id == 'P-muladd-01')
    lex = {n.word: n for n in W.nouns()}
    d = W.Draw(('জামাল', 'জামালের', 'Jamal'), ('মিনা', 'মিনার', 'Mina'), lex['টিকিট'], lex['ব্যাগ'], lex['বই'], lex['ঘুড়ি'], lex['হাঁস'], ())
    for t in W.frames('distractor'):
        if 'holder' in t.needs: assert not W.fits_distractor(t, f, d), t.id
    scoped = next(f for f in W.frames('problem') if f.id == 'P-mul-01')
    assert W.asks_owner(scoped) and W.fits_distractor(next(t for t in W.frames('distractor') if t.id == 'W-D-06'), scoped, d)


def test_containers_hold_a_sensible_count(ws):
    lex = {n.word: n for n in W.nouns()}
    bag, plate, box, basket = (lex[w] for w in ('ব্যাগ', 'প্লেট', 'বাক্স', 'ঝুড়ি'))
    assert W.slot_range(W.box_measure('perbox', bag), lex['বোতলের ছিপি'], None).lo >= 10
    assert W.slot_range(W.box_measure('perbox', plate), lex['কাপকেক'], None).hi <= 6
    for b in (bag, box, basket, plate):
        assert W.slot_range(W.box_measure('perbox', b), lex['টিকিট'], None) is None
    assert W.slot_range(W.box_measure('perbox', basket), lex['কুকি'], None) is None
    seen = 0
    for p in ws:
        m = re.search(r'প্রতিটি (বাক্সে|ব্যাগে|ঝুড়িতে|প্লেটে) ([০-৯]+)টি (.+?) (?:আছে|ছিল|ধরে)।', p.question)
        if not m: continue
        seen += 1
        where = {'বাক্সে': box, 'ব্যাগে': bag, 'ঝুড়িতে': basket, 'প্লেটে': plate}[m[1]]
        n = lex[p.meta['item']]
        r = W.slot_range(W.box_measure('perbox', where), n, None)
        assert r is not None and r.lo <= int(to_ascii_digits(m[2])) <= r.hi, (p.id, m[0])
        assert 'টিকিট' not in m[3] and 'টিকেট' not in m[3], p.id
        if m[0].endswith('ধরে।'):
            assert m[1] in ('বাক্সে', 'ঝুড়িতে') and 'free' not in n.tags, (p.id, m[0])
        if m[1] == 'প্লেটে':
            assert int(to_ascii_digits(m[2])) <= 12, (p.id, m[0])
    assert seen > 300


def test_totals_and_other_holdings_stay_small(ws):
    lex = {n.word: n for n in W.nouns()}
    for p in ws:
        n = lex[p.meta['item']]
        tot = W.slot_range('total', n, None)
        if p.meta['topic'] == 'count' and tot:
            assert p.answer <= tot.hi, (p.id, p.answer)
        for s in p.added_sentences:
            if any(h in s for h in HOLDERS):
                v = int(to_ascii_digits(re.search(r'([০-৯]+)টি', s)[1]))
                assert v <= W.slot_range('other_has', n, None).hi, (p.id, s)
                assert n.sg not in ('burger', 'sandwich', 'flatbread', 'pizza', 'cake'), (p.id, s)
    for w, hi in (('অ্যাকশন ফিগার', 30), ('পুতুল', 12), ('বার্গার', 24), ('রুটি', 24)):
        assert W.slot_range('total', lex[w], None).hi <= hi, w
    assert W.slot_range('other_has', lex['বার্গার'], None) is None and W.slot_range('other_has', lex['রুটি'], None) is None


def test_wrapper_and_plural_loans(ws):
    words = {n.word for n in W.nouns()}
    # the standard spelling of the wrapper stays in SPELLING; since the thirteenth read no problem counts wrappers
    assert W.SPELLING['রেপার'] == 'র\u200d্যাপার' and 'রেপার' not in words and 'কুকিজ' not in words and 'কুকি' in words
    for p in ws:
        assert 'রেপার' not in p.question and 'কুকিজ' not in p.question, p.id
        assert not any(w in p.question for w in W.PLURAL_LOANS), p.id          # «একটি কুকিজও» nowhere
    assert any('কুকি' in p.question for p in ws)


def test_spoilt_count_says_all_the_containers(ws):
    n = 0
    for p in ws:
        if p.meta['frame'] != 'P-mulsub-01': continue
        n += 1
        assert 'এর মধ্যে' not in p.question, p.id
        assert re.search(r'সব (বাক্স|ব্যাগ|ঝুড়ি) মিলিয়ে [০-৯]+টি \S+ নষ্ট ছিল।', p.question), p.id
    assert n > 50


def test_no_distractor_frame_dominates(ws):
    s = W.summary(ws)['distractor_frames']
    total = sum(s.values())
    print('distractor frame shares:', sorted(((round(v / total, 3), k) for k, v in s.items()), reverse=True)[:6])
    assert len(s) >= 30 and max(s.values()) / total <= W.MAX_FRAME_SHARE
    lines = Counter(re.sub(r'[০-৯]+', '#', re.sub(r'^\S+', '', s_)) for p in ws for s_ in p.added_sentences)
    assert max(lines.values()) / total <= W.MAX_FRAME_SHARE


# What the third blind read failed (data/written/review/v3/report_bn.md), one test per pattern.

def test_tickets_are_never_bought(ws):
    assert not any(n.word in W.UNBOUGHT for f in W.frames('problem') if 'কিন' in f.text for n in W.items_for(f))
    for p in ws:
        if p.meta['item'] in W.UNBOUGHT:
            assert 'কিন' not in p.question, p.id
    assert any(p.meta['item'] in W.UNBOUGHT for p in ws)       # held, won and given away still


def test_toys_and_trinkets_come_in_boxes_not_bags(ws):
    lex = {n.word: n for n in W.nouns()}
    bag = lex['ব্যাগ']
    for w in ('পুতুল', 'অ্যাকশন ফিগার', 'ঘড়ি', 'নেকলেস', 'টুপি'):
        if w in lex:
            assert W.slot_range(W.box_measure('perbox', bag), lex[w], None) is None, w
    for p in ws:
        if p.meta['item'] == 'পুতুল':
            assert 'ব্যাগে' not in p.question, p.id


def test_a_candle_costs_a_few_taka(ws):
    lex = {n.word: n for n in W.nouns()}
    assert W.slot_range('price', lex['মোমবাতি'], 'bdt').hi <= 20
    n = 0
    for p in ws:
        m = re.search(r'([০-৯]+) টাকা দরে [০-৯]+টি মোমবাতি', p.question)
        if m:
            n += 1
            assert int(to_ascii_digits(m[1])) <= 20, p.id
    assert n > 0


def test_a_classmate_has_not_saved_what_the_hero_bought(ws):
    for p in ws:
        for s in p.added_sentences:
            assert not ('সহপাঠী' in s and 'জমিয়েছে' in s and 'কিন' in p.question), (p.id, s)


def test_refused_more_is_fewer_than_the_giver_has_left(ws):
    n = 0
    for p in ws:
        for f, v in zip(p.meta['distractor_frames'], p.meta['distractor_values']):
            if f == 'W-D-32':
                n += 1
                assert v < p.answer, (p.id, v, p.answer)
    assert n > 10


def test_no_peach_spelt_pich(ws):
    assert not {'পীচ', 'পিচ', 'পেচ'} & {n.word for n in W.nouns()}
    assert not any(re.search(r'(?<!\S)(পীচ|পিচ|পেচ)', p.question) for p in ws)


# What the fourth blind read failed (data/written/review/v4/report_bn.md), one test per pattern.

def test_a_distractor_naming_the_item_follows_the_sentence_that_names_it(ws):
    n = 0
    for p in ws:
        sents = split_sentences(p.question)
        for k, s in enumerate(sents):
            if s in p.added_sentences and p.meta['item'] in s:
                n += 1
                assert any(p.meta['item'] in t for t in sents[:k] if t not in p.added_sentences), (p.id, s)
    assert n > 300


def test_at_most_one_plan_to_buy_more(ws):
    for p in ws:
        assert sum(bool(W.BUYING.search(s)) for s in p.added_sentences) <= 1, p.id


def test_only_fridge_produce_keeps_in_the_fridge(ws):
    lex = {n.word: n for n in W.nouns()}
    for w in ('কুমড়া', 'তরমুজ', 'কাঁঠাল', 'নারকেল', 'আনারস', 'কলা', 'আলু', 'পেঁয়াজ'):
        assert W.slot_range('keeps_days', lex[w], None) is None, w
    for p in ws:
        if 'ফ্রিজে' in ' '.join(p.added_sentences):
            assert W.slot_range('keeps_days', lex[p.meta['item']], None), p.id


def test_spoilt_is_at_most_a_quarter_of_what_was_bought(ws):
    n = 0
    for p in ws:
        if p.meta['frame'] == 'P-mulsub-01':
            n += 1
            spoilt = next(nd['val'] for nd in p.gold_graph['nodes'] if nd['id'].endswith('_spoilt'))
            assert spoilt <= W.SPOILT_SHARE * (p.answer + spoilt), (p.id, spoilt, p.answer)
    assert n > 50


# What the fifth blind read failed (data/written/review/v5/report_bn.md).

def test_no_jewels_light_bags_and_only_perishables_in_the_fridge(ws):
    lex = {n.word: n for n in W.nouns()}
    assert 'রত্ন' not in lex and not any('রত্ন' in p.question for p in ws)
    assert W.slot_range('box_weight', lex['ব্যাগ'], None).hi <= 40
    for w in ('লেবু', 'কিশমিশ', 'চিনাবাদাম'):
        assert W.slot_range('keeps_days', lex[w], None) is None, w


# What the sixth blind read failed (data/written/review/v6/report_bn.md).

def test_a_distractor_naming_a_person_follows_a_sentence_naming_them(ws):
    from dagger.lexicon import names
    people = {n[0] for n in names('bn')}
    n = 0
    for p in ws:
        sents = split_sentences(p.question)
        for k, s in enumerate(sents):
            if s not in p.added_sentences: continue
            for who in (w for w in people if w in s):
                n += 1
                assert any(who in t for t in sents[:k] if t not in p.added_sentences), (p.id, s)
    assert n > 300


# What the seventh blind read failed (data/written/review/v7/report_bn.md): last week's price of the item in a problem
# that asks what was spent is another quantity of the problem, not RED, and its price could be four times today's.

def test_no_price_of_last_week(ws):
    assert not any(f.id == 'W-D-03' or 'আগের সপ্তাহে' in f.text for f in W.frames('distractor'))
    assert not any('আগের সপ্তাহে' in s for p in ws for s in p.added_sentences)


# What the eighth blind read failed (data/written/review/v8/report_bn.md): an offer of 5 posters by a girl who has 4.

def test_no_offer_or_request_beyond_what_the_problem_holds(ws):
    n = 0
    for p in ws:
        held = [nd['val'] for nd in p.gold_graph['nodes'] if nd['op'] == 'const' and not nd['distractor']
                and f"{to_bangla_digits(str(int(nd['val'])))}টি {p.meta['item']}" in nd['label']]   # a count of the item
        for f, v in zip(p.meta['distractor_frames'], p.meta['distractor_values']):
            if f in ('W-D-05', 'W-D-32'):
                n += 1
                assert v < min([p.answer] + held), (p.id, v, held, p.answer)
    assert n > 30


def test_every_constant_has_its_own_label_and_twice_says_so(ws):
    # found while checking the eighth read: a distractor's 2 once lent its words to the 2 of «দ্বিগুণ» (10 problems of v8)
    for p in ws:
        consts = [nd for nd in p.gold_graph['nodes'] if nd['op'] == 'const']
        assert len({nd['label'] for nd in consts}) == len(consts), p.id
        for nd in consts:
            if nd['id'].startswith('twice'):
                assert 'দ্বিগুণ' in nd['label'], (p.id, nd)


# What the ninth blind read failed (data/written/review/v9/report_bn.md).

NINTH_READ_CAPS = {'বার্গার': 10, 'ডোনাট': 16, 'চিত্রকর্ম': 8, 'ললিপপ': 60}

def test_snacks_and_paintings_come_in_handfuls(ws):
    lex, seen = {n.word: n for n in W.nouns()}, Counter()
    for w, cap in NINTH_READ_CAPS.items():
        assert W.slot_range('total', lex[w], None).hi == cap, w
    for p in ws:
        cap = NINTH_READ_CAPS.get(p.meta['item'])
        if cap is None or p.meta['topic'] != 'count': continue
        seen[p.meta['item']] += 1
        counts = [n['val'] for n in p.gold_graph['nodes'] if n['op'] == 'const' and not n['distractor']
                  and re.search(r'[০-৯]+ ?(টি|টা) ' + p.meta['item'], n['label'])]     # counts of the item, not its price
        assert max(counts, default=0) <= cap, (p.id, counts)
        if not re.search('টাকা|দাম', p.question): assert p.answer <= cap, (p.id, p.answer)
    assert len(seen) >= 3, seen


def test_a_sweet_weighs_tens_of_grams(ws):
    lex = {n.word: n for n in W.nouns()}
    r = W.slot_range('weight', lex['মিষ্টি'], None)
    assert (r.lo, r.hi) == (25, 60)
    for p in ws:
        if p.meta['item'] in ('মিষ্টি', 'মিঠাই'):
            for s in p.added_sentences:
                if 'ওজন' in s and 'গ্রাম' in s and 'খালি' not in s:
                    assert all(int(x) >= 25 for x in re.findall(r'\d+', to_ascii_digits(s))), (p.id, s)


# What the tenth blind read failed (data/written/review/v10/report_bn.md).

def test_no_coins_bought_and_a_lap_in_minutes(ws):
    lex = {n.word: n for n in W.nouns()}
    assert W.slot_range('task_time', lex['ল্যাপ'], 'minute').hi <= 3
    for p in ws:
        if p.meta['item'] == 'মুদ্রা': assert not W.BUYING.search(p.question), p.id
        for s in p.added_sentences:
            if 'ল্যাপ' in s and 'মিনিট লাগে' in s:
                assert all(int(x) <= 3 for x in re.findall(r'\d+', to_ascii_digits(s))), (p.id, s)


# What the eleventh blind read failed (data/written/review/v11/report_bn.md).

def test_nothing_sold_by_the_kilo_bought_singly_and_no_seeds_to_buy(ws):
    lex = {n.word: n for n in W.nouns()}
    by_kilo = [w for w, n in lex.items() if W.slot_range('kg_price', n, None)]
    assert {'আলু', 'পেঁয়াজ'} <= set(by_kilo)
    for p in ws:
        assert not any(f'একটি {w}' in p.question for w in by_kilo), p.id
        if p.meta['item'] == 'বীজ':
            assert not any(re.search('কিন(?!্তু)|কেন|দোকানদার', s) for s in p.added_sentences), p.id   # not কিন্তু, but


# What the twelfth blind read failed (data/written/review/v12/report_bn.md).

def test_no_soda_no_bead_weight_and_a_samosa_of_tens_of_grams(ws):
    lex = {n.word: n for n in W.nouns()}
    assert 'সোডা' not in lex and W.slot_range('weight', lex['পুঁতি'], None) is None
    assert W.slot_range('weight', lex['সমুচা'], None).hi <= 50
    for p in ws:
        assert 'সোডা' not in p.question and 'পুঁতির ওজন' not in p.question, p.id


# What the thirteenth blind read failed (data/written/review/v13/report_bn.md).

def test_no_gems_or_wrappers_a_fruit_by_the_dozen_two_or_three_lollipops_and_no_now_in_a_price(ws):
    lex = {n.word: n for n in W.nouns()}
    assert 'মণি' not in lex and 'র‍্যাপার' not in lex
    assert W.slot_range('count', lex['নাশপাতি'], None).hi <= 15
    assert W.slot_range('eat', lex['ললিপপ'], None).hi <= 3
    for p in ws:
        assert 'মণি' not in p.question and 'র‍্যাপার' not in p.question, p.id
        assert not any(s.startswith('এখন') and 'দাম' in s for s in p.added_sentences), p.id
        if p.meta['item'] == 'নাশপাতি':
            counts = [n['val'] for n in p.gold_graph['nodes'] if n['op'] == 'const'
                      and re.search(r'[০-৯]+ ?(টি|টা) নাশপাতি', n['label'])]          # counts of pears, not their price
            assert max(counts, default=0) <= 15, (p.id, counts)
        if p.meta['item'] == 'ললিপপ':
            assert not re.search(r'(?:[৪-৯]|[১-৯][০-৯]+)টি ললিপপ খেল', p.question), p.id
