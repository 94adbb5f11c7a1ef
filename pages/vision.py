"""Images as tokens: a small Vision Transformer, live on an image the user makes: the image cut into patches, the
patch tokens the encoder reads, the prediction, where [CLS] looks, and what the patch order means to it."""
import streamlit as st

from app import figures
from app import vision_view as vv
from app.text import code, md
from core.variants import vision

view = st.session_state.get("view")
plot = dict(present=bool(view and view.present), dark=bool(view and view.dark))
st.title("Images as tokens (ViT)")
when = vv.stamp()
if when is None:
    st.info(f"No Vision Transformer at {md(vv.FOLDER)}. Train one with "
            "`python -m core.variants.vision --out assets/vision`.")
    st.stop()
model, results = vv.load(str(vv.FOLDER), when)
cfg = model.cfg
P, G, N = cfg.patch, cfg.grid, cfg.n_patches
st.markdown(f"Dosovitskiy et al. (2021): cut an image into patches, flatten each patch into a vector, map it "
            f"linearly to a token, and read the tokens with a standard transformer encoder. Here a "
            f"{cfg.image}×{cfg.image} image becomes {N} patches of {P}×{P} pixels: a sentence of {N} tokens.")

left, right = st.columns([1, 2])
with left:
    shape = st.selectbox("Shape", vision.SHAPES, index=1, key="vit_shape")
    r = st.slider("Size (half-width, pixels)", 2.0, 7.0, 4.0, 0.5, key="vit_size")
    cx = st.slider("Centre: column", 0.0, float(cfg.image - 1), 6.0, 0.5, key="vit_x")
    cy = st.slider("Centre: row", 0.0, float(cfg.image - 1), 9.0, 0.5, key="vit_y")
    noise = st.slider("Noise (standard deviation)", 0.0, 0.6, 0.2, 0.05, key="vit_noise")
    seed = st.slider("Noise seed", 0, 99, 0, key="vit_seed")
seen = vv.look(str(vv.FOLDER), when, shape, cx, cy, r, noise, seed)
image, mask, trace, probs = seen["image"], seen["mask"], seen["trace"], seen["probs"]
right.plotly_chart(vv.patch_figure(image, P, title=f"Your image, cut into {P}×{P} patches", value_name="pixel",
                                   zmax=1.0, **plot), key="vit_image")

st.header("1. The patches are the tokens")
patches = trace["embed.patches"][0]  # [N, P²]
c1, c2 = st.columns(2)
c1.plotly_chart(figures.matrix(patches.T, [str(k) for k in range(N)], [str(i) for i in range(P * P)],
                               title=f"The {N} patches, each {P * P} pixels", x_title="patch (token)",
                               y_title="pixel in the patch", value_name="pixel", zmin=0, zmax=1, **plot),
                key="vit_patches")
tokens = ["[CLS]"] + [f"patch {k}" for k in range(N)]
c2.plotly_chart(figures.matrix(trace["embed.out"][0], None, tokens, title="What the encoder reads",
                               x_title=f"dimension (d_model = {cfg.d_model})", y_title="token", value_name="value",
                               diverging=True, **plot), key="vit_tokens")
st.markdown(f"The first chart: each column is one patch, read row by row over the grid (patch k sits at row "
            f"k // {G}, column k % {G}), its {P}×{P} pixels flattened row by row into {P * P} numbers. A linear map "
            f"(the *patch embedding*, a {cfg.d_model}×{P * P} matrix and a bias) turns each into a "
            f"{cfg.d_model}-number token. The second: a learned [CLS] token in front, a learned position embedding "
            f"added to each of the {N + 1}: this is the whole input of the encoder — the same pre-LN layers, "
            f"multi-head attention and feed-forward blocks as the lab's text models ({cfg.layers} layers, "
            f"{cfg.heads} heads).")

st.header("2. What the model says")
best = int(probs.argmax())
st.plotly_chart(figures.bars(probs.tolist(), list(vision.SHAPES), title="Predicted shape: probability",
                             x_title="shape", y_title="probability", highlight=best, **plot), key="vit_probs")
verdict = "right" if vision.SHAPES[best] == shape else "wrong"
st.markdown(f"The classifier reads only [CLS]'s output after the last layer. It says **{md(vision.SHAPES[best])}** "
            f"with probability {float(probs[best]):.3f}; you drew a {md(shape)}, so it is {verdict}.")

st.header("3. Where [CLS] looks")
c1, c2 = st.columns(2)
layer = c1.selectbox("Layer", range(cfg.layers), index=cfg.layers - 1, key="vit_layer")
head = c2.selectbox("Head", [None, *range(cfg.heads)], key="vit_head",
                    format_func=lambda h: "mean of the heads" if h is None else f"head {h}")
att = vision.cls_attention(trace, layer, head)  # [G, G]
roll = vision.cls_rollout(trace, cfg.layers)
who = "mean of the heads" if head is None else f"head {head}"
a1, a2 = st.columns(2)
a1.plotly_chart(vv.patch_figure(vv.spread(att, P), P, title=f"[CLS] → patches, layer {layer}, {who}",
                                value_name="attention", outline=mask, **plot), key="vit_cls")
a2.plotly_chart(vv.patch_figure(vv.spread(roll, P), P, title="[CLS] → patches, rollout of all layers",
                                value_name="rollout", outline=mask, **plot), key="vit_rollout")
share = vision.shape_share(mask, P)
on = share > 0
n_on = int(on.sum())
self_w = 1 - float(att.sum())
if n_on == 0:
    told = "Your shape is off the image: no patch holds any of it."
else:
    told = (f"{n_on} of the {N} patches hold part of your shape (outlined in red), {n_on / N:.0%} of them. In "
            f"layer {layer} ({who}) [CLS] gives them {float(att[on].sum()):.0%} of its attention, the other "
            f"patches {float(att[~on].sum()):.0%} and itself {self_w:.0%}. Rolled out through all "
            f"{cfg.layers} layers (Abnar & Zuidema 2020: each layer's heads averaged, plus the residual path, "
            f"multiplied), {float(roll[on].sum()):.0%} of what [CLS] holds comes from the shape's patches, "
            f"{float(roll[~on].sum()):.0%} from the others and {1 - float(roll.sum()):.0%} from itself.")
st.markdown(told)
st.caption("Each patch is coloured by the weight [CLS] puts on it, the same on all its pixels; hover for the "
           "exact value. Attention is where the model reads from, not proof of what it uses.")

st.header("4. Shuffle the patches")
st.markdown("Nothing in the encoder knows the tokens come from a grid: attention treats its inputs as a set. Only "
            "the position embeddings say where each patch was. Without them the model sees a *bag of patches*, "
            "and any reordering of the same patches must give the same answer.")
order_seed = st.slider("Shuffle order (seed)", 0, 99, 1, key="vit_order")
mixed = vv.shuffled(str(vv.FOLDER), when, shape, cx, cy, r, noise, seed, order_seed)
s1, s2 = st.columns(2)
s1.plotly_chart(vv.patch_figure(mixed["jigsaw"], P, title="The same patches, shuffled", value_name="pixel", zmax=1.0,
                                **plot), key="vit_jigsaw")
runs = mixed["runs"]
s2.dataframe([{"run": k, "prediction": vision.SHAPES[int(v.argmax())], "probability": round(float(v.max()), 4)}
              for k, v in runs.items()], hide_index=True, key="vit_runs_table")
st.plotly_chart(figures.grouped_bars({k: v.tolist() for k, v in runs.items()}, list(vision.SHAPES),
                                     title="Prediction, four ways", x_title="shape", y_title="probability",
                                     **plot), key="vit_runs")
pick = {k: vision.SHAPES[int(v.argmax())] for k, v in runs.items()}
bag = float((runs["your image, positions zeroed"] - runs["shuffled, positions zeroed"]).abs().max())
moved = float((runs["your image"] - runs["shuffled"]).abs().max())
same = pick["your image"] == pick["shuffled"]
st.markdown(f"With its position embeddings the model reads your image as **{md(pick['your image'])}** and the "
            f"jigsaw as **{md(pick['shuffled'])}**" + (" too" if same else "") + f" (the largest change of a "
            f"probability is {moved:.3f}). With them zeroed it says **{md(pick['your image, positions zeroed'])}** "
            f"and **{md(pick['shuffled, positions zeroed'])}**: the two sets of probabilities differ by at most "
            f"{bag:.1e}" + (", float rounding. Without positions the order of the patches is invisible."
                          if bag < 1e-4 else "."))
acc = vv.accuracy_without_positions(str(vv.FOLDER), when)
drop = acc["with"] - acc["without"]
st.markdown(f"How much does this model need to know where a patch was? On {acc['images']} held-out images it is "
            f"right {acc['with']:.1%} of the time as trained, {acc['without']:.1%} with its position embeddings "
            "zeroed: " + ("it leans on them." if drop > 0.05 else
                          "it hardly needs them. These shapes differ in what their patches hold (a disk's curved "
                          "rim, a cross's straight arms, a triangle's slanted edges), so the bag of patches alone "
                          "names the shape almost every time; a task where the arrangement matters would need "
                          "the positions."))
st.caption(f"Model: {code(results.get('command', '?'))} — {results['params']:,} parameters, {cfg.steps} steps of "
           f"{cfg.batch_size} fresh images, {results['seconds']} s on CPU; held-out accuracy "
           f"{results['accuracy']:.1%} on {results['eval_images']} images it never saw.")

st.header("5. Axial attention: rows, then columns")
st.markdown("Full attention scores every patch against every patch: n² pairs for n patches. *Axial* attention (Ho "
            "et al. 2019) cuts the grid along its two axes: a row pass, where each patch attends only within its "
            "grid row, then a column pass within its grid column. Video models cut along time and space the same "
            "way (TimeSformer's *divided* attention); Stärk's transformer survey says spatio-temporal data is "
            "handled well by two such attentions, one per dimension. Here both passes reuse one trained layer of "
            "this ViT on your image: its own queries and keys, each softmax kept to a row or a column. The model "
            "was trained with full attention, so this measures how close a row-then-column pass comes to what the "
            "layer does, not how well a trained axial model works.")
x1, x2, x3 = st.columns(3)
spot = x1.selectbox("Patch", range(N), index=(G // 2) * G + G // 4, key="vit_axial_patch",
                    format_func=lambda k: f"patch {k} (row {k // G}, column {k % G})")
ax_layer = x2.selectbox("Layer", range(cfg.layers), index=0, key="vit_axial_layer")
ax_head = x3.selectbox("Head", [None, *range(cfg.heads)], key="vit_axial_head",
                       format_func=lambda h: "mean of the heads" if h is None else f"head {h}")
maps = vision.axial_maps(trace, ax_layer)
seen_ax = vision.axial_view(maps, spot, ax_head)
top = vision.agreement(seen_ax["full"], seen_ax["composed"], G)
every = vision.agreement_over_patches(maps, ax_head)
box = vv.patch_box(spot, G, cfg.image)
ax_who = "mean of the heads" if ax_head is None else f"head {ax_head}"
# each title fits two lines of a half-width chart on a projector (app.theme.TITLE_CHARS): the detail is in the text
titles = {"full": f"Full attention, patch {spot} (layer {ax_layer}, {ax_who.replace('mean of the', 'mean of')})",
          "rows": "Step 1, rows: each patch reads its row",
          "column": f"Step 2, column: patch {spot} reads its column",
          "composed": f"Rows, then column: patch {spot}'s reach"}
for pair in (("full", "composed"), ("rows", "column")):
    cols = st.columns(2)
    zmax = max(float(seen_ax[name].max()) for name in pair)  # one colour scale for the two maps side by side
    for col, name in zip(cols, pair):
        col.plotly_chart(vv.patch_figure(vv.spread(seen_ax[name], P), P, title=titles[name],
                                         value_name="attention", outline=box, zmax=zmax, **plot),
                         key=f"vit_axial_{name}")
lowest = float(seen_ax["composed"].min())
verdict = ("closer to full attention than an even spread is" if top["tv"] < top["uniform_tv"]
           else "no closer to full attention than an even spread is")
st.markdown(f"Patch {spot} is outlined in red. In full attention it gives [CLS] {seen_ax['cls']:.0%} of its weight; "
            f"the first map shows the rest, scaled to sum to 1. Step 1 lets each patch read only its row; step 2 lets "
            f"patch {spot} read only its column, which now carries those rows. The product reaches all {N} patches "
            f"(the smallest weight is {lowest:.4f}), scoring {G + G} pairs per patch instead of {N}. Its total "
            f"variation distance from full attention is {top['tv']:.2f} (0: the same map, 1: nothing in common); an "
            f"even spread over the patches would be {top['uniform_tv']:.2f}, so here the two-step map is {verdict}. "
            f"{int(top['overlap'] * top['top'])} of full attention's {top['top']} strongest patches are among the "
            f"two-step map's {top['top']} strongest. Over all {N} patches as the query the mean distance is "
            f"{every['tv']:.2f} (even spread: {every['uniform_tv']:.2f}), closer than an even spread for "
            f"{every['closer']} of {N}. A product of a row map and a column map cannot copy every pattern.")
pairs = vv.pair_table(cfg)
st.dataframe(pairs, hide_index=True, key="vit_axial_pairs",  # full width: at 1280 px a narrower column hid two
             column_config={k: st.column_config.NumberColumn(format="localized")  # 16,777,216, not 16777216
                            for k, v in pairs[0].items() if isinstance(v, int)})
here, big = pairs[0], max(pairs, key=lambda row: row["times fewer"])
st.markdown(f"Pairs scored by one attention layer, [CLS] left out. Full attention grows as n², the two axial "
             f"passes as n·(rows + columns). On this model's {here['grid']} grid that is "
             f"{here['axial: n·(rows + columns)']:,} pairs instead of {here['full: n²']:,}, only "
             f"{here['times fewer']:g} times fewer; the saving grows with the grid, to {big['times fewer']:g} times "
             f"on a {big['grid']} grid.")
ax = vv.axial_probs(str(vv.FOLDER), when, shape, cx, cy, r, noise, seed, ax_layer)
ax_told = "; ".join(f"{what}, **{md(vision.SHAPES[int(p.argmax())])}** (probability {float(p.max()):.3f})"
                    for what, p in ((f"with layer {ax_layer} switched", ax["layer"]),
                                    ("with all layers switched", ax["all"]), ("as trained", probs)))
st.markdown(f"Switch the model itself to row-then-column attention: each patch's output becomes the two-step map "
            f"applied to the layer's values (patches no longer read [CLS]; [CLS] keeps its full attention). On "
            f"your image it says: {ax_told}." + (f" Switching layer {ax_layer} alone changes nothing: it is the last "
                                                 "layer, where only [CLS]'s output goes on to the classifier, and "
                                                 "[CLS] keeps its full attention." if ax_layer == cfg.layers - 1
                                                 else ""))
if st.toggle("Score 1000 held-out images this way", False, key="vit_axial_score"):
    acc_ax = vv.axial_accuracy(str(vv.FOLDER), when, ax_layer)
    st.markdown(f"On {acc_ax['images']} held-out images: {acc_ax['full']:.1%} right as trained, "
                f"{acc_ax['layer']:.1%} with layer {ax_layer} switched, {acc_ax['all']:.1%} with all layers "
                "switched. The model never trained this way. As section 4 showed, these shapes can be named "
                "from a bag of patches, so this task says little about what axial attention loses where the "
                "arrangement matters.")
