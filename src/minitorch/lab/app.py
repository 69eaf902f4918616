"""The Tensor Ops Lab page (Streamlit). Start it with ``minitorch lab``.

The page only draws: the expressions, the passes, the chain rule, the step-by-step
backward pass, the finite-difference check and the in-place error demo live in
:mod:`minitorch.lab.core`. The buttons choose a view; what the view shows is computed
again from the current inputs on every rerun, so moving a slider updates the graph and
every number at once (the step-by-step view keeps its step).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import streamlit as st

from minitorch.lab import core

MODE = "lab_mode"  # session-state key: the view shown, a key of VIEWS
STEP = "lab_step"  # session-state key: how many backward steps the step-by-step view has done
STEP_FOR = "lab_step_for"  # session-state key: the (expression, options) those steps are of
VIEWS = {
    "forward": "Forward pass",
    "backward": "Backward pass",
    "steps": "Backward step by step",
    "simulate": "Simulate error",
}


def _fmt(v: Any) -> str:
    a = np.asarray(v, dtype=np.float64)
    if a.ndim == 0:
        return f"{float(a):.6g}"
    return "[" + ", ".join(f"{float(x):.6g}" for x in a.reshape(-1)) + "]"


def _cell(text: str) -> str:
    for ch in "\\|*_`[]<>":
        text = text.replace(ch, "\\" + ch)
    return text


def _table(rows: list[dict[str, str]]) -> None:
    """A small table as Markdown (plain HTML in the page: selectable, searchable)."""
    head = list(rows[0])
    lines = ["| " + " | ".join(_cell(h) for h in head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_cell(r[h]) for h in head) + " |" for r in rows]
    st.markdown("\n".join(lines))


def _sidebar() -> tuple[core.Expression, str, dict[str, list[float]], dict[str, Any]]:
    st.sidebar.header("Inputs")
    key = st.sidebar.selectbox(
        "Expression",
        list(core.EXPRESSIONS),
        format_func=lambda k: core.EXPRESSIONS[k].title,
        key="expr",
    )
    expr = core.EXPRESSIONS[key]
    choices = core.backend_choices()
    backend = st.sidebar.selectbox("Backend", choices, key="backend")
    options: dict[str, Any] = {}
    for name, allowed in expr.options.items():
        options[name] = st.sidebar.selectbox(name, list(allowed), key=f"{key}.{name}")
    values: dict[str, list[float]] = {}
    for spec in expr.inputs:
        vals = []
        for label, default in zip(spec.labels, spec.default, strict=True):
            vals.append(
                st.sidebar.slider(
                    label,
                    -3.0,
                    3.0,
                    float(default),
                    0.05,
                    key=f"{key}.{label}",
                    help=spec.help or None,
                )
            )
        values[spec.name] = vals
    return expr, backend, values, options


# ---------------------------------------------------------------------------- callbacks
def _show_view(mode: str) -> None:
    st.session_state[MODE] = mode
    if mode == "steps":  # start the walk from the beginning
        st.session_state[STEP] = 0


def _next_step(n: int) -> None:
    st.session_state[STEP] = min(int(st.session_state.get(STEP, 0)) + 1, n)


def _reset_steps() -> None:
    st.session_state[STEP] = 0


# ---------------------------------------------------------------------------- views
GRAPH_LEGEND = (
    "Leaves (the inputs) are the blue boxes, the output L is green. A box shows its "
    "gradient once backward has reached it: the signed value for a number, the norm "
    "(labelled) for a vector; the tables list every value with its sign. Each arrow is "
    "labelled with its **local derivative** ∂ (how the op's output moves with that "
    "input), known as soon as the forward pass has run"
)


def _show_nodes(res: core.LabResult) -> None:
    rows = [
        {
            "tensor": n.name,
            "kind": n.kind,
            "computed as": n.expression or "—",
            "value": _fmt(n.value),
            "dL/d(tensor)": "—" if n.grad is None else _fmt(n.grad),
        }
        for n in res.nodes
    ]
    _table(rows)


def _show_forward(res: core.LabResult) -> None:
    st.subheader("Forward pass" if not res.backward_done else "Forward and backward pass")
    out = res.nodes[-1].name
    st.markdown(
        f"Output = **{res.output:.6g}** (L = `{out}`), computed on `{res.backend}` ({res.dtype})."
    )
    left, right = st.columns(2)
    with left:
        st.graphviz_chart(res.dot)
        more = "; after backward also with what flowed back along it, g·∂" * res.backward_done
        st.caption(GRAPH_LEGEND + more + ".")
    with right:
        _show_nodes(res)
        st.markdown("**Local derivatives** (one per arrow, from each op's own VJP rule)")
        _table(
            [
                {
                    "local derivative": d.symbol,
                    "formula": d.formula or "—",
                    "value at these inputs": d.value_text,
                }
                for d in res.locals
            ]
        )
    if not res.backward_done:
        return
    st.subheader("The chain rule")
    st.markdown(
        "Each gradient is the sum, over the ops that used the tensor, of that op's "
        "gradient times its local derivative: dL/dx = Σ dL/dh · ∂h/∂x. Backward computes "
        "them from the output down, so every factor is known when it is needed "
        "(**Backward step by step** shows it one op at a time)."
    )
    st.code("\n".join(c.text for c in res.chain), language=None)
    st.subheader("Gradient check")
    st.markdown(
        "Each leaf's gradient from `backward()` next to a central finite difference "
        "(f(x+h) − f(x−h)) / 2h."
    )
    _table(
        [
            {
                "dL / d": r.label,
                "autograd": f"{r.autograd:.10g}",
                "finite difference": f"{r.finite_diff:.10g}",
                "difference": f"{r.abs_err:.2e}",
            }
            for r in res.checks
        ]
    )
    tol = 1e-6 if res.dtype == "float64" else 1e-2
    if res.max_abs_err <= tol:
        st.success(f"Gradients match finite differences (max |difference| {res.max_abs_err:.1e}).")
    else:
        st.warning(f"Largest |difference| {res.max_abs_err:.1e} (above {tol:g}).")


def _show_steps(walk: core.Walkthrough) -> None:
    n = len(walk.steps)
    p = min(int(st.session_state.get(STEP, 0)), n)
    st.subheader("Backward, step by step")
    st.markdown(
        "Backward visits the ops in topological order: an op once every op that used its "
        "output is done, so the gradient flowing into it is complete. There it multiplies "
        "that gradient by the op's local derivatives (the chain rule) and adds the "
        f"products to the inputs' gradients. L = `{walk.output_name}` = "
        f"**{walk.output:.6g}**, on `{walk.backend}` ({walk.dtype})."
    )
    buttons = st.columns([1, 1, 4])
    buttons[0].button(
        "Next step", key="next", on_click=_next_step, args=(n,), disabled=p >= n, type="primary"
    )
    buttons[1].button("Reset", key="reset", on_click=_reset_steps, disabled=p == 0)
    st.progress(p / n, text=f"Step {p} of {n}")
    left, right = st.columns(2)
    with left:
        st.graphviz_chart(walk.dots[p])
        st.caption(
            "Orange: the op of this step; green: done; grey: still to do. Each arrow "
            "shows its local derivative ∂ and, once its op is done, what flowed back "
            "along it, g·∂. The boxes show the gradients accumulated so far."
        )
    with right:
        if p == 0:
            order = ", ".join(f"`{s.title}`" for s in walk.steps)
            st.markdown(
                f"**Before the first step.** Backward starts from the output with the "
                f"seed dL/dL = 1 (L is `{walk.output_name}`). It will visit: {order}. "
                "Press **Next step**."
            )
        else:
            step = walk.steps[p - 1]
            st.markdown(
                f"**Step {p} of {n}: `{step.title}`** (op `{step.op}`; its VJP rule: `{step.rule}`)"
            )
            st.markdown(
                f"Incoming gradient `{core.grad_symbol(step.name)}` = "
                f"**{core.fmt(step.upstream)}**: complete, since every op that used "
                f"`{step.name}` was done before."
            )
            _table(
                [
                    {
                        "input": c.local.input,
                        "local derivative": c.local.text,
                        "adds g · ∂": c.product + " = " + core.fmt(c.value),
                        "its gradient now": core.fmt(c.total),
                    }
                    for c in step.contributions
                ]
            )
            st.code("\n".join(c.text for c in step.contributions), language=None)
        grads = walk.grads(p)
        names = [*walk.leaves, *(s.name for s in sorted(walk.steps, key=lambda s: s.node_id))]
        st.markdown("**Gradients so far**")
        _table(
            [
                {"tensor": name, "dL/d(tensor)": core.fmt(grads[name]) if name in grads else "—"}
                for name in names
            ]
        )
    if p == n:
        ref = walk.backward_grads
        same = all(np.allclose(grads[k], ref[k], rtol=1e-9, atol=1e-12) for k in walk.leaves)
        summary = ", ".join(f"{core.grad_symbol(k)} = {core.fmt(ref[k])}" for k in walk.leaves)
        if same:
            st.success(
                f"Backward is complete after {n} steps: the sums equal what `backward()` "
                f"computes ({summary})."
            )
        else:  # pragma: no cover - tested in core: the walk is the engine's pass
            st.warning(f"The sums differ from backward()'s gradients ({summary}).")


def _show_error(demo: core.ErrorDemo) -> None:
    st.subheader("Simulated error: an in-place change after the forward pass")
    st.markdown(f"After the forward pass, this code runs ({demo.tamper_why}):")
    st.code(demo.tamper_code, language="python")
    st.markdown("Then `backward()` is called. minitorch refuses:")
    st.error(f"{demo.error_type}: {demo.message}")
    st.markdown(
        "An engine without version counters would read the modified value and return a "
        "gradient without any warning:"
    )
    _table(
        [
            {
                "dL / d": r.label,
                "correct (minitorch)": f"{r.correct:.10g}",
                "naive engine": f"{r.naive:.10g}",
                "naive vs correct": "WRONG" if r.wrong else "same",
            }
            for r in demo.rows
        ]
    )
    if not any(r.wrong for r in demo.rows):
        st.info(
            "With these slider values the modified number happens not to change any "
            "gradient; move a slider and try again. minitorch refuses either way."
        )
    st.graphviz_chart(demo.dot)


def page() -> None:
    """Draw the page once (Streamlit reruns this on every interaction)."""
    st.set_page_config(page_title="minitorch Tensor Ops Lab", layout="wide")
    st.title("minitorch · Tensor Ops Lab")
    expr, backend, values, options = _sidebar()
    st.markdown(f"### `{expr.title}`\n{expr.description}")
    mode = str(st.session_state.setdefault(MODE, "forward"))
    structure = (expr.key, tuple(sorted(options.items())))
    if st.session_state.get(STEP_FOR) != structure:  # another graph: its steps start over
        st.session_state[STEP_FOR] = structure
        st.session_state[STEP] = 0

    cols = st.columns(len(VIEWS))
    for col, (view, label) in zip(cols, VIEWS.items(), strict=True):
        col.button(
            label,
            key=view,
            on_click=_show_view,
            args=(view,),
            type="primary" if view == mode else "secondary",
        )
    st.caption("The view follows the inputs: move a slider and everything is recomputed.")

    try:
        result: Any
        if mode == "simulate":
            result = core.simulate_error(expr.key, values, backend, options=options)
        elif mode == "steps":
            result = core.backward_steps(expr.key, values, backend, options=options)
        else:
            backward = mode == "backward"
            result = core.run(expr.key, values, backend, backward=backward, options=options)
    except Exception as exc:  # show it, never crash the page
        st.error(
            f"{VIEWS.get(mode, mode)} on backend {backend!r} failed: {type(exc).__name__}: {exc}"
        )
        return
    if isinstance(result, core.ErrorDemo):
        _show_error(result)
    elif isinstance(result, core.Walkthrough):
        _show_steps(result)
    else:
        _show_forward(result)


if __name__ == "__main__":
    page()
