"""The Positional encoding page's "Variants of the formula" section: the ways the seeds write the sinusoidal table
differently from the paper, each computed and checked with the page's own d_model, positions, base and shift."""
from __future__ import annotations

import math

import streamlit as st

from app import figures
from core.positional import wavelengths
from core.probes import positions

LAYOUTS = {"interleaved": "interleaved: sin, cos, sin, cos … (the paper, this app)",
           "halves": "all sines, then all cosines (the lecture slides' figure)"}


def formula_variants(number: int, d_model: int, n_pos: int, base: int, k: int, **P) -> None:
    """Draw the section: the layout radio with its table and dot-product check, the per-dimension formula with its
    rotation check, and the wavelength range for this d_model."""
    st.header(f"{number}. Variants of the formula")
    st.markdown("The seeds write the sinusoidal table in three ways that differ from the paper (Vaswani et al.). "
                f"Each is computed here with section 1's settings (d_model = {d_model}, {n_pos} positions, "
                f"N = {base:,}) and section 3's shift (k = {k}).")

    st.subheader("All sines first, then all cosines")
    st.markdown("The lecture slides show a table split in half: sines on the left, cosines on the right. The paper "
                "interleaves them: sine on even dimensions, cosine on odd ones.")
    layout = st.radio("Layout of the dimensions", list(LAYOUTS), format_func=LAYOUTS.get, horizontal=True,
                      key="pe_layout")
    lc = positions.layout_check(n_pos, d_model, float(base))
    st.plotly_chart(figures.matrix(lc[layout], x_title="dimension", y_title="position", value_name="PE", diverging=True,
                                   title=f"PE, {'sines then cosines' if layout == 'halves' else 'interleaved'}: "
                                         f"{n_pos} positions × {d_model} dimensions", **P), key="pe_layout_table")
    c1, c2 = st.columns(2)
    c1.metric("Largest |difference| of PE(i)·PE(j), the two layouts", f"{lc['gram_diff']:.1e}")
    c2.metric("Largest |difference| of the tables, columns reordered", f"{lc['permutation_diff']:.1e}")
    st.caption("Sines-then-cosines is the paper's table with its columns reordered: dimension 2i moves to i and "
               "2i + 1 to d_model/2 + i. A dot product adds the same products in another order, so every "
               "PE(i)·PE(j) stays the same (measured above). The picture changes; the geometry does not.")

    st.subheader("One frequency per dimension instead of per pair")
    st.markdown("The Stärk survey (appendix A) indexes the frequency by the dimension i, not by the pair:")
    st.latex(r"PE_{(pos,i)}=\sin\!\left(pos/N^{2i/d_{model}}\right)\ (i\text{ even}),\quad"
             r"\cos\!\left(pos/N^{2i/d_{model}}\right)\ (i\text{ odd})")
    if k < 1:
        st.info("With shift k = 0 every check is exact. Pick a shift k of 1 or more in section 3.")
    else:
        ic = positions.indexing_check(n_pos, d_model, k, float(base))
        c1, c2, c3 = st.columns(3)
        c1.metric(f"Paper: largest |R_k·PE(pos) − PE(pos+{k})|", f"{ic['paper']:.1e}")
        c2.metric("Per dimension: the same check", f"{ic['per_dimension']:.2f}")
        c3.metric("Per dimension: best 2×2 map per pair", f"{ic['per_dimension_best']:.2f}",
                  help="For each pair of dimensions (2i, 2i + 1), the 2×2 matrix that best sends every position to "
                       f"the one {k} later (least squares); the largest error left.")
        second = float(base) ** (-2 / d_model)
        st.caption(f"Indexed per dimension, the table differs from the paper's by up to {ic['table_diff']:.2f}. In "
                   "the paper, dimensions 2i and 2i + 1 hold the sine and cosine of one angle, so a shift turns each "
                   f"pair by a fixed angle. Per dimension, the sine of dimension 0 runs at frequency 1 and the cosine "
                   f"of dimension 1 at {second:.4f}: no rotation, and no other 2×2 matrix per pair, shifts every "
                   "position. Section 3's property needs the paper's per-pair indexing.")

    lam = wavelengths(d_model, float(base))
    bound = 2 * math.pi * base
    told = (f"**Wavelengths.** Pair i repeats every λᵢ = 2π·N^(2i/d_model) positions. With d_model = {d_model} and "
            f"N = {base:,} they run from {float(lam[0]):.3f} (2π) to {float(lam[-1]):,.0f} (i = {d_model // 2 - 1}), "
            f"{float(lam[-1]) / bound:.0%} of N·2π = {bound:,.0f}. The paper's “from 2π to 10000·2π” names the bound "
            "that the longest wavelength approaches as d_model grows.")
    if base == 10000:
        told += (f" The CSE 589 paper writes 10000·π = {math.pi * base:,.0f}, half of that bound; the longest "
                 f"wavelength here is {float(lam[-1]) / (math.pi * base):.2f} times its value.")
    st.markdown(told)
