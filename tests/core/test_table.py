"""gl.Table: the rows of a measurement, printed, read by column and exported."""

import pytest

import gpulab as gl


def test_rows_with_different_columns_print_blank_cells():
    """A ladder's rows need not share every column (the image lab's filters have a sigma or a
    size): the table shows them all, in first-seen order, blank where a row has none."""
    t = gl.Table([{"op": "gaussian", "sigma": 2.0, "ms": 1.5},
                  {"op": "box", "size": 9, "ms": 0.75}])
    assert t.columns == ["op", "sigma", "ms", "size"]
    lines = repr(t).splitlines()
    assert lines[0].split() == ["op", "sigma", "ms", "size"]
    assert lines[1].split() == ["gaussian", "2", "1.5"]
    assert lines[2].split() == ["box", "0.75", "9"]
    assert t.column("sigma") == [2.0, None]


def test_an_unknown_column_names_the_columns():
    t = gl.Table([{"n": 1}])
    with pytest.raises(KeyError, match="'m': no such column"):
        t.column("m")
    assert gl.Table().column("anything") == []
    assert repr(gl.Table()) == "Table(empty)"
