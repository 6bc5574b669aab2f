"""Re-execute chapter notebooks in place, top to bottom, each in a fresh kernel (`make execute`).

    python scripts/execute_chapters.py                      # every chapters/*.ipynb
    python scripts/execute_chapters.py chapters/05_*.ipynb  # some of them

Deterministic: every chapter seeds its own random numbers, the kernel gets PYTHONHASHSEED=0,
`tinytf.viz.show` writes figure ids that do not depend on the numbers, and consecutive printed chunks are
joined into one output. Running it twice on one machine gives the same notebooks except in the cells that
time something (tagged nbval-ignore-output); on another machine the printed text is the same and figure numbers
agree within the tolerance of tests/nbval_figures.py (that is what `make test` checks, under two
CPU kernel selections).

Each cell has a time limit (--cell-timeout, default 300 s) and each chapter a total one
(--chapter-timeout, default 600 s): an execution that would hang fails with the chapter's name instead.
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def execute(path: Path, cell_timeout: int = 300, chapter_timeout: int = 600) -> float:
    """Execute one notebook in place; returns the wall time in seconds."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=cell_timeout, kernel_name="python3", allow_errors=False,
                            store_widget_state=False, record_timing=False,  # a live panel's state is hundreds of KB and useless offline
                            resources={"metadata": {"path": str(path.parent)}})
    t0 = time.perf_counter()
    error: list = []

    def run():
        try:
            client.execute()
        except BaseException as e:  # reported below, with the chapter's name
            error.append(e)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(chapter_timeout)
    if worker.is_alive():
        raise SystemExit(f"{path.name}: still running after {chapter_timeout} s (a cell hangs)")
    if error:
        raise SystemExit(f"{path.name}: {type(error[0]).__name__}: {error[0]}")
    widgets = 0
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = merge_streams(cell.outputs)
            for out in cell.outputs:
                view = out.get("data", {}).get("application/vnd.jupyter.widget-view+json")
                if view:  # a random id per run; the widget state is not stored, so any stable name will do
                    widgets += 1
                    view["model_id"] = f"{path.stem}-widget-{widgets}"
    nbformat.write(nb, path)
    return time.perf_counter() - t0


def merge_streams(outputs: list) -> list:
    """Join consecutive stdout (or stderr) outputs into one: how the kernel's messages were split into
    chunks depends on timing, and the notebook should not (nbval joins them the same way)."""
    merged = []
    for out in outputs:
        if (merged and out.get("output_type") == "stream" and merged[-1].get("output_type") == "stream"
                and merged[-1].get("name") == out.get("name")):
            merged[-1]["text"] = merged[-1]["text"] + out["text"]
        else:
            merged.append(out)
    return merged


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("notebooks", nargs="*", type=Path, help="default: every chapters/*.ipynb")
    ap.add_argument("--cell-timeout", type=int, default=300)
    ap.add_argument("--chapter-timeout", type=int, default=600)
    args = ap.parse_args(argv)
    os.environ["PYTHONHASHSEED"] = "0"  # inherited by the kernels
    notebooks = args.notebooks or sorted((ROOT / "chapters").glob("*.ipynb"))
    for path in notebooks:
        seconds = execute(path.resolve(), args.cell_timeout, args.chapter_timeout)
        print(f"{path.name}: executed in {seconds:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
