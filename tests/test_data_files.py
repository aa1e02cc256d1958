"The MGSM TSV reader: a malformed row names the file and the 1-based line."
import pickle
import pytest
from dagger import data as D
from dagger.files import DataFileError

def _tsv(tmp_path, text):
    (tmp_path/'mgsm').mkdir(exist_ok=True)
    (tmp_path/'mgsm'/'mgsm_bn.tsv').write_text(text, encoding='utf-8')
    D._mgsm.cache_clear()
    return tmp_path/'mgsm'/'mgsm_bn.tsv'

def test_row_without_tab_names_file_and_line(tmp_path):
    p = _tsv(tmp_path, 'মিনার ৫টি কলম আছে\t5\nএকটি প্রশ্ন ট্যাব ছাড়া 7\n')
    with pytest.raises(D.DataRowError) as e: D._mgsm('bn', tmp_path)
    assert (e.value.path, e.value.line) == (str(p), 2)
    assert str(e.value).startswith(f'{p}, line 2: no tab between question and answer')
    assert isinstance(e.value, D.DataError) and isinstance(e.value, DataFileError)
    assert type(pickle.loads(pickle.dumps(e.value))) is D.DataRowError

def test_bad_answer_names_file_and_line(tmp_path):
    _tsv(tmp_path, 'q1\t5\nq2\t1,000\nq3\tfive\n')
    with pytest.raises(D.DataRowError, match=r"mgsm_bn.tsv, line 3: the answer after the last tab is not a number: 'five'"):
        D._mgsm('bn', tmp_path)
    _tsv(tmp_path, 'q1\t5\n\tnan\n')
    with pytest.raises(D.DataRowError, match='line 2'): D._mgsm('bn', tmp_path)

def test_good_rows_and_blank_lines(tmp_path):
    _tsv(tmp_path, 'q1\t5\n\nq2 has\ta tab\t1,000\n')
    rows = D._mgsm('bn', tmp_path)
    D._mgsm.cache_clear()
    assert [(r.id, r.question, r.answer) for r in rows] == [('mgsm_bn-000', 'q1', 5.0), ('mgsm_bn-001', 'q2 has\ta tab', 1000.0)]
