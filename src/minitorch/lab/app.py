"""The Tensor Ops Lab page (Streamlit). Start it with ``minitorch lab``.

The page only draws: the expressions, the passes, the finite-difference check and the
in-place error demo live in :mod:`minitorch.lab.core`. Every result is stored with the
inputs it was computed from (expression, backend, slider values), so moving a slider or
changing a choice clears a stale graph instead of showing it next to new numbers.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import streamlit as st

from minitorch.lab import core

RESULT = "lab_result"  # session-state key: {"inputs": ..., "kind": ..., "result": ...}


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


def _show_nodes(res: core.LabResult) -> None:
    rows = [
        {
            "tensor": n.name,
            "kind": n.kind,
            "op": n.op or "—",
            "value": _fmt(n.value),
            "grad": "—" if n.grad is None else _fmt(n.grad),
        }
        for n in res.nodes
    ]
    _table(rows)


def _show_forward(res: core.LabResult) -> None:
    st.subheader("Forward pass" if not res.backward_done else "Forward and backward pass")
    st.markdown(
        f"Output = **{res.output:.6g}**, computed on `{res.backend}` ({res.dtype}). "
        "Leaves (the inputs) are the blue boxes, the output is green; a box's |grad| is the "
        "norm of its gradient, the table lists the values."
    )
    left, right = st.columns(2)
    with left:
        st.graphviz_chart(res.dot)
    with right:
        _show_nodes(res)
    if res.backward_done:
        st.subheader("Gradient check")
        st.markdown(
            "Each leaf's gradient from `backward()` next to a central finite difference "
            "(f(x+h) − f(x−h)) / 2h."
        )
        _table(
            [
                {
                    "d output / d": r.label,
                    "autograd": f"{r.autograd:.10g}",
                    "finite difference": f"{r.finite_diff:.10g}",
                    "difference": f"{r.abs_err:.2e}",
                }
                for r in res.checks
            ]
        )
        tol = 1e-6 if res.dtype == "float64" else 1e-2
        if res.max_abs_err <= tol:
            st.success(
                f"Gradients match finite differences (max |difference| {res.max_abs_err:.1e})."
            )
        else:
            st.warning(f"Largest |difference| {res.max_abs_err:.1e} (above {tol:g}).")


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
                "d output / d": r.label,
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
    inputs = (
        expr.key,
        backend,
        tuple((k, tuple(v)) for k, v in values.items()),
        tuple(sorted(options.items())),
    )

    state = st.session_state.get(RESULT)
    if state is not None and state["inputs"] != inputs:
        del st.session_state[RESULT]  # the inputs moved: the graph is stale
        state = None
        st.info("The inputs changed, so the old graph was cleared. Run the forward pass again.")

    cols = st.columns(3)
    clicked = None
    if cols[0].button("Run forward pass", key="forward", type="primary"):
        clicked = "forward"
    if cols[1].button("Run backward pass", key="backward"):
        clicked = "backward"
    if cols[2].button("Simulate error", key="simulate"):
        clicked = "error"

    if clicked is not None:
        try:
            if clicked == "error":
                result: Any = core.simulate_error(expr.key, values, backend, options=options)
            else:
                result = core.run(
                    expr.key, values, backend, backward=clicked == "backward", options=options
                )
        except Exception as exc:  # show it, never crash the page
            st.error(f"{clicked} on backend {backend!r} failed: {type(exc).__name__}: {exc}")
            st.session_state.pop(RESULT, None)
            return
        state = st.session_state[RESULT] = {"inputs": inputs, "kind": clicked, "result": result}

    if state is None:
        st.markdown(
            "Set the inputs in the sidebar, then **Run forward pass** to draw the graph, "
            "**Run backward pass** to fill in the gradients, or **Simulate error** to see "
            "what an in-place change after the forward pass does."
        )
    elif state["kind"] == "error":
        _show_error(state["result"])
    else:
        _show_forward(state["result"])


if __name__ == "__main__":
    page()
