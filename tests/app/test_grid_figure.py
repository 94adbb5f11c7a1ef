"""The layers × heads overview is one heatmap of tiles: every tile holds its head's weights exactly, blank (NaN)
cells separate the tiles, the axes name layer and head at the tiles' centres, and hover names layer, head, query
and key of every cell."""
import math

import torch

from app import figures


def test_every_tile_is_its_heads_weights_and_the_gaps_are_blank():
    n_l, n_h, tq, tk = 3, 4, 5, 6
    w = torch.rand(n_l, n_h, tq, tk)
    fig = figures.grid(w, list("abcde"), list("uvwxyz"), title="t")
    assert len(fig.data) == 1 and not fig.layout.annotations
    z = fig.data[0].z
    assert z.shape == (n_l * (tq + 1) - 1, n_h * (tk + 1) - 1)
    for l in range(n_l):
        for h in range(n_h):
            tile = torch.as_tensor(z[l * (tq + 1):l * (tq + 1) + tq, h * (tk + 1):h * (tk + 1) + tk])
            assert torch.equal(tile, w[l, h].float()), (l, h)
    gaps = [z[r][c] for r in range(z.shape[0]) for c in range(z.shape[1]) if r % (tq + 1) == tq or c % (tk + 1) == tk]
    assert len(gaps) == z.size - n_l * n_h * tq * tk and all(math.isnan(v) for v in gaps)
    assert list(fig.layout.xaxis.ticktext) == [f"H{h}" for h in range(n_h)]
    assert list(fig.layout.yaxis.ticktext) == [f"L{l}" for l in range(n_l)]
    assert list(fig.layout.xaxis.tickvals) == [h * (tk + 1) + (tk - 1) / 2 for h in range(n_h)]


def test_hover_names_layer_head_query_and_key():
    fig = figures.grid(torch.rand(2, 3, 2, 3), ["<b>", "it"], ["x", "y", "z"])
    cd = fig.data[0].customdata
    r, c = 1 * 3 + 1, 2 * 4 + 2  # layer 1, query 1; head 2, key 2
    assert list(cd[r][c]) == ["layer 1 head 2", "it", "z"]
    assert list(cd[3][0]) == ["layer 1 head 0", "&lt;b&gt;", "x"]  # tokens escaped
    assert list(cd[2][0]) == ["", "", ""] and list(cd[0][3]) == ["", "", ""]  # between tiles


def test_a_matrix_of_counts_is_written_as_integers_and_one_of_reals_with_two_places():
    """QA finding: the span map (radii in tokens) read "11.00"."""
    import torch
    from app import figures as F
    counts = F.matrix(torch.tensor([[11, 3]]), ["a", "b"], ["r"], title="t", x_title="x", y_title="y",
                      show_values=True)
    reals = F.matrix(torch.tensor([[11.0, 0.125]]), ["a", "b"], ["r"], title="t", x_title="x", y_title="y",
                     show_values=True)
    assert list(counts.data[0].text[0]) == ["11", "3"] and list(reals.data[0].text[0]) == ["11.00", "0.12"]
